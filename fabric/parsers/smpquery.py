"""``smpquery portinfo``: a port's PortInfo attribute (``Key:.....value`` lines).

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


def parse(text: str) -> PortInfoReport:
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
        if reason := find_failure(
            text, [re.compile(r"^smpquery: iberror: .*"), re.compile(r"^ibwarn: .*")]
        ):
            failures = [ln.strip() for _, ln in lines(text) if "iberror" in ln]
            return PortInfoReport(ok=False, reason=failures[0] if failures else reason)
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
