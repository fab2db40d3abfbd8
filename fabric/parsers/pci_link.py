"""PCIe link files of sysfs, printed as ``path:value`` lines by ``grep -H .``: each device's
current and maximum link speed and width.

The files are ``current_link_speed`` (``32.0 GT/s PCIe``), ``current_link_width`` (``16``),
``max_link_speed`` and ``max_link_width`` under a PCI device's folder: a GPU's
``/sys/bus/pci/devices/0000:00:06.0/`` or an HCA's ``/sys/class/infiniband/mlx5_0/device/``.
A device is named by its folder: the PCI address, or the HCA's name where the folder is its
``device`` link. Speeds are GT/s (``8.0 GT/s PCIe``; ``Unknown`` or unreadable: None).

Standard library only: ``railyard-health`` parses on the compute node with :func:`links`.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from fabric.parsers.errors import ParseError

TOOL = "pci_link"

_LINE = re.compile(
    r"^(?P<folder>\S+)/(?P<which>current|max)_link_(?P<what>speed|width):(?P<value>.*)$"
)
_SPEED = re.compile(r"^\s*(?P<gts>\d+(?:\.\d+)?)\s*GT/s")
#: PCIe generation by its transfer rate (GT/s), as ``nvidia-smi`` counts generations.
GENERATION = {2.5: 1, 5.0: 2, 8.0: 3, 16.0: 4, 32.0: 5, 64.0: 6}


class Link(NamedTuple):
    """One device's PCIe link: (current, max) speed in GT/s and width in lanes."""

    device: str
    speed: tuple[float | None, float | None]
    width: tuple[int | None, int | None]

    @property
    def generation(self) -> tuple[int | None, int | None]:
        """(current, max) PCIe generation from the speeds."""
        current, most = self.speed
        return GENERATION.get(current or 0.0), GENERATION.get(most or 0.0)


def _device(folder: str) -> str:
    parts = folder.rstrip("/").split("/")
    return parts[-2] if parts[-1] == "device" and len(parts) > 1 else parts[-1]


def _value(what: str, text: str) -> float | int | None:
    if what == "width":
        return int(text) if text.strip().isdecimal() else None
    match = _SPEED.match(text)
    return float(match["gts"]) if match else None


def links(text: str) -> list[Link]:
    """Every device's link, in first-seen order; ParseError when no line is a link file."""
    found: dict[str, dict[str, float | int | None]] = {}
    for line in text.splitlines():
        match = _LINE.match(line.strip())
        if match is None:
            continue
        values = found.setdefault(_device(match["folder"]), {})
        values[f"{match['which']}_{match['what']}"] = _value(match["what"], match["value"])
    if not found:
        raise ParseError(TOOL, 0, "sysfs lines such as .../current_link_speed:32.0 GT/s PCIe")
    return [
        Link(
            device,
            (v.get("current_speed"), v.get("max_speed")),  # type: ignore[arg-type]
            (v.get("current_width"), v.get("max_width")),  # type: ignore[arg-type]
        )
        for device, v in found.items()
    ]


def degraded(link: Link) -> str | None:
    """Why a link runs below what it can (``Gen4 x8, capable of Gen5 x16``), None when it
    does not or a value is unreadable."""
    (speed, top), (width, widest) = link.speed, link.width
    if None in (speed, top, width, widest):
        return None
    if speed < top or width < widest:  # type: ignore[operator]
        gen, gen_max = link.generation
        now = f"Gen{gen}" if gen else f"{speed:g} GT/s"
        best = f"Gen{gen_max}" if gen_max else f"{top:g} GT/s"
        return f"PCIe {now} x{width}, capable of {best} x{widest}"
    return None
