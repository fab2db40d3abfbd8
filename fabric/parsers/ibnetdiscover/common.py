"""What both ibnetdiscover parsers share: the error type, node-id GUIDs, CA and switch naming,
and the slower-end rule for links whose two ends disagree."""

from __future__ import annotations

import re

from fabric.graph import Ca, Link, Switch
from fabric.parsers.errors import ParseError

TOOL = "ibnetdiscover"
_MF0 = re.compile(r"^MF0;([^:;]+):[^/]*(?:/([^/]+))?/U\d+$")
_UNSET = re.compile(r"^MT\d+\b")
_WIDTH_SPEED = re.compile(r"(\d+x)([A-Z]+\d*)")
_HEADER_HEAD = re.compile(r"(Switch|Ca|Rt)[ \t]+(\d+)[ \t]+")


class IbnetdiscoverError(ParseError):
    """ibnetdiscover text that cannot be parsed: names the line and what was expected."""

    def __init__(self, line: int, expected: str, got: str | None = None) -> None:
        super().__init__(TOOL, line, expected, got)


def _guid(node_id: str) -> str | None:
    """``S-0002c903000e1000`` -> ``0x0002c903000e1000``; None if it is not hex."""
    body = node_id[2:] if node_id[1:2] == "-" else node_id
    try:
        return f"0x{int(body, 16):016x}"
    except ValueError:
        return None


def _ca(guid: str, ports: int, desc: str, kind: str) -> Ca:
    if kind == "Rt":
        return Ca(guid, None, None, desc, ports, "router")
    if "Aggregation Node" in desc:
        return Ca(guid, None, None, desc, ports, "aggregation")
    words = desc.split(None, 1)
    if not words or _UNSET.match(desc):
        return Ca(guid, None, None, desc, ports, "hca")
    return Ca(guid, words[0], words[1] if len(words) > 1 else None, desc, ports, "hca")


def _switch_names(switches: dict[str, Switch]) -> dict[str, Switch]:
    """Name = MF0 name, else a one-word description, else S-<guid>; made unique by GUID."""
    named: dict[str, Switch] = {}
    counts: dict[str, int] = {}
    for guid, sw in switches.items():
        match = _MF0.match(sw.description)
        if match:  # MF0;name:model/U1, or MF0;name:model/L01/U1 for a director's line/spine card
            name = (
                match.group(1) if match.group(2) is None else f"{match.group(1)}-{match.group(2)}"
            )
        elif sw.description and " " not in sw.description.strip():
            name = sw.description.strip()
        else:
            name = f"S-{guid[2:]}"
        named[guid] = sw._replace(name=name)
        counts[name] = counts.get(name, 0) + 1
    return {
        g: (s if counts[s.name] == 1 else s._replace(name=f"{s.name}-{g[2:]}"))
        for g, s in named.items()
    }


def _reconcile(
    links: list[Link], deferred: list[tuple[str, int, str, int, str, str, float]]
) -> None:
    """Where the two ends of a link report different widths or speeds (a degraded link, as in
    the 1xSDR lines of the ibnetdiscover man page example), keep the slower of the two."""
    if (
        not deferred
        or not links
        or min(d[6] for d in deferred) >= max(link.rate_gbps for link in links)
    ):
        return  # no deferred end is slower than any kept link: nothing to lower (the usual case)
    index = {(link.a_guid, link.a_port): i for i, link in enumerate(links)}
    for _, _, remote, rport, width, speed, rate in deferred:
        i = index.get((remote, rport))
        if i is None:
            continue
        link = links[i]
        if (link.width != width or link.speed != speed) and rate < link.rate_gbps:
            links[i] = link._replace(width=width, speed=speed, rate_gbps=rate)


#: The comment that opens every ibnetdiscover capture ("#\n# Topology file: generated on ...").
_CAPTURE_HEAD = "\n# Topology file"
_RECORD_HEADS = ("Switch", "Ca", "Rt")
_CUT = "the capture looks cut off: capture the whole ibnetdiscover output again"


class LastRecord:
    """The last node record of one capture: ``nid`` and ``description`` from its header line,
    which is line ``line`` of the text; ``is_switch`` for a ``Switch`` record."""

    __slots__ = ("_start", "_text", "description", "is_switch", "nid")

    def __init__(self, text: str, start: int) -> None:
        end = text.find("\n", start)
        parts = text[start : len(text) if end < 0 else end].split('"')
        self._text, self._start = text, start
        self.nid = parts[1] if len(parts) > 1 else ""
        self.description = parts[3] if len(parts) > 3 else ""
        self.is_switch = parts[0].startswith("Switch")

    @property
    def line(self) -> int:
        """The header's line number (counted only for an error: a pass over the text)."""
        return self._text.count("\n", 0, self._start) + 1


def last_records(text: str) -> list[LastRecord]:
    """The last node record of each capture in ``text`` (a file may hold several captures, one
    per plane): before each later ``# Topology file`` comment and before the end. Only a record
    that ends a capture can be short when the text was cut off at a line boundary: every
    earlier record is whole, and every later one missing (then a port line names a node with no
    record, which both parsers report)."""
    stops = []
    pos = text.find(_CAPTURE_HEAD)
    while pos >= 0:
        stops.append(pos)
        pos = text.find(_CAPTURE_HEAD, pos + 1)
    stops.append(len(text))
    records: list[LastRecord] = []
    seen: set[int] = set()
    for stop in stops:
        start = _last_header(text, stop)
        if start is not None and start not in seen:
            seen.add(start)
            records.append(LastRecord(text, start))
    return records


def _last_header(text: str, stop: int) -> int | None:
    """Offset of the last node header line that ends by ``stop``, walking back line by line
    (over one record's port and id lines, and blank and comment lines)."""
    line_end = stop
    while line_end > 0:
        line_start = text.rfind("\n", 0, line_end) + 1
        if text.startswith(_RECORD_HEADS, line_start) and '"' in text[line_start:line_end]:
            return line_start
        line_end = line_start - 1
    return None


def cut_off_error(record: LastRecord, own: int, refs: int, missing: str) -> IbnetdiscoverError:
    """The error for a capture whose last record lists fewer links than its peers give it."""
    return IbnetdiscoverError(
        record.line,
        f'all port lines of "{record.description}" ({record.nid}): the other ends list {refs} '
        f"links to it, its record {own} ({missing}); {_CUT}",
    )


def unrecorded_error(line: int, nid: str, description: str, why: str) -> IbnetdiscoverError:
    """The error for a node that port lines name but that has no record of its own."""
    return IbnetdiscoverError(
        line, f'a record for "{description}" ({nid}), which this port line names{why}; {_CUT}'
    )


def empty_error() -> IbnetdiscoverError:
    """The error for a text without a single node record."""
    return IbnetdiscoverError(
        0,
        'at least one node record (Switch|Ca|Rt <ports> "id" # "description"); the input is '
        "empty or holds only comments: pass ibnetdiscover's output",
    )
