"""``perfquery`` (plain, ``-x`` extended, ``-a`` all ports): port counters as ints."""

from __future__ import annotations

import re

from fabric.parsers.common import (
    Counter,
    Model,
    ParseError,
    ToolResult,
    build,
    failed,
    failure_line,
    find_failure,
    first_content_line,
    lines,
    to_int,
)

TOOL = "perfquery"
_IBWARN = re.compile(r"^ibwarn: .*")

_HEADER = re.compile(
    r"^# Port (?P<ext>extended )?counters: Lid (?P<lid>\d+) port (?P<port>\d+) "
    r"\(CapMask: (?P<cap>0x[0-9a-fA-F]+)(?: CapMask2: (?P<cap2>0x[0-9a-fA-F]+))?\)\s*$"
)
_COUNTER = re.compile(r"^(?P<name>[A-Za-z0-9]+):\.+(?P<value>\S+)\s*$")

#: perfquery counter name -> model field.
FIELDS = {
    "SymbolErrorCounter": "symbol_errors",
    "LinkErrorRecoveryCounter": "link_error_recovery",
    "LinkDownedCounter": "link_downed",
    "PortRcvErrors": "port_rcv_errors",
    "PortRcvRemotePhysicalErrors": "port_rcv_remote_physical_errors",
    "PortRcvSwitchRelayErrors": "port_rcv_switch_relay_errors",
    "PortXmitDiscards": "port_xmit_discards",
    "PortXmitConstraintErrors": "port_xmit_constraint_errors",
    "PortRcvConstraintErrors": "port_rcv_constraint_errors",
    "LocalLinkIntegrityErrors": "local_link_integrity_errors",
    "ExcessiveBufferOverrunErrors": "excessive_buffer_overrun_errors",
    "VL15Dropped": "vl15_dropped",
    "QP1Dropped": "qp1_dropped",
    "PortXmitData": "port_xmit_data",
    "PortRcvData": "port_rcv_data",
    "PortXmitPkts": "port_xmit_pkts",
    "PortRcvPkts": "port_rcv_pkts",
    "PortXmitWait": "port_xmit_wait",
}


class PortCounters(Model):
    """One ``# Port [extended ]counters:`` block (port 255 means all ports, ``-a``)."""

    extended: bool
    lid: int
    port: int
    cap_mask: str
    cap_mask2: str | None = None
    symbol_errors: Counter | None = None
    link_error_recovery: Counter | None = None
    link_downed: Counter | None = None
    port_rcv_errors: Counter | None = None
    port_rcv_remote_physical_errors: Counter | None = None
    port_rcv_switch_relay_errors: Counter | None = None
    port_xmit_discards: Counter | None = None
    port_xmit_constraint_errors: Counter | None = None
    port_rcv_constraint_errors: Counter | None = None
    local_link_integrity_errors: Counter | None = None
    excessive_buffer_overrun_errors: Counter | None = None
    vl15_dropped: Counter | None = None
    qp1_dropped: Counter | None = None
    port_xmit_data: Counter | None = None
    port_rcv_data: Counter | None = None
    port_xmit_pkts: Counter | None = None
    port_rcv_pkts: Counter | None = None
    port_xmit_wait: Counter | None = None
    counters: dict[str, Counter] = {}


class PerfqueryReport(ToolResult):
    """Every counter block perfquery printed."""

    blocks: list[PortCounters] = []


def parse(text: str) -> PerfqueryReport:
    """Parse ``perfquery`` output."""
    blocks: list[dict[str, object]] = []
    for lineno, line in lines(text):
        if not line.strip():
            continue
        if match := _HEADER.match(line):
            blocks.append(
                {
                    "extended": bool(match["ext"]),
                    "lid": int(match["lid"]),
                    "port": int(match["port"]),
                    "cap_mask": match["cap"],
                    "cap_mask2": match["cap2"],
                    "counters": {},
                }
            )
        elif blocks and (match := _COUNTER.match(line)):
            try:
                value = to_int(match["value"])
            except ValueError as err:
                raise ParseError(TOOL, lineno, "an integer counter value", line) from err
            blocks[-1]["counters"][match["name"]] = value  # type: ignore[index]
            if field := FIELDS.get(match["name"]):
                blocks[-1][field] = value
        elif blocks and (reason := failure_line(line, [_IBWARN])):  # gave up after the blocks
            failures = [ln.strip() for _, ln in lines(text) if "iberror" in ln]
            return failed(TOOL, PerfqueryReport, {"blocks": blocks}, (failures or [reason])[0])
        elif not blocks and (reason := find_failure(text)):
            failures = [ln.strip() for _, ln in lines(text) if "iberror" in ln]
            return PerfqueryReport(ok=False, reason=failures[0] if failures else reason)
        else:
            raise ParseError(TOOL, lineno, "'# Port counters: ...' or 'Name:....value'", line)
    if not blocks:
        lineno, line = first_content_line(text)
        raise ParseError(TOOL, lineno, "'# Port counters: Lid N port N (CapMask: 0x...)'", line)
    return build(TOOL, PerfqueryReport, {"blocks": blocks}, text=text)
