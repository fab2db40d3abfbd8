"""A node's GPUs, from the spec and the targets' machine catalogs: how many, of which type, and
whether they hang off NVSwitch. The spec's own rules need these (what an offline image must
carry: ``fabric.spec.egress``), and so do the model, the hand-off and the checks
(``fabric.model.gpus`` re-exports them): a fact lives in the lowest layer that needs it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fabric.targets import hook

if TYPE_CHECKING:
    from fabric.spec.models import ClusterSpec, NodeGroup

#: GPU types whose 8-GPU HGX/DGX baseboards join the GPUs through NVSwitch (A100: HGX A100 8-GPU,
#: DGX A100, AWS p4d/p4de, GCP A2; H100/H200: HGX H100/H200 8-GPU, DGX H100/H200, AWS p5/p5e/p5en,
#: GCP A3, Azure ND H100/H200 v5; B200: HGX B200). NVIDIA's Fabric Manager User Guide: such a
#: system needs ``nvidia-fabricmanager`` running at the driver's version before CUDA can use its
#: GPUs. A 4-GPU HGX board (NVLink without NVSwitch) and PCIe cards do not.
NVSWITCH_GPU_TYPES = frozenset({"a100", "a800", "h100", "h800", "h200", "b200"})
#: The fewest GPUs of such a type on one NVSwitch baseboard.
NVSWITCH_MIN_GPUS = 8


def has_nvswitch(gpus: int, gpu_type: str | None) -> bool:
    """Whether a node of ``gpus`` GPUs of ``gpu_type`` (``h100``, ``H100-SXM``...) is an
    NVSwitch system (:data:`NVSWITCH_GPU_TYPES`, eight GPUs or more)."""
    kind = (gpu_type or "").lower().replace("nvidia", "").strip(" -_")
    return gpus >= NVSWITCH_MIN_GPUS and kind.split("-")[0].split("_")[0] in NVSWITCH_GPU_TYPES


def group_gpus(target: str, group: NodeGroup) -> tuple[int, str | None]:
    """(GPUs, GPU type) of a node of ``group``: declared on the group, else from ``target``'s
    machine catalog (``machine`` of the target's ``catalog.py``)."""
    if group.gpus:
        return group.gpus, group.gpu_type
    machine = hook(target, "catalog", "machine")
    known = machine(group.instance_type or "") if machine is not None else None
    if known is not None and known.gpus:
        return known.gpus, known.gpu_type
    return 0, group.gpu_type


def gpus_of(spec: ClusterSpec, host: str) -> tuple[int, str | None]:
    """(GPUs, GPU type) of ``host`` (:func:`group_gpus` of its node group)."""
    return group_gpus(spec.target, spec.hosts[host])
