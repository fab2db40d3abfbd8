"""The Azure target's check families: what only an ND v5 VM on Azure's HPC image must show,
beside the InfiniBand families every InfiniBand target gets (8 ports per node at NDR, their
state, the external SM, NCCL), and the judging the suite's
``fabric/verify/checks/test_azure.py`` asserts on.

- ``azure_sriov``: the declared InfiniBand devices (``mlx5_ib0`` ... ``mlx5_ib7``, as the
  image's ``azure_persistent_rdma_naming`` names them) are SR-IOV virtual functions (``CA
  type: MT4126``, the ConnectX VF), and accelerated networking gave the VM its Ethernet VF
  (an Ethernet-link-layer MT4126 device, ``mlx5_an0`` on the image), both read from ``ibstat``
  (real captures of an Azure A100 VM: tests/fixtures/ibstat__gpud__3.txt).
- ``azure_nccl_topology``: NCCL reads the ND v5 topology file: ``/etc/nccl.conf`` names it
  (``NCCL_TOPO_FILE``, as the image's customizations/ndv5.sh writes it), and the file is
  there and lists one InfiniBand NIC beside each GPU, as many as the size has (Azure/azhpc-images
  topology/ndv5-topo.xml). Without it NCCL guesses the VM's virtual PCI tree.

Found by the family table through the registry, like every target's ``checks`` part
(``FAMILIES``, ``PARAMETERS``, ``SELECT``, ``not_generated``, ``FIXTURES``; see
fabric/targets/aws/checks.py); the suite reads the judging here through
``fabric.verify.families.checks_part("azure_sriov")``. The judging functions are pure over tool
output; output that cannot be read raises :class:`fabric.verify.harness.HarnessError`.
"""

from __future__ import annotations

import xml.etree.ElementTree as ElementTree
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from fabric.parsers.ibstat import IbstatReport
from fabric.targets.azure.catalog import azure_size
from fabric.verify.families.base import Fixture, host_fixture
from fabric.verify.harness_error import HarnessError

if TYPE_CHECKING:
    from fabric.spec import ClusterSpec

#: ``CA type`` of a ConnectX virtual function (PCI device 0x101e, "ConnectX Family mlx5Gen
#: Virtual Function"), what Azure's SR-IOV InfiniBand and accelerated networking give a VM.
VF_CA_TYPE = "MT4126"
#: Where Azure's HPC image keeps NCCL's settings (customizations/ndv5.sh).
NCCL_CONF = "/etc/nccl.conf"
#: PCI classes in an NCCL topology file: a 3D controller (the GPU), an InfiniBand controller.
GPU_CLASS, IB_CLASS = "0x030200", "0x020700"
#: The largest topology file read (Azure's ND v5 file is 38 lines, about 4 KiB).
MAX_TOPOLOGY_BYTES = 1 << 20


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True)


class Ndv5Host(_Frozen):
    """An ND v5 compute VM and what it must show, from the catalog."""

    host: str
    vm_size: str
    gpus: int
    ib_devices: tuple[str, ...]
    topology_file: str

    @property
    def id(self) -> str:
        """Test id: the host."""
        return self.host


def ndv5_hosts(spec: ClusterSpec, hosts: list[str]) -> list[Ndv5Host]:
    """Selected compute VMs of an Azure InfiniBand spec whose size the catalog lists with a
    topology file (fabric/targets/azure/catalog.py)."""
    if spec.azure is None or spec.fabric.kind != "infiniband":
        return []
    out = []
    for host in hosts:
        group = spec.hosts.get(host)
        known = azure_size(group.instance_type or "") if group else None
        if group is None or group.role != "compute" or known is None or not known.nccl_topology:
            continue
        out.append(
            Ndv5Host(
                host=host,
                vm_size=known.name,
                gpus=known.gpus,
                ib_devices=known.ib_devices,
                topology_file=known.nccl_topology,
            )
        )
    return out


#: Check family -> (the checks it holds, the parameter source they run over).
FAMILIES: dict[str, tuple[tuple[str, ...], str]] = {
    "azure_sriov": (("test_azure_ib_vfs", "test_azure_accelerated_networking"), "ndv5_hosts"),
    "azure_nccl_topology": (("test_azure_nccl_topology",), "ndv5_hosts"),
}
#: Parameter source -> its parameters for a spec and the selected hosts.
PARAMETERS: dict[str, Callable[[ClusterSpec, list[str]], list[Any]]] = {"ndv5_hosts": ndv5_hosts}
#: No family runs over part of its source.
SELECT: dict[str, Callable[[Any], bool]] = {}
#: The suite's fixtures over each family's VMs (``test_azure.py``).
FIXTURES: tuple[Fixture, ...] = (
    host_fixture("azure_sriov_host", "azure_sriov"),
    host_fixture("azure_topology_host", "azure_nccl_topology"),
)


