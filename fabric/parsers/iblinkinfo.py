"""``iblinkinfo`` (default and ``-l`` line mode): every port's link and its peer."""

from __future__ import annotations

import re
from typing import Literal

from fabric.parsers.common import (
    Model,
    Number,
    ParseError,
    ToolResult,
    build,
    failed,
    failure_line,
    find_failure,
    lines,
    normalize_guid,
    normalize_phys_state,
    normalize_state,
    number,
    speed_from_lane_gbps,
)

TOOL = "iblinkinfo"

_SWITCH = re.compile(r"^Switch:\s+(?P<guid>0x[0-9a-fA-F]+)\s+(?P<name>.*?):\s*$")
_CA = re.compile(r"^CA:\s+(?P<name>.*?):\s*$")
_LINK = re.compile(
    r"^\s*(?:(?P<node_guid>0x[0-9a-fA-F]+)\s+\"\s*(?P<node_name>.*?)\"\s+)?"
    r"(?:(?P<port_guid>0x[0-9a-fA-F]+)\s+)?"
    r"(?P<lid>\d+)\s+(?P<port>\d+)\[\s*(?P<ext>\d*)\s*\]\s+==\(\s*"
    r"(?:(?P<width>\d+X)\s+(?P<lane>[\d.]+)\s+Gbps\s+)?"
    r"(?P<state>\w+)/\s*(?P<phys>\w+)\)==>\s+"
    r"(?:(?P<peer_guid>0x[0-9a-fA-F]+)\s+)?"
    r"(?:(?P<peer_lid>\d+)\s+(?P<peer_port>\d+))?\[\s*(?P<peer_ext>\d*)\s*\]\s+"
    r"\"(?P<peer_desc>.*)\"\s+\(\s*(?P<note>.*?)\s*\)\s*$"
)


class Link(Model):
    """One port's link as iblinkinfo reports it."""

    port: int
    lid: int
    state: str
    physical_state: str
    width: str | None = None
    lane_gbps: Number | None = None
    speed: str | None = None
    port_guid: str | None = None
    peer_guid: str | None = None
    peer_lid: int | None = None
    peer_port: int | None = None
    peer_description: str | None = None
    note: str | None = None


class LinkNode(Model):
    """A switch or CA and its ports' links (``kind`` is unknown in ``-l`` mode)."""

    kind: Literal["switch", "ca"] | None
    name: str
    guid: str | None = None
    links: list[Link]


class IblinkinfoReport(ToolResult):
    """Every node iblinkinfo printed, in order."""

    nodes: list[LinkNode] = []


def _link(match: re.Match[str]) -> dict[str, object]:
    lane = number(match["lane"]) if match["lane"] else None
    return {
        "port": int(match["port"]),
        "lid": int(match["lid"]),
        "state": normalize_state(match["state"]),
        "physical_state": normalize_phys_state(match["phys"]),
        "width": match["width"],
        "lane_gbps": lane,
        "speed": speed_from_lane_gbps(lane) if lane is not None else None,
        "port_guid": normalize_guid(match["port_guid"]) if match["port_guid"] else None,
        "peer_guid": normalize_guid(match["peer_guid"]) if match["peer_guid"] else None,
        "peer_lid": int(match["peer_lid"]) if match["peer_lid"] else None,
        "peer_port": int(match["peer_port"]) if match["peer_port"] else None,
        "peer_description": match["peer_desc"] or None,
        "note": match["note"] or None,
    }


def parse(text: str) -> IblinkinfoReport:
    """Parse ``iblinkinfo`` output."""
    nodes: list[dict[str, object]] = []
    for lineno, line in lines(text):
        if not line.strip():
            continue
        if match := _SWITCH.match(line):
            nodes.append(
                {"kind": "switch", "name": match["name"], "guid": normalize_guid(match["guid"])}
            )
            nodes[-1]["links"] = []
            continue
        if match := _CA.match(line):
            nodes.append({"kind": "ca", "name": match["name"], "links": []})
            continue
        match = _LINK.match(line)
        if not match:
            if (reason := failure_line(line)) or (not nodes and (reason := find_failure(text))):
                return failed(TOOL, IblinkinfoReport, {"nodes": nodes}, reason)
            raise ParseError(TOOL, lineno, "a 'Switch:'/'CA:' header or a link line", line)
        if match["node_guid"]:  # -l line mode: the node is on every line
            guid = normalize_guid(match["node_guid"])
            if not nodes or nodes[-1].get("guid") != guid:
                nodes.append({"kind": None, "name": match["node_name"], "guid": guid, "links": []})
        elif not nodes:
            raise ParseError(TOOL, lineno, "a 'Switch:' or 'CA:' header", line)
        nodes[-1]["links"].append(_link(match))  # type: ignore[union-attr]
    if not nodes:
        raise ParseError(TOOL, 0, "a 'Switch:' or 'CA:' header")
    return build(TOOL, IblinkinfoReport, {"nodes": nodes}, text=text)
