"""``ibroute`` and ``dump_fts``: switches' unicast linear forwarding tables (LFTs).

``ibroute LID`` prints one switch's table, ``dump_fts`` every switch's in the same format:
a header ``Unicast lids [0x0-0x16] of switch Lid 2 guid 0x... (leaf01):``, two column header
lines, one ``0x0001 005`` line per destination LID with a valid out port (``: (Channel Adapter
portguid 0x...: 'gpu01 mlx5_0')`` after it unless ``-n``), and ``22 valid lids dumped``.
Out port 0 is the switch itself. A block whose count line is missing or disagrees with its
entries was cut short (``ok=False``); a tool failure (``ibroute: iberror: failed: dump tables:
not a switch``) is ``ok=False`` with that line as the reason. Multicast tables (``-M``) are not
read.

Built for 2,048-host fabrics (96 switches x 2,144 LIDs): the entry lines are split, not
matched by a regular expression, and the tables are plain ``dict[int, int]``.
"""

from __future__ import annotations

import re

from fabric.parsers.common import (
    Model,
    ParseError,
    ToolResult,
    cut_short,
    failure_line,
    first_content_line,
    normalize_guid,
)

TOOL = "ibroute"

_HEADER = re.compile(
    r"^Unicast lids \[(?P<lo>0x[0-9a-fA-F]+)-(?P<hi>0x[0-9a-fA-F]+)\] of switch (?P<addr>.*?) "
    r"guid (?P<guid>0x[0-9a-fA-F]+) \((?P<name>.*)\):\s*$"
)
_COUNT = re.compile(r"^(?P<n>\d+) (?:valid )?lids dumped\s*$")
_DEST = re.compile(
    r"^\((?P<kind>Channel Adapter|Switch|Router) portguid (?P<guid>0x[0-9a-fA-F]+): '(?P<desc>.*)'\)\s*$"
)


class SwitchLft(Model):
    """One switch's unicast LFT: destination LID -> out port (0: the switch itself)."""

    guid: str
    name: str
    address: str
    lid_range: tuple[int, int]
    ports: dict[int, int]
    #: Destination LID -> (node kind, port GUID, description), where the tool resolved it.
    destinations: dict[int, tuple[str, str, str]] = {}


class IbrouteReport(ToolResult):
    """Every switch table printed, in output order."""

    switches: list[SwitchLft] = []


def parse(text: str) -> IbrouteReport:
    """Parse ``ibroute`` or ``dump_fts`` unicast output."""
    switches: list[SwitchLft] = []
    current: dict[str, object] | None = None
    ports: dict[int, int] = {}
    dests: dict[int, tuple[str, str, str]] = {}
    reason: str | None = None
    last_line = 0

    def close(count: int | None, lineno: int) -> None:
        nonlocal reason
        assert current is not None
        if count is None or count != len(ports):
            reason = reason or (
                f"{TOOL}: the table of switch {current['name']} ends at line {lineno} "
                f"without its 'N valid lids dumped' line matching {len(ports)} entries: "
                "the output was cut short"
            )
        switches.append(
            SwitchLft.model_construct(**current, ports=dict(ports), destinations=dict(dests))
        )

    for lineno, raw in enumerate(text.splitlines(), start=1):
        last_line = lineno
        line = raw.rstrip("\r")
        if line[:2] == "0x" and current is not None:
            head, _, dest = line.partition(" : ")
            parts = head.split()
            if len(parts) != 2 or not parts[1].isdigit():
                raise ParseError(TOOL, lineno, "'0xLID PORT' or '0xLID PORT : (destination)'", line)
            try:
                lid = int(parts[0], 16)
            except ValueError:
                raise ParseError(TOOL, lineno, "a hexadecimal LID", line) from None
            ports[lid] = int(parts[1])
            if dest and (match := _DEST.match(dest.strip())):
                dests[lid] = (match["kind"], normalize_guid(match["guid"]), match["desc"])
            continue
        stripped = line.strip()
        if not stripped:
            continue
        if match := _HEADER.match(stripped):
            if current is not None:
                close(None, lineno - 1)
            current = {
                "guid": normalize_guid(match["guid"]),
                "name": match["name"],
                "address": match["addr"],
                "lid_range": (int(match["lo"], 16), int(match["hi"], 16)),
            }
            ports, dests = {}, {}
            continue
        if current is not None and (match := _COUNT.match(stripped)):
            close(int(match["n"]), lineno)
            current = None
            continue
        if current is not None and (stripped.startswith("Lid") or stripped.startswith("Port")):
            continue  # the column header lines
        if failed := failure_line(stripped, [re.compile(r"^ibwarn: .*")]):
            reason = reason or failed
            continue
        raise ParseError(TOOL, lineno, "an ibroute/dump_fts unicast table line", line)
    if current is not None:
        close(None, last_line)
    if not switches and reason is None:
        lineno, line = first_content_line(text)
        raise ParseError(
            TOOL, lineno, "'Unicast lids [...] of switch ... guid 0x... (name):'", line
        )
    report = IbrouteReport(ok=reason is None, reason=reason, switches=switches)
    if text and not text.endswith("\n"):
        return cut_short(TOOL, report, last_line)
    return report
