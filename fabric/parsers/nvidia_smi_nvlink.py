"""``nvidia-smi nvlink -s`` (``--status``): each GPU's NVLink links, at a speed or inactive.

One ``GPU 0: NVIDIA GB200 (UUID: GPU-...)`` line per GPU, then one ``Link 3: 25.781 GB/s`` or
``Link 3: <inactive>`` line per link. A GPU without NVLink prints nothing at all (a single-GPU
H200 virtual machine printed an empty output, exit 0): no GPUs, no links.

Standard library only: ``railyard-health`` parses on the compute node with :func:`links`
(``roles/node_health`` installs this module there); :func:`parse` is the registry's.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, NamedTuple

from fabric.parsers.errors import ParseError

if TYPE_CHECKING:
    from fabric.parsers.gpu_models import NvidiaSmiNvlink

TOOL = "nvidia_smi_nvlink"

_GPU = re.compile(r"^GPU (?P<index>\d+): (?P<name>.*?)(?: \(UUID: (?P<uuid>[^)]*)\))?\s*$")
_LINK = re.compile(r"^\s+Link (?P<link>\d+): (?:(?P<speed>\d+(?:\.\d+)?) GB/s|<inactive>)\s*$")


class Link(NamedTuple):
    """One link: its number and speed in GB/s (None: ``<inactive>``)."""

    link: int
    speed_gbs: float | None


class GpuLinks(NamedTuple):
    """One GPU's links, as ``nvidia-smi`` numbers and names it."""

    index: int
    name: str
    uuid: str | None
    links: list[Link]

    @property
    def inactive(self) -> list[int]:
        return [link.link for link in self.links if link.speed_gbs is None]

    @property
    def active(self) -> list[int]:
        return [link.link for link in self.links if link.speed_gbs is not None]


def links(text: str) -> list[GpuLinks]:
    """Every GPU's links (empty output: none); ParseError on a line of neither kind."""
    found: list[GpuLinks] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        if match := _GPU.match(line):
            found.append(GpuLinks(int(match["index"]), match["name"], match["uuid"], []))
        elif (match := _LINK.match(line)) and found:
            speed = float(match["speed"]) if match["speed"] else None
            found[-1].links.append(Link(int(match["link"]), speed))
        else:
            raise ParseError(TOOL, number, "'GPU n: ...' or 'Link n: <speed> GB/s'", line)
    return found


def parse(text: str) -> NvidiaSmiNvlink:
    """The registry's parser; empty text raises (``python -m fabric parse`` has nothing to
    show), where :func:`links` reads it as a GPU without NVLink."""
    from fabric.parsers.gpu_models import NvidiaSmiNvlink

    if not text.strip():
        raise ParseError(TOOL, 0, "'GPU n: ...' lines (empty: this machine has no NVLink)")
    return NvidiaSmiNvlink(
        gpus=[
            gpu._asdict() | {"links": [link._asdict() for link in gpu.links]} for gpu in links(text)
        ]
    )
