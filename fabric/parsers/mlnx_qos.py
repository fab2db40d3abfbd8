"""``mlnx_qos -i <netdev>``: trust mode, DSCP map, PFC, buffers and traffic classes."""

from __future__ import annotations

import re

from fabric.parsers.common import (
    Model,
    ParseError,
    ToolResult,
    build,
    failed,
    failure_line,
    find_failure,
    lines,
)

TOOL = "mlnx_qos"

_KV = re.compile(r"^(?P<key>[A-Za-z][A-Za-z0-9 ()]*?):\s*(?P<value>.*?)\s*$")
_DSCP = re.compile(r"^\s+prio:(?P<prio>\d+)\s+dscp:(?P<dscp>[\d,]*)\s*$")
_PFC_ROW = re.compile(r"^\s+(?P<row>priority|enabled|buffer)\s+(?P<values>[\d\s]+?)\s*$")
_GBPS = re.compile(r"\d+(?:\.\d+)?\s*Gbps")
_TC = re.compile(
    r"^tc:\s*(?P<tc>\d+)\s+ratelimit:\s*(?P<limit>[^,]+),\s*tsa:\s*(?P<tsa>\w+)"
    r"(?:,\s*bw:\s*(?P<bw>\d+)%)?\s*$"
)
_TC_PRIO = re.compile(r"^\s+priority:\s*(?P<prio>\d+)\s*$")


class TrafficClass(Model):
    """One ``tc: N`` block; ``ratelimit_gbps`` None means unlimited."""

    tc: int
    ratelimit_gbps: float | None
    tsa: str
    bw_percent: int | None = None
    priorities: list[int] = []


class MlnxQosReport(ToolResult):
    """The QoS state mlnx_qos printed."""

    dcbx_mode: str | None = None
    trust: str | None = None
    default_priority: int | None = None
    receive_buffer_bytes: list[int] = []
    max_buffer_bytes: int | None = None
    cable_len: int | None = None
    dscp2prio: dict[int, list[int]] = {}
    pfc_enabled: dict[int, bool] = {}
    pfc_buffer: dict[int, int] = {}
    tcs: list[TrafficClass] = []

    @property
    def pfc_priorities(self) -> list[int]:
        """The priorities with PFC enabled, ascending (``[3]`` for a lossless priority 3)."""
        return sorted(prio for prio, on in self.pfc_enabled.items() if on)

    @property
    def priority_of_dscp(self) -> dict[int, int]:
        """DSCP value -> priority (the inverse of ``dscp2prio``; filled when trust is dscp)."""
        return {dscp: prio for prio, dscps in self.dscp2prio.items() for dscp in dscps}


_MAX_BUFFER = re.compile(r"^max_buffer_size=(?P<n>\d+)$")


def _ints(text: str, sep: str | None = None) -> list[int]:
    return [int(v) for v in text.split(sep) if v.strip()]


def parse(text: str) -> MlnxQosReport:
    """Parse ``mlnx_qos`` output."""
    data: dict[str, object] = {"dscp2prio": {}, "pfc_enabled": {}, "pfc_buffer": {}, "tcs": []}
    priorities: list[int] = []
    tcs: list[dict[str, object]] = data["tcs"]  # type: ignore[assignment]
    for lineno, line in lines(text):
        if not line.strip():
            continue
        if match := _TC.match(line):
            limit = match["limit"].strip()
            if limit != "unlimited" and not _GBPS.fullmatch(limit):
                raise ParseError(
                    TOOL, lineno, "a ratelimit such as 'unlimited' or '25.0 Gbps'", line
                )
            tcs.append(
                {
                    "tc": int(match["tc"]),
                    "ratelimit_gbps": (
                        None if limit == "unlimited" else float(limit.removesuffix("Gbps"))
                    ),
                    "tsa": match["tsa"],
                    "bw_percent": int(match["bw"]) if match["bw"] else None,
                    "priorities": [],
                }
            )
        elif (match := _TC_PRIO.match(line)) and tcs:
            tcs[-1]["priorities"].append(int(match["prio"]))  # type: ignore[attr-defined]
        elif match := _DSCP.match(line):
            data["dscp2prio"][int(match["prio"])] = _ints(match["dscp"], ",")  # type: ignore[index]
        elif match := _PFC_ROW.match(line):
            values = _ints(match["values"])
            if match["row"] == "priority":
                priorities = values
            elif len(values) != len(priorities):
                raise ParseError(TOOL, lineno, f"{len(priorities)} PFC values", line)
            elif match["row"] == "enabled":
                data["pfc_enabled"] = {p: v == 1 for p, v in zip(priorities, values, strict=True)}
            else:
                data["pfc_buffer"] = dict(zip(priorities, values, strict=True))
        elif match := _KV.match(line):
            key, value = match["key"], match["value"]
            if key == "DCBX mode":
                data["dcbx_mode"] = value
            elif key == "Priority trust state":
                data["trust"] = value
            elif key == "default priority":
                if value and not value.isdecimal():
                    raise ParseError(TOOL, lineno, "a priority number", line)
                data["default_priority"] = int(value) if value else None
            elif key == "Receive buffer size (bytes)":
                # newer MLNX_OFED ends the list with ``max_buffer_size=N``
                cells = [cell.strip() for cell in value.split(",") if cell.strip()]
                if cells and (match := _MAX_BUFFER.match(cells[-1])):
                    data["max_buffer_bytes"] = int(match["n"])
                    cells.pop()
                if not all(cell.isdecimal() for cell in cells):
                    raise ParseError(TOOL, lineno, "comma-separated buffer sizes", line)
                data["receive_buffer_bytes"] = [int(cell) for cell in cells]
            elif key == "Cable len":
                if not value.isdecimal():
                    raise ParseError(TOOL, lineno, "a cable length in metres", line)
                data["cable_len"] = int(value)
            elif key not in {"PFC configuration", "dscp2prio mapping"}:
                raise ParseError(TOOL, lineno, "a known mlnx_qos field", line)
        else:
            if (reason := failure_line(line)) or (not tcs and (reason := find_failure(text))):
                return failed(TOOL, MlnxQosReport, data, reason)
            raise ParseError(TOOL, lineno, "a mlnx_qos status line", line)
    if not tcs and "trust" not in data:
        if reason := find_failure(text):
            return MlnxQosReport(ok=False, reason=reason)
        raise ParseError(TOOL, 0, "'Priority trust state:' and 'tc:' lines")
    return build(TOOL, MlnxQosReport, data, text=text)