def not_generated(spec: ClusterSpec, params: Callable[[str], list[Any]]) -> dict[str, str]:
    """Why the Azure families are not generated (``params``: a parameter source's values)."""
    if spec.azure is None:
        why = f"target {spec.target}: these are Azure VMs' own checks"
    elif spec.fabric.kind != "infiniband":
        why = f"fabric.kind is {spec.fabric.kind}, not infiniband"
    elif not params("ndv5_hosts"):
        why = "no selected compute VM of a size fabric/targets/azure/catalog.py lists"
    else:
        return {}
    return dict.fromkeys(FAMILIES, why)


# --- judging ---------------------------------------------------------------------------------


def vf_problems(report: IbstatReport, devices: tuple[str, ...]) -> list[str]:
    """Each declared InfiniBand device is there, an InfiniBand SR-IOV VF (``ibstat``)."""
    if not report.ok:
        raise HarnessError(f"ibstat failed: {report.reason}")
    found = {d.name: d for d in report.devices}
    problems = []
    missing = [d for d in devices if d not in found]
    if missing:
        problems.append(
            f"no {', '.join(missing)} (ibstat lists {', '.join(sorted(found)) or 'none'}): the"
            " HPC image's azure_persistent_rdma_naming service names the InfiniBand VFs"
            " mlx5_ib0...; check that it ran (systemctl status azure_persistent_rdma_naming)"
        )
    for name in devices:
        device = found.get(name)
        if device is None:
            continue
        if device.type != VF_CA_TYPE:
            problems.append(
                f"{name} is CA type {device.type}, not {VF_CA_TYPE} (a ConnectX virtual"
                " function): Azure gives ND v5 VMs their InfiniBand through SR-IOV"
            )
        layers = {p.link_layer for p in device.ports}
        if layers != {"InfiniBand"}:
            problems.append(f"{name} link layer {', '.join(sorted(layers))}, not InfiniBand")
    return problems


def accelerated_networking_problems(report: IbstatReport) -> list[str]:
    """Accelerated networking gave the VM its Ethernet VF: an Ethernet-link-layer device of
    the VF type (``mlx5_an0`` on the HPC image), which carries eth0's traffic."""
    if not report.ok:
        raise HarnessError(f"ibstat failed: {report.reason}")
    vfs = [
        d.name
        for d in report.devices
        if d.type == VF_CA_TYPE and any(p.link_layer == "Ethernet" for p in d.ports)
    ]
    if vfs:
        return []
    return [
        "no Ethernet VF (CA type MT4126, link layer Ethernet; mlx5_an0 on the HPC image): eth0"
        " runs without accelerated networking; enable it on the scale set's NIC"
        " (enableAcceleratedNetworking)"
    ]


def nccl_conf_problems(text: str, topology_file: str) -> list[str]:
    """``/etc/nccl.conf`` (``KEY=VALUE`` lines) names the ND v5 topology file."""
    values = {}
    for line in text.splitlines():
        key, sep, value = line.strip().partition("=")
        if sep and not key.startswith("#"):
            values[key.strip()] = value.strip()
    got = values.get("NCCL_TOPO_FILE")
    if got == topology_file:
        return []
    return [
        f"{NCCL_CONF} sets NCCL_TOPO_FILE to {got!r}, not {topology_file}: NCCL guesses the"
        " VM's virtual PCI topology; use Azure's HPC image, or set it as its"
        " customizations/ndv5.sh does"
    ]


def topology_problems(xml_text: str, gpus: int) -> list[str]:
    """The NCCL topology file lists ``gpus`` GPUs, each with one InfiniBand NIC under the same
    PCI bridge (as Azure's ndv5-topo.xml does: GPU N and NIC N share a switch)."""
    if len(xml_text.encode()) > MAX_TOPOLOGY_BYTES:
        raise HarnessError(f"the topology file is over {MAX_TOPOLOGY_BYTES} bytes")
    try:
        root = ElementTree.fromstring(xml_text)
    except ElementTree.ParseError as error:
        return [f"the topology file is not XML ({error}): NCCL cannot read it"]
    if root.tag != "system":
        return [f"the topology file's root is <{root.tag}>, not NCCL's <system>"]
    listed = [p.get("class") for p in root.iter("pci")]
    pairs = 0
    for bridge in root.iter("pci"):
        below = [c.get("class") for c in bridge.findall("pci")]
        pairs += min(below.count(GPU_CLASS), below.count(IB_CLASS))
    found = (listed.count(GPU_CLASS), listed.count(IB_CLASS))
    if found == (gpus, gpus) and pairs == gpus:
        return []
    return [
        f"the topology file lists {found[0]} GPUs and {found[1]} InfiniBand NICs, {pairs} of"
        f" them side by side; the size has {gpus} GPUs, each beside its NIC: not the ND v5 file"
    ]
