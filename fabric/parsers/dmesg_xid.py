"""The kernel log's XID lines: ``NVRM: Xid (PCI:0000:a1:00): 79, pid=..., name=..., <text>``.

An XID is the NVIDIA driver's report of a GPU error (NVIDIA's XID catalogue:
https://docs.nvidia.com/deploy/xid-errors/). The line is found wherever the kernel log is
printed: ``dmesg`` (``[  12.3]`` or ``-T``'s ``[Fri Apr  5 21:29:39 2024]``), syslog and
``journalctl -k`` (``Dec  2 11:38:47 worker4 kernel: ...``). After the code come, on current
drivers, ``pid=`` (a number or ``'<unknown>'``) and ``name=``; older drivers print only ``pid=``
(``63, pid=1896, Row Remapper: ...``) or neither (``31, Ch 00000003, ...``); NVLink XIDs
(144-150) print their own fields. Every other line (the driver's own NVRM lines, continuation
lines, other drivers) is not an XID and is skipped.

Standard library only: ``railyard-health`` parses the kernel log on the compute node with
:func:`xids` (``roles/node_health`` installs this module there); :func:`parse` is the
registry's (``python -m fabric parse dmesg_xid``).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, NamedTuple

from fabric.parsers.errors import ParseError

if TYPE_CHECKING:
    from fabric.parsers.gpu_models import DmesgXid

TOOL = "dmesg_xid"

_XID = re.compile(
    r"NVRM: Xid \((?:PCI:)?(?P<pci>[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}(?:\.[0-7])?)\): "
    r"(?P<code>\d+), (?P<rest>.*?)\s*$"
)
_PID = re.compile(r"^pid=(?P<pid>'<unknown>'|\d+), (?:name=(?P<name>[^,]*), )?(?P<text>.*)$")


class Xid(NamedTuple):
    """One XID line: where it is (1-based), the GPU's PCI address as printed, the code, the
    process the driver named (None when it printed none), and the rest of the line."""

    line: int
    pci: str
    code: int
    pid: str | None
    name: str | None
    text: str


def xids(text: str) -> list[Xid]:
    """Every XID line of a kernel log, in order (none: a log without XIDs)."""
    found = []
    for number, line in enumerate(text.splitlines(), start=1):
        if "Xid" not in line or not (match := _XID.search(line)):
            continue
        rest = match["rest"]
        pid = name = None
        if who := _PID.match(rest):
            pid, name, rest = who["pid"], who["name"], who["text"]
        found.append(Xid(number, match["pci"].lower(), int(match["code"]), pid, name, rest))
    return found


def parse(text: str) -> DmesgXid:
    """The registry's parser: the XIDs of a kernel log as a model; empty text is no log."""
    from fabric.parsers.gpu_models import DmesgXid

    if not text.strip():
        raise ParseError(TOOL, 0, "kernel log lines (dmesg, journalctl -k or syslog)")
    return DmesgXid(xids=[found._asdict() for found in xids(text)])
