"""What both ibnetdiscover parsers share: the error type, node-id GUIDs, CA and switch naming,
and the slower-end rule for links whose two ends disagree."""

from __future__ import annotations

import re

from fabric.parsers.common import ParseError
from fabric.topology.graph import Ca, Link, Switch

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
