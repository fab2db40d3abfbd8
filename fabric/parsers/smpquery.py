"""``smpquery``: a port's PortInfo, a node's NodeInfo or its NodeDescription.

``parse`` reads what the output is: ``# Port info:`` (``portinfo``), ``# Node info:``
(``nodeinfo``: node type, node and port GUID, the SM checks' identity of the node an SM LID
names) or ``Node Description:....`` (``nodedesc``). A failed query names its operation
(``smpquery: iberror: failed: operation nodedesc: ...``) and is a report of that kind with
``ok=False``.

The MTU check needs ``NeighborMTU`` (the active MTU), which only PortInfo carries and which
ibsim answers. Capability lists (the indented ``IsTrapSupported`` lines under ``CapMask``)
are not fields and are skipped. A failed query (``smpquery: iberror: failed: ...``) is a
report with ``ok=False``.
"""

from __future__ import annotations

import re

from fabric.parsers.common import (
    ParseError,
    ToolResult,
    find_failure,
    first_content_line,
    lines,
    normalize_guid,
    normalize_phys_state,
    normalize_state,
    speed_from_lane_gbps,
)

TOOL = "smpquery"

_FIELD = re.compile(r"^(?P<key>[A-Za-z0-9_]+):\.+(?P<value>.*)$")
_HEADER = re.compile(r"^# Port info: (?P<where>.*)$")
#: PortInfo fields smpquery always prints and the report reads: one missing means a cut.
_REQUIRED = (
    "Lid",
    "SMLid",
    "LinkWidthActive",
    "LinkState",
    "PhysLinkState",
    "LinkSpeedActive",
    "NeighborMTU",
    "MtuCap",
)
_GBPS = re.compile(r"^(?P<gbps>\d+(?:\.\d+)?) Gbps$")


_NODE_HEADER = re.compile(r"^# Node info: (?P<where>.*)$")
_NODE_DESC = re.compile(r"^Node Description:\.+(?P<desc>.*)$")
_OPERATION = re.compile(r"^smpquery: iberror: failed: operation (?P<op>\w+):")
#: NodeInfo fields smpquery always prints and the report reads.
_NODE_REQUIRED = ("NodeType", "NumPorts", "Guid", "PortGuid")


class NodeInfoReport(ToolResult):
    """NodeInfo of the node at a LID (``smpquery nodeinfo <lid>``): ``node_type`` is
    ``Switch`` or ``Channel Adapter`` (a router: ``Router``)."""

    where: str | None = None
    fields: dict[str, str] = {}
    node_type: str | None = None
    ports: int | None = None
    node_guid: str | None = None
    port_guid: str | None = None


class NodeDescReport(ToolResult):
    """NodeDescription of the node at a LID (``smpquery nodedesc <lid>``)."""

    description: str | None = None


class PortInfoReport(ToolResult):
    """PortInfo of one port; ``fields`` holds every ``Key:...value`` as printed."""

    where: str | None = None
    fields: dict[str, str] = {}
    lid: int | None = None
    sm_lid: int | None = None
    state: str | None = None
    phys_state: str | None = None
    width_active: str | None = None
    speed_active: str | None = None
    neighbor_mtu: int | None = None
    mtu_cap: int | None = None


def _speed(fields: dict[str, str]) -> str | None:
    """Active speed name: LinkSpeedExtActive when an extended speed is up, else LinkSpeedActive."""
    for key in ("LinkSpeedExtActive", "LinkSpeedActive"):
        if match := _GBPS.match(fields.get(key, "")):
            return speed_from_lane_gbps(float(match["gbps"]))
    return None


def _int(fields: dict[str, str], key: str) -> int | None:
    value = fields.get(key, "")
    return int(value) if value.isdecimal() else None


def _failure(text: str) -> str | None:
    """The tool's own failure line (``iberror``), else the first ``ibwarn``; None if neither."""
    if reason := find_failure(
        text, [re.compile(r"^smpquery: iberror: .*"), re.compile(r"^ibwarn: .*")]
    ):
        failures = [ln.strip() for _, ln in lines(text) if "iberror" in ln]
        return failures[0] if failures else reason
    return None


