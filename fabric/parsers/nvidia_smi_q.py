"""``nvidia-smi -q`` (the whole query, or its ``-d`` sections): what node fitness needs per GPU.

The output is a tree by indentation (four spaces a level): ``Key : value`` lines and section
titles, under one ``GPU 00000000:00:06.0`` block per GPU after the ``Attached GPUs`` header.
Each GPU's lines are kept as ``section/.../key -> value`` (:attr:`Gpu.fields`) and the values
the health checks judge are read from them: persistence mode, the volatile and aggregate
uncorrectable ECC counts (DRAM, and SRAM summed over its kinds: A100's ``SRAM Uncorrectable``,
Hopper's ``SRAM Uncorrectable Parity`` and ``SEC-DED``), retired pages pending
(``Pending Page Blacklist``), the row remapper (correctable and uncorrectable rows, pending,
failure), the PCIe link generation and width (current and max), the clock event reasons that
are ``Active`` (``Clocks Event Reasons``; ``Clocks Throttle Reasons`` before driver 535) and the
fabric state. A value the driver prints as ``N/A`` (or does not print) is None: not judged.

Standard library only: ``railyard-health`` parses on the compute node with :func:`gpus`
(``roles/node_health`` installs this module there); :func:`parse` is the registry's.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, NamedTuple

from fabric.parsers.errors import ParseError

if TYPE_CHECKING:
    from fabric.parsers.gpu_models import NvidiaSmiQ

TOOL = "nvidia_smi_q"

_GPU = re.compile(r"^GPU (?P<bus>[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])\s*$")
_FIELD = re.compile(r"^(?P<key>[^:]+?)\s*:\s?(?P<value>.*?)\s*$")
_REASONS = ("Clocks Event Reasons", "Clocks Throttle Reasons")


class Gpu(NamedTuple):
    """One GPU's block: its PCI bus id, every ``section/key -> value``, and the judged values."""

    bus_id: str
    fields: dict[str, str]

    def get(self, *paths: str) -> str | None:
        """The first of ``paths`` the driver printed, None for ``N/A`` or absent."""
        for path in paths:
            value = self.fields.get(path)
            if value is not None:
                return None if value in ("N/A", "[N/A]") else value
        return None

    def count(self, *paths: str) -> int | None:
        """The sum of the integer values at ``paths`` (None when none is a number)."""
        values = [self.get(path) for path in paths]
        numbers = [int(v) for v in values if v is not None and v.isdecimal()]
        return sum(numbers) if numbers else None

    def yes(self, path: str) -> bool | None:
        """``Yes`` -> True, ``No`` -> False, anything else None."""
        return {"Yes": True, "No": False}.get(self.get(path) or "")

    def _sram(self, scope: str) -> int | None:
        keys = [k for k in self.fields if k.startswith(f"ECC Errors/{scope}/SRAM Uncorrectable")]
        return self.count(*keys)

    @property
    def product(self) -> str | None:
        return self.get("Product Name")

    @property
    def persistence_mode(self) -> str | None:
        """``Enabled`` or ``Disabled``."""
        return self.get("Persistence Mode")

    @property
    def dram_uncorrectable(self) -> tuple[int | None, int | None]:
        """(volatile, aggregate) DRAM uncorrectable ECC errors."""
        return (
            self.count("ECC Errors/Volatile/DRAM Uncorrectable"),
            self.count("ECC Errors/Aggregate/DRAM Uncorrectable"),
        )

    @property
    def sram_uncorrectable(self) -> tuple[int | None, int | None]:
        """(volatile, aggregate) SRAM uncorrectable ECC errors, summed over their kinds."""
        return self._sram("Volatile"), self._sram("Aggregate")

    @property
    def retired_pages_pending(self) -> bool | None:
        return self.yes("Retired Pages/Pending Page Blacklist")

    @property
    def remapped_rows(self) -> tuple[int | None, int | None]:
        """(correctable, uncorrectable) rows remapped."""
        return (
            self.count("Remapped Rows/Correctable Error"),
            self.count("Remapped Rows/Uncorrectable Error"),
        )

    @property
    def remap_pending(self) -> bool | None:
        return self.yes("Remapped Rows/Pending")

    @property
    def remap_failure(self) -> bool | None:
        return self.yes("Remapped Rows/Remapping Failure Occurred")

    @property
    def pcie_generation(self) -> tuple[int | None, int | None]:
        """(current, max) PCIe link generation."""
        base = "PCI/GPU Link Info/PCIe Generation"
        return self.count(f"{base}/Current"), self.count(f"{base}/Max")

    @property
    def pcie_width(self) -> tuple[int | None, int | None]:
        """(current, max) PCIe link width in lanes (``16x`` -> 16)."""
        base = "PCI/GPU Link Info/Link Width"
        return _lanes(self.get(f"{base}/Current")), _lanes(self.get(f"{base}/Max"))

    @property
    def clock_reasons_active(self) -> list[str]:
        """The clock event (throttle) reasons printed ``Active``, e.g. ``Idle``."""
        return [
            key.split("/")[-1]
            for key, value in self.fields.items()
            if key.split("/")[0] in _REASONS and value == "Active"
        ]

    @property
    def fabric(self) -> tuple[str | None, str | None]:
        """(state, status) of the GPU's NVLink fabric registration (NVSwitch systems)."""
        return self.get("Fabric/State"), self.get("Fabric/Status")


def _lanes(value: str | None) -> int | None:
    digits = (value or "").rstrip("x")
    return int(digits) if digits.isdecimal() else None


def gpus(text: str) -> list[Gpu]:
    """Every GPU block of ``nvidia-smi -q`` output, in order; ParseError for other text."""
    found: list[Gpu] = []
    stack: list[tuple[int, str]] = []
    header = False
    for line in text.splitlines():
        if not line.strip():
            continue
        if match := _GPU.match(line):
            found.append(Gpu(match["bus"], {}))
            stack = []
            continue
        if line.startswith("Attached GPUs"):
            header = True
            continue
        if not found:
            continue
        indent = len(line) - len(line.lstrip(" "))
        while stack and stack[-1][0] >= indent:
            stack.pop()
        field = _FIELD.match(line.strip())
        if field is None:  # a section title
            stack.append((indent, line.strip()))
            continue
        path = "/".join([*(name for _, name in stack), field["key"]])
        found[-1].fields.setdefault(path, field["value"])
    if not header:
        raise ParseError(TOOL, 0, "the 'Attached GPUs' line of nvidia-smi -q")
    return found


def parse(text: str) -> NvidiaSmiQ:
    """The registry's parser: every GPU's judged values as a model."""
    from fabric.parsers.gpu_models import NvidiaSmiQ

    return NvidiaSmiQ.from_gpus(gpus(text))
