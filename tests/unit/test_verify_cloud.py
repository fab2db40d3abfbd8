"""The cloud checks' judging (fabric/targets/aws/checks.py, fabric/targets/gcp/checks.py) on captured real output."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from fabric.parsers import PARSERS
from fabric.state import REPO_ROOT
from fabric.targets.aws.checks import (
    EFA_PCI_SCAN,
    efa_device_problems,
    efa_provider_problems,
    placement_group_problems,
)
from fabric.targets.gcp.checks import driver_problems, gpu_nic_addresses, gpu_nic_problems
from fabric.verify.harness import HarnessError

FIXTURES = REPO_ROOT / "tests" / "fixtures"
A3_SUBNETS = ["198.19.0.0/20", "198.19.16.0/20", "198.19.32.0/20", "198.19.48.0/20"]


def _fixture(name: str) -> str:
    return (FIXTURES / name).read_text()


@pytest.mark.parametrize("name", ["fi_info__perfstudy__1.txt", "fi_info__libfabric5689__1.txt"])
def test_fi_info_one_efa_entry_per_device(name: str) -> None:
    report = PARSERS["fi_info"](_fixture(name))
    assert efa_provider_problems(report, 1) == []
    (problem,) = efa_provider_problems(report, 32)
    assert "lists 1 efa FI_EP_RDM entries" in problem and "(32)" in problem


def test_fi_info_layered_provider_is_not_a_device() -> None:
    """efa;ofi_rxd is a layered provider on the same device, not a second device."""
    report = PARSERS["fi_info"](_fixture("fi_info__libfabric5689__1.txt"))
    assert "efa;ofi_rxd" in report.providers
    assert report.efa_rdm_domains == ["efa_0-rdm"]


def _sysfs(root: Path, devices: dict[str, tuple[str, str]]) -> None:
    for address, (vendor, device) in devices.items():
        d = root / "sys/bus/pci/devices" / address
        d.mkdir(parents=True)
        (d / "vendor").write_text(vendor + "\n")
        (d / "device").write_text(device + "\n")


def test_efa_pci_scan_counts_efa_devices_only(tmp_path: Path) -> None:
    """The scan the check runs, run by bash over a sysfs tree: EFA (0x1d0f:0xefa*) counted,
    Amazon's ENA (0x1d0f:0xec20) and an NVIDIA GPU (0x10de) not."""
    _sysfs(
        tmp_path,
        {
            "0000:10:00.0": ("0x1d0f", "0xefa1"),
            "0000:11:00.0": ("0x1d0f", "0xefa1"),
            "0000:00:05.0": ("0x1d0f", "0xec20"),
            "0000:20:00.0": ("0x10de", "0x2330"),
        },
    )
    script = EFA_PCI_SCAN.replace("/sys/", f"{tmp_path}/sys/")
    out = subprocess.run(
        ["bash", "-c", script], capture_output=True, text=True, check=True, timeout=10
    )
    assert out.stdout.split() == ["0000:10:00.0", "0000:11:00.0"]
    assert efa_device_problems(out.stdout.splitlines(), 2) == []
    (problem,) = efa_device_problems(out.stdout.splitlines(), 4)
    assert problem.startswith("2 EFA PCI devices") and "has 4" in problem


def test_placement_group() -> None:
    assert placement_group_problems("efa-p5-pg", "efa-p5-pg") == []
    (problem,) = placement_group_problems("", "efa-p5-pg")
    assert "'(none)'" in problem and "aws.placement_group" in problem


def test_a3_high_gpu_nics_as_declared() -> None:
    nics = gpu_nic_addresses(_fixture("ip_addr_json__a3high_netns__1.json"), A3_SUBNETS)
    assert sorted(nics) == ["enp12s0", "enp134s0", "enp140s0", "enp6s0"]
    assert "enp0s12" not in nics  # the control NIC is in no GPU subnet
    assert gpu_nic_problems(nics, 4, 8244, A3_SUBNETS) == []
    (count,) = gpu_nic_problems(nics, 8, 8244, A3_SUBNETS)
    assert count.startswith("4 NICs") and "has 8 GPU NICs" in count


def test_a3_high_wrong_mtu_and_shared_subnet() -> None:
    nics = gpu_nic_addresses(_fixture("ip_addr_json__a3high_netns__2.json"), A3_SUBNETS)
    problems = gpu_nic_problems(nics, 4, 8244, A3_SUBNETS)
    assert problems == [
        "enp140s0 (198.19.32.3) has MTU 1460, expected 8244 (gcp.gpu_nic_mtu): "
        "the gcp_gpudirect role sets it",
        "enp134s0, enp140s0 share subnet 198.19.32.0/20: each GPU NIC needs its own VPC",
    ]


def test_ip_output_that_is_not_json_is_a_harness_error() -> None:
    with pytest.raises(HarnessError):
        gpu_nic_addresses(_fixture("ethtool_i__siderolabs802__1.txt"), A3_SUBNETS)


def test_gvnic_driver() -> None:
    gve = PARSERS["ethtool_i"](_fixture("ethtool_i__siderolabs802__1.txt"))
    assert driver_problems("eth0", gve, "gve") == []
    i40e = PARSERS["ethtool_i"](_fixture("ethtool_i__openshiftchecks22__1.txt"))
    (problem,) = driver_problems("ens3f0", i40e, "gve")
    assert "'i40e'" in problem and "GVNIC" in problem


# --- GPUDirect RDMA over EFA: any of the three paths -------------------------------------
# The probe's output is railyard's own (GPUDIRECT_PROBE: `echo name rc` and `uname -r`), not a
# tool's: these lines are what that script prints for each case.


@pytest.mark.parametrize(
    ("probe", "paths"),
    [
        (
            "efa_nv_peermem 1\nnvidia_peermem 1\nopen_module 0\nkernel 6.8.0-1021-aws",
            ["dma-buf"],
        ),
        (
            "efa_nv_peermem 0\nnvidia_peermem 1\nopen_module 1\nkernel 6.8.0-1021-aws",
            ["efa_nv_peermem"],
        ),
        (
            "efa_nv_peermem 1\nnvidia_peermem 0\nopen_module 1\nkernel 5.10.0-1-aws",
            ["nvidia_peermem"],
        ),
        ("efa_nv_peermem 1\nnvidia_peermem 1\nopen_module 0\nkernel 5.10.228-219.884.amzn2", []),
    ],
    ids=["dma-buf", "efa_nv_peermem", "nvidia_peermem", "open-module-on-an-old-kernel"],
)
def test_gpudirect_paths(probe: str, paths: list[str]) -> None:
    from fabric.targets.aws.checks import gpudirect_paths, gpudirect_problems

    assert gpudirect_paths(probe) == paths
    problems = gpudirect_problems(paths)
    assert bool(problems) is (not paths)
    if problems:
        assert "no GPUDirect RDMA path" in problems[0]


def test_gpudirect_probe_without_its_lines_is_a_harness_error() -> None:
    from fabric.targets.aws.checks import gpudirect_paths
    from fabric.verify.harness import HarnessError

    with pytest.raises(HarnessError, match="no kernel/open_module line"):
        gpudirect_paths("bash: uname: command not found")
