"""``ibstatus``: one stanza per device port (tabs, or spaces when pasted)."""

from __future__ import annotations

import re

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
    normalize_link_layer,
    normalize_phys_state,
    normalize_state,
    parse_rate,
    to_int,
)

TOOL = "ibstatus"

_HEADER = re.compile(r"^Infiniband device '(?P<device>[^']+)' port (?P<port>\d+) status:\s*$")
_FIELD = re.compile(r"^\s+(?P<key>[a-z_ ]+?):\s*(?P<value>.*?)\s*$")


class IbstatusPort(Model):
    """One ``Infiniband device 'X' port N status:`` stanza."""

    device: str
    port: int
    default_gid: str | None
    base_lid: int
    sm_lid: int
    state: str
    physical_state: str
    rate_gbps: Number
    width: str | None = None
    speed: str | None = None
    link_layer: str


class IbstatusReport(ToolResult):
    """Every port ibstatus printed."""

    ports: list[IbstatusPort] = []


def _field(port: dict[str, object], key: str, value: str, lineno: int, line: str) -> None:
    if key == "default gid":
        port["default_gid"] = None if value == "unknown" else value
    elif key in {"base lid", "sm lid"}:
        port[key.replace(" ", "_")] = to_int(value)
    elif key == "state":
        port["state"] = normalize_state(value)
    elif key == "phys state":
        port["physical_state"] = normalize_phys_state(value)
    elif key == "rate":
        rate = parse_rate(value)
        if rate is None:
            raise ParseError(TOOL, lineno, "a rate like '200 Gb/sec (4X HDR)'", line)
        port.update(rate.model_dump())
    elif key == "link_layer":
        port["link_layer"] = normalize_link_layer(value)
    else:
        raise ParseError(TOOL, lineno, "a known ibstatus field", line)


def parse(text: str) -> IbstatusReport:
    """Parse ``ibstatus`` output."""
    ports: list[dict[str, object]] = []
    for lineno, line in lines(text):
        if not line.strip():
            continue
        if match := _HEADER.match(line):
            ports.append({"device": match["device"], "port": int(match["port"])})
            continue
        match = _FIELD.match(line)
        if not ports or not match:
            if (reason := failure_line(line)) or (not ports and (reason := find_failure(text))):
                return failed(TOOL, IbstatusReport, {"ports": ports}, reason)
            raise ParseError(TOOL, lineno, "\"Infiniband device '<dev>' port <n> status:\"", line)
        try:
            _field(ports[-1], match["key"], match["value"], lineno, line)
        except ValueError as err:
            if isinstance(err, ParseError):
                raise
            raise ParseError(TOOL, lineno, f"a valid {match['key']}", line) from err
    if not ports:
        raise ParseError(TOOL, 0, "an 'Infiniband device' stanza")
    return build(TOOL, IbstatusReport, {"ports": ports}, text=text)
