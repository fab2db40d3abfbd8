"""The registry's results (pydantic) of the GPU parsers the health program runs on the node:
``dmesg_xid``, ``nvidia_smi_q`` and ``nvidia_smi_nvlink``. Those parsers are standard library
only (no pydantic on a compute node) and import this module only inside ``parse``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fabric.parsers.common import Model, ToolResult

if TYPE_CHECKING:
    from fabric.parsers.nvidia_smi_q import Gpu


class XidLine(Model):
    """One XID line of the kernel log."""

    line: int
    pci: str
    code: int
    pid: str | None = None
    name: str | None = None
    text: str


class DmesgXid(ToolResult):
    """Every XID of a kernel log (none: a log without XIDs)."""

    xids: list[XidLine] = []


class SmiGpu(Model):
    """What node fitness judges of one GPU of ``nvidia-smi -q`` (None: ``N/A`` or absent)."""

    bus_id: str
    product: str | None = None
    persistence_mode: str | None = None
    dram_uncorrectable_volatile: int | None = None
    dram_uncorrectable_aggregate: int | None = None
    sram_uncorrectable_volatile: int | None = None
    sram_uncorrectable_aggregate: int | None = None
    retired_pages_pending: bool | None = None
    remapped_rows_correctable: int | None = None
    remapped_rows_uncorrectable: int | None = None
    remap_pending: bool | None = None
    remap_failure: bool | None = None
    pcie_generation_current: int | None = None
    pcie_generation_max: int | None = None
    pcie_width_current: int | None = None
    pcie_width_max: int | None = None
    clock_reasons_active: list[str] = []
    fabric_state: str | None = None
    fabric_status: str | None = None


class NvidiaSmiQ(ToolResult):
    """Every GPU block of ``nvidia-smi -q``."""

    gpus: list[SmiGpu] = []

    @classmethod
    def from_gpus(cls, gpus: list[Gpu]) -> NvidiaSmiQ:
        """The model of :func:`fabric.parsers.nvidia_smi_q.gpus`'s result."""
        return cls(
            gpus=[
                SmiGpu(
                    bus_id=gpu.bus_id,
                    product=gpu.product,
                    persistence_mode=gpu.persistence_mode,
                    dram_uncorrectable_volatile=gpu.dram_uncorrectable[0],
                    dram_uncorrectable_aggregate=gpu.dram_uncorrectable[1],
                    sram_uncorrectable_volatile=gpu.sram_uncorrectable[0],
                    sram_uncorrectable_aggregate=gpu.sram_uncorrectable[1],
                    retired_pages_pending=gpu.retired_pages_pending,
                    remapped_rows_correctable=gpu.remapped_rows[0],
                    remapped_rows_uncorrectable=gpu.remapped_rows[1],
                    remap_pending=gpu.remap_pending,
                    remap_failure=gpu.remap_failure,
                    pcie_generation_current=gpu.pcie_generation[0],
                    pcie_generation_max=gpu.pcie_generation[1],
                    pcie_width_current=gpu.pcie_width[0],
                    pcie_width_max=gpu.pcie_width[1],
                    clock_reasons_active=gpu.clock_reasons_active,
                    fabric_state=gpu.fabric[0],
                    fabric_status=gpu.fabric[1],
                )
                for gpu in gpus
            ]
        )


class NvlinkLink(Model):
    """One NVLink link: its speed in GB/s, None when ``<inactive>``."""

    link: int
    speed_gbs: float | None = None


class NvlinkGpu(Model):
    """One GPU's NVLink links."""

    index: int
    name: str
    uuid: str | None = None
    links: list[NvlinkLink] = []


class NvidiaSmiNvlink(ToolResult):
    """Every GPU's NVLink links of ``nvidia-smi nvlink -s``."""

    gpus: list[NvlinkGpu] = []
