"""GPU node acceptance, listed after the GPU families: ``gpu_pcie`` (each GPU's and declared
HCA's PCIe link), ``gpu_clocks`` (no hardware clock slowdown; persistence mode), ``gpudirect_pcie``
(ACS off on the PCIe bridges, the IOMMU in passthrough or off), ``hca_firmware`` (each HCA at
its declared minimum), ``dcgm_diag`` (``dcgmi diag -r 1`` where DCGM is installed) and
``fabric_manager`` (NVSwitch nodes: the manager running at the driver's version, every GPU's
fabric registration done). The judging is ``fabric.verify.health_gpu``'s, which
``railyard-health`` runs on the node too; the parameters come from ``fabric.model.gpus``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fabric.model.gpus import FirmwareMinimum, firmware_minimums, nvswitch_hosts
from fabric.verify.families.base import Family, Fixture, Source

if TYPE_CHECKING:
    from fabric.verify.plan import CheckPlan

#: Where ``check --plan`` lists these families: after the GPU families (900).
ORDER = 910


def _no_gpu(plan: CheckPlan) -> str | None:
    """Why no GPU node family is generated: the lab's nodes have no GPU; no GPU host."""
    if plan.simulated:
        return "no GPU: target lab (nvidia-smi, lspci of a GPU and dcgmi need one)"
    if not plan.gpu_hosts:
        return "no GPU: no selected host declares gpus (nodes[].gpus or a GPU instance type)"
    return None


def _gpudirect_pcie_why(plan: CheckPlan) -> str | None:
    kind = plan.spec.fabric.kind
    if reason := _no_gpu(plan):
        return reason
    if kind not in ("infiniband", "roce"):
        return (
            f"fabric.kind is {kind}: ACS and the IOMMU are judged where GPUDirect RDMA runs "
            "over ConnectX rails on the node's own PCIe (a cloud VM's bridges are the host's)"
        )
    return None if plan.gpu_rails else "no selected GPU host declares HCAs (rails)"


def _nvswitch_hosts(plan: CheckPlan) -> list[str]:
    """Selected GPU hosts that are NVSwitch systems (``fabric.model.gpus.has_nvswitch``)."""
    return nvswitch_hosts(plan.spec, plan.hosts)


def _firmware(plan: CheckPlan) -> list[FirmwareMinimum]:
    """Each selected host's HCA that declares ``min_firmware``."""
    return firmware_minimums(plan.spec, plan.hosts)


def _host_fixture(name: str, source: str) -> Fixture:
    return Fixture(name, lambda plan: plan.params(source))


#: One fixture for the families over every GPU host (the table keeps one object per name).
GPU_HOST = _host_fixture("gpu_host", "gpu_hosts")

SOURCES: dict[str, Source] = {
    "nvswitch_hosts": _nvswitch_hosts,
    "firmware_minimums": _firmware,
}
FAMILIES = (
    Family("gpu_pcie", ("test_gpu_pcie_links",), "gpu_hosts", _no_gpu, fixtures=(GPU_HOST,)),
    Family("gpu_clocks", ("test_gpu_clocks",), "gpu_hosts", _no_gpu, fixtures=(GPU_HOST,)),
    Family(
        "gpudirect_pcie",
        ("test_gpudirect_acs_iommu",),
        "gpu_hosts",
        _gpudirect_pcie_why,
        fixtures=(GPU_HOST,),
    ),
    Family(
        "hca_firmware",
        ("test_hca_firmware",),
        "firmware_minimums",
        lambda plan: (
            "no simulated firmware: target lab"
            if plan.simulated
            else None
            if plan.firmware_minimums
            else "no selected host declares hcas[].min_firmware"
        ),
        fixtures=(
            Fixture(
                "firmware_hca",
                lambda plan: plan.firmware_minimums,
                ident=lambda hca: hca.id,
                on=lambda _, hca: hca.host,
                subject=lambda _, hca: f"port:{hca.host}/{hca.device}/1",
            ),
        ),
    ),
    Family("dcgm_diag", ("test_dcgm_diag",), "gpu_hosts", _no_gpu, fixtures=(GPU_HOST,)),
    Family(
        "fabric_manager",
        ("test_fabric_manager",),
        "nvswitch_hosts",
        lambda plan: (
            _no_gpu(plan)
            or (
                None
                if plan.nvswitch_hosts
                else "no NVSwitch node: no selected host has 8 A100/H100/H200/B200 GPUs"
            )
        ),
        fixtures=(_host_fixture("nvswitch_host", "nvswitch_hosts"),),
    ),
)