def _kind(text: str) -> str:
    """``portinfo``, ``nodeinfo`` or ``nodedesc``: what the output (or its failure) is."""
    for _, line in lines(text):
        stripped = line.strip()
        if _HEADER.match(stripped):
            return "portinfo"
        if _NODE_HEADER.match(stripped):
            return "nodeinfo"
        if _NODE_DESC.match(stripped):
            return "nodedesc"
        if match := _OPERATION.match(stripped):
            return match["op"] if match["op"] in ("nodeinfo", "nodedesc") else "portinfo"
    return "portinfo"


def parse(text: str) -> PortInfoReport | NodeInfoReport | NodeDescReport:
    """Parse ``smpquery portinfo``, ``nodeinfo`` or ``nodedesc`` output."""
    kind = _kind(text)
    if kind == "nodeinfo":
        return parse_nodeinfo(text)
    if kind == "nodedesc":
        return parse_nodedesc(text)
    return parse_portinfo(text)


def parse_nodedesc(text: str) -> NodeDescReport:
    """Parse ``smpquery nodedesc <lid>`` output."""
    for _, line in lines(text):
        if match := _NODE_DESC.match(line.strip()):
            return NodeDescReport(description=match["desc"].strip())
    if reason := _failure(text):
        return NodeDescReport(ok=False, reason=reason)
    lineno, line = first_content_line(text)
    raise ParseError(TOOL, lineno, "'Node Description:....<description>'", line)


def parse_nodeinfo(text: str) -> NodeInfoReport:
    """Parse ``smpquery nodeinfo <lid>`` output."""
    fields: dict[str, str] = {}
    where = None
    for _, line in lines(text):
        stripped = line.strip()
        if match := _NODE_HEADER.match(stripped):
            where = match["where"].strip()
        elif match := _FIELD.match(stripped):
            fields[match["key"]] = match["value"].strip()
    if not fields:
        if reason := _failure(text):
            return NodeInfoReport(ok=False, reason=reason)
        lineno, line = first_content_line(text)
        raise ParseError(TOOL, lineno, "'# Node info: ...' and 'Key:....value' lines", line)
    missing = [key for key in _NODE_REQUIRED if key not in fields]
    reason = (
        f"smpquery: no {missing[0]} line (NodeInfo always has one): the output was cut short"
        if missing
        else None
    )
    guids: dict[str, str | None] = {}
    for key in ("Guid", "PortGuid"):
        try:
            guids[key] = normalize_guid(fields[key]) if key in fields else None
        except ValueError:
            guids[key] = None
            reason = reason or f"smpquery: {key} {fields[key]!r} is not a GUID"
    return NodeInfoReport(
        ok=reason is None,
        reason=reason,
        where=where,
        fields=fields,
        node_type=fields.get("NodeType"),
        ports=_int(fields, "NumPorts"),
        node_guid=guids["Guid"],
        port_guid=guids["PortGuid"],
    )


def parse_portinfo(text: str) -> PortInfoReport:
    """Parse ``smpquery portinfo`` output."""
    fields: dict[str, str] = {}
    where = None
    for _, line in lines(text):
        stripped = line.strip()
        if match := _HEADER.match(stripped):
            where = match["where"].strip()
        elif match := _FIELD.match(stripped):
            fields[match["key"]] = match["value"].strip()
    if not fields:
        if reason := _failure(text):
            return PortInfoReport(ok=False, reason=reason)
        lineno, line = first_content_line(text)
        raise ParseError(TOOL, lineno, "'# Port info: ...' and 'Key:....value' lines", line)
    width = fields.get("LinkWidthActive")
    missing = [key for key in _REQUIRED if key not in fields]
    reason = (
        f"smpquery: no {missing[0]} line (PortInfo always has one): the output was cut short"
        if missing
        else None
    )
    return PortInfoReport(
        ok=reason is None,
        reason=reason,
        where=where,
        fields=fields,
        lid=_int(fields, "Lid"),
        sm_lid=_int(fields, "SMLid"),
        state=normalize_state(fields["LinkState"]) if "LinkState" in fields else None,
        phys_state=normalize_phys_state(fields["PhysLinkState"])
        if "PhysLinkState" in fields
        else None,
        width_active=width.lower() if width else None,
        speed_active=_speed(fields),
        neighbor_mtu=_int(fields, "NeighborMTU"),
        mtu_cap=_int(fields, "MtuCap"),
    )
