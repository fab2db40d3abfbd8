"""``/proc/cmdline``: the kernel's boot parameters, and what they say about the IOMMU.

GPUDirect RDMA wants peer-to-peer PCIe traffic untranslated: NCCL's troubleshooting guide
says IO virtualization (VT-d/IOMMU) can redirect it to the root complex, and to disable the
IOMMU or run it in passthrough (``iommu=pt``). :func:`iommu_mode` reads the kernel's own
parameters (``iommu=``, ``iommu.passthrough=``, ``intel_iommu=``, ``amd_iommu=``); parameters
after ``--`` belong to init, not the kernel, and are left out.

Standard library only: ``railyard-health`` reads it on the compute node.
"""

from __future__ import annotations

TOOL = "proc_cmdline"


def params(text: str) -> dict[str, str]:
    """The kernel's parameters (``name -> value``; a bare flag's value is ``""``); the last of
    a repeated name wins, as the kernel reads them."""
    found: dict[str, str] = {}
    for word in text.split():
        if word == "--":
            break
        name, _, value = word.partition("=")
        found[name] = value
    return found


def iommu_mode(text: str) -> str:
    """``passthrough`` (``iommu=pt``, ``iommu.passthrough=1``), ``off`` (``intel_iommu=off``,
    ``amd_iommu=off``, ``iommu=off``), ``translated`` (``intel_iommu=on``, ``amd_iommu=on``,
    ``iommu=force`` or ``iommu.passthrough=0`` without passthrough) or ``default`` (nothing
    said: the kernel's build default)."""
    found = params(text)
    iommu = found.get("iommu", "")
    if iommu == "pt" or found.get("iommu.passthrough") in ("1", "y", "on"):
        return "passthrough"
    if iommu == "off" or "off" in (found.get("intel_iommu"), found.get("amd_iommu")):
        return "off"
    on = {found.get("intel_iommu", "").split(",")[0], found.get("amd_iommu", "").split(",")[0]}
    if "on" in on or iommu == "force" or found.get("iommu.passthrough") in ("0", "n", "off"):
        return "translated"
    return "default"
