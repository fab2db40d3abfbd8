"""``ethtool -i <netdev>``: the netdev's driver, its version, firmware and PCI address."""

from __future__ import annotations

import re

from fabric.parsers.common import ParseError, ToolResult, build, find_failure, lines

TOOL = "ethtool_i"

_FIELD = re.compile(r"^(?P<key>[a-z][a-z-]*):[ \t]*(?P<value>.*?)\s*$")
_FAILURES = [re.compile(r"^Cannot .*"), re.compile(r".*No such device.*")]


class EthtoolDriver(ToolResult):
    """What ``ethtool -i`` reports; empty fields are ``None``."""

    driver: str | None = None
    version: str | None = None
    firmware_version: str | None = None
    bus_info: str | None = None
    fields: dict[str, str] = {}


def parse(text: str) -> EthtoolDriver:
    """Parse ``ethtool -i <netdev>`` output."""
    fields: dict[str, str] = {}
    for lineno, line in lines(text):
        if not line.strip():
            continue
        if match := _FIELD.match(line):
            fields[match["key"]] = match["value"]
            continue
        if not fields and (reason := find_failure(text, _FAILURES)):
            return EthtoolDriver(ok=False, reason=reason)
        raise ParseError(
            TOOL, lineno, "'<field>: <value>' (driver:, version:, bus-info: ...)", line
        )
    if "driver" not in fields:
        raise ParseError(TOOL, 0, "'driver: <name>'")
    return build(
        TOOL,
        EthtoolDriver,
        {
            "driver": fields["driver"] or None,
            "version": fields.get("version") or None,
            "firmware_version": fields.get("firmware-version") or None,
            "bus_info": fields.get("bus-info") or None,
            "fields": fields,
        },
    )
