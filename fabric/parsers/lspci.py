"""``lspci -vvv``: each device's PCIe link (``LnkCap``/``LnkSta``) and its ACS control
(``ACSCtl``), the bits that decide whether peer-to-peer traffic (GPUDirect RDMA between a GPU
and a NIC) goes straight through a PCIe switch or up to the root complex.

A device's block starts at its address line (``00:06.0 3D controller: ...``, ``0000:`` domain
optional) and its lines are indented below it. ``lspci -vvv | grep ACSCtl`` (what NCCL's
troubleshooting guide asks for) gives ACSCtl lines without their device: they are kept under
the device ``None``. ACS flags are ``Name+`` (on) or ``Name-`` (off).

Standard library only: ``railyard-health`` parses on the compute node with :func:`devices`.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from fabric.parsers.errors import ParseError

TOOL = "lspci"

_HEAD = re.compile(
    r"^(?P<addr>(?:[0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])\s+(?P<title>.*)$"
)
_LINK = re.compile(r"Speed (?P<speed>[\d.]+)GT/s[^,]*, Width x(?P<width>\d+)")
_FLAG = re.compile(r"(?P<name>[A-Za-z]+)(?P<on>[+-])")
#: The ACS controls that send peer-to-peer requests up to the root complex (NCCL's guide:
#: ``SrcValid+`` means ACS is on; redirects and egress control reroute P2P).
P2P_BLOCKING = ("SrcValid", "ReqRedir", "CmpltRedir", "EgressCtrl", "UpstreamFwd")


class Device(NamedTuple):
    """One device block: its address (None for ACSCtl lines without one), its title line, the
    link it can run and runs (``(GT/s, lanes)``), and its ACS controls (name -> on)."""

    address: str | None
    title: str
    link_cap: tuple[float, int] | None
    link_sta: tuple[float, int] | None
    acs_ctl: dict[str, bool]

    @property
    def bridge(self) -> bool:
        """A PCI bridge (a switch's port or a root port): where ACS sits on the P2P path."""
        return "bridge" in self.title.lower()

    @property
    def acs_on(self) -> list[str]:
        """The P2P-rerouting ACS controls this device has on."""
        return [name for name in P2P_BLOCKING if self.acs_ctl.get(name)]


def _link(line: str) -> tuple[float, int] | None:
    match = _LINK.search(line)
    return (float(match["speed"]), int(match["width"])) if match else None


def devices(text: str) -> list[Device]:
    """Every device block (and the ACSCtl lines without one), in order; ParseError when the
    text has neither a device line nor an ACSCtl line."""
    found: list[Device] = []
    current: Device | None = None
    for line in text.splitlines():
        head = _HEAD.match(line)
        if head is not None:
            current = Device(head["addr"].lower(), head["title"], None, None, {})
            found.append(current)
            continue
        body = line.strip()
        if body.startswith("LnkCap:") and current is not None:
            current = found[-1] = current._replace(link_cap=_link(body))
        elif body.startswith("LnkSta:") and current is not None:
            current = found[-1] = current._replace(link_sta=_link(body))
        elif body.startswith("ACSCtl:"):
            flags = {m["name"]: m["on"] == "+" for m in _FLAG.finditer(body[len("ACSCtl:") :])}
            if current is None:
                found.append(Device(None, "", None, None, flags))
            else:
                current.acs_ctl.update(flags)
    if not found:
        raise ParseError(TOOL, 0, "lspci -vvv device lines (00:06.0 ...) or ACSCtl: lines")
    return found
