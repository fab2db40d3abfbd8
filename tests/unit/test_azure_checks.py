"""The Azure target's own check families (fabric/targets/azure/checks.py): their parameters
from the example, and their judging on real output: ``ibstat`` of an Azure VM with SR-IOV
InfiniBand and accelerated networking, Azure's ND v5 NCCL topology file and nccl.conf as the
HPC image ships them (tests/fixtures/SOURCES.md)."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from fabric.parsers import PARSERS
from fabric.spec import ClusterSpec
from fabric.state import REPO_ROOT
from fabric.targets.azure import checks
from fabric.targets.azure.catalog import NDV5_TOPOLOGY
from fabric.verify.harness import HarnessError

FIXTURES = REPO_ROOT / "tests" / "fixtures"
EXAMPLE = REPO_ROOT / "Pulumi.azure-ndv5.example.yaml"
#: An Azure A100 VM: mlx5_0 the accelerated-networking Ethernet VF, mlx5_1..8 InfiniBand VFs.
AZURE_VM = PARSERS["ibstat"]((FIXTURES / "ibstat__gpud__3.txt").read_text())
#: A bare-metal H100 node: ConnectX-7 physical functions and a BlueField-3 Ethernet bond.
BARE_METAL = PARSERS["ibstat"]((FIXTURES / "ibstat__gpud__1.txt").read_text())
IB_VFS = tuple(f"mlx5_{n}" for n in range(1, 9))


def _spec(**changes: Any) -> ClusterSpec:
    data = yaml.safe_load(EXAMPLE.read_text())["config"]["railyard:cluster"]
    data.update(changes)
    return ClusterSpec.model_validate(data)


def test_every_nd_v5_compute_vm_is_a_parameter() -> None:
    spec = _spec()
    hosts = checks.ndv5_hosts(spec, list(spec.hosts))
    assert [h.host for h in hosts] == ["gpu01", "gpu02", "gpu03", "gpu04"]
    assert hosts[0].ib_devices == tuple(f"mlx5_ib{n}" for n in range(8))
    assert (hosts[0].gpus, hosts[0].topology_file) == (8, NDV5_TOPOLOGY)
    assert checks.not_generated(spec, lambda _: hosts) == {}


def test_not_generated_says_why() -> None:
    spec = _spec()
    why = checks.not_generated(spec, lambda _: [])
    assert set(why) == set(checks.FAMILIES)
    assert "no selected compute VM" in why["azure_sriov"]
    lab = ClusterSpec.model_validate(
        yaml.safe_load((REPO_ROOT / "tests/unit/specs/valid/lab.yaml").read_text())
    )
    assert checks.ndv5_hosts(lab, list(lab.hosts)) == []
    assert "Azure VMs' own checks" in checks.not_generated(lab, lambda _: [])["azure_sriov"]


def test_azure_infiniband_ports_are_sr_iov_vfs() -> None:
    assert checks.vf_problems(AZURE_VM, IB_VFS) == []


def test_physical_functions_and_missing_devices_are_named() -> None:
    pfs = tuple(d.name for d in BARE_METAL.devices if d.name != "mlx5_bond_0")
    problems = checks.vf_problems(BARE_METAL, pfs)
    assert problems and all("not MT4126" in p for p in problems)
    assert len(problems) == len(pfs)
    (missing,) = checks.vf_problems(AZURE_VM, ("mlx5_ib0", "mlx5_1"))
    assert missing.startswith("no mlx5_ib0 (ibstat lists mlx5_0, mlx5_1")
    assert "azure_persistent_rdma_naming" in missing
    (ethernet,) = checks.vf_problems(AZURE_VM, ("mlx5_0",))
    assert ethernet == "mlx5_0 link layer Ethernet, not InfiniBand"


def test_accelerated_networking_is_the_ethernet_vf() -> None:
    assert checks.accelerated_networking_problems(AZURE_VM) == []
    (problem,) = checks.accelerated_networking_problems(BARE_METAL)
    assert "enableAcceleratedNetworking" in problem


def test_a_failed_ibstat_is_a_harness_error() -> None:
    failed = AZURE_VM.model_copy(update={"ok": False, "reason": "panic"})
    with pytest.raises(HarnessError, match="ibstat failed: panic"):
        checks.vf_problems(failed, IB_VFS)
    with pytest.raises(HarnessError):
        checks.accelerated_networking_problems(failed)


def test_nccl_conf_names_the_topology_file() -> None:
    text = (FIXTURES / "azure_nccl_conf__azhpcimages__1.txt").read_text()
    assert checks.nccl_conf_problems(text, NDV5_TOPOLOGY) == []
    (problem,) = checks.nccl_conf_problems("", NDV5_TOPOLOGY)
    assert "NCCL_TOPO_FILE to None" in problem


def test_the_nd_v5_topology_file_pairs_each_gpu_with_its_nic() -> None:
    text = (FIXTURES / "azure_ndv5_topo__azhpcimages__1.xml").read_text()
    assert checks.topology_problems(text, 8) == []
    (problem,) = checks.topology_problems(text, 4)
    assert "lists 8 GPUs and 8 InfiniBand NICs, 8 of them side by side" in problem


def test_another_sizes_topology_file_is_refused() -> None:
    """NC A100 v4's file: GPUs, no InfiniBand NIC."""
    text = (FIXTURES / "azure_ncv4_topo__azhpcimages__1.xml").read_text()
    (problem,) = checks.topology_problems(text, 8)
    assert "lists 4 GPUs and 0 InfiniBand NICs" in problem
    (problem,) = checks.topology_problems("<html>", 8)
    assert "not XML" in problem
