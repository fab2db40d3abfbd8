"""``/sys/class/infiniband`` files, captured as ``relative/path:content`` lines.

Paths are relative to ``/sys/class/infiniband``: ``mlx5_0/fw_ver``,
``mlx5_0/ports/1/rate``, ``mlx5_0/ports/1/counters/symbol_error`` ...
"""

from __future__ import annotations

import re

from fabric.parsers.common import (
    Model,
    Number,
    ParseError,
    ToolResult,
    build,
    lines,
    normalize_link_layer,
    normalize_phys_state,
    normalize_state,
    parse_rate,
)

TOOL = "sysfs"

_LINE = re.compile(r"^(?P<path>[A-Za-z0-9_.\-]+(?:/[A-Za-z0-9_.\-]+)*):(?P<value>.*)$")
_PORT_PATH = re.compile(r"^ports/(?P<port>\d+)/(?P<rest>.+)$")


class SysfsPort(Model):
    """``<dev>/ports/<n>/...``: state files and counters."""

    port: int
    state: str | None = None
    physical_state: str | None = None
    rate_gbps: Number | None = None
    width: str | None = None
    speed: str | None = None
    link_layer: str | None = None
    counters: dict[str, int] = {}
    hw_counters: dict[str, int] = {}


class SysfsDevice(Model):
    """``<dev>/...``: device attributes and ports."""

    name: str
    attributes: dict[str, str] = {}
    ports: list[SysfsPort] = []


class SysfsReport(ToolResult):
    """Every device seen in the captured paths, in first-seen order."""

    devices: list[SysfsDevice] = []


def _port_file(port: dict[str, object], rest: str, value: str, lineno: int, line: str) -> None:
    if rest == "state":
        port["state"] = normalize_state(value)
    elif rest == "phys_state":
        port["physical_state"] = normalize_phys_state(value)
    elif rest == "link_layer":
        port["link_layer"] = normalize_link_layer(value)
    elif rest == "rate":
        rate = parse_rate(value)
        if rate is None:
            raise ParseError(TOOL, lineno, "a rate like '400 Gb/sec (4X NDR)'", line)
        port.update(rate.model_dump())
    elif rest.startswith(("counters/", "hw_counters/")):
        group, name = rest.split("/", 1)
        try:
            port[group][name] = int(value)  # type: ignore[index]
        except ValueError as err:
            raise ParseError(TOOL, lineno, "an integer counter", line) from err
    # other port files (lid, sm_lid, gids/...) are not modelled


def parse(text: str) -> SysfsReport:
    """Parse ``relative/path:content`` lines of /sys/class/infiniband."""
    devices: dict[str, dict[str, object]] = {}
    for lineno, line in lines(text):
        if not line.strip():
            continue
        match = _LINE.match(line)
        if not match or "/" not in match["path"]:
            raise ParseError(TOOL, lineno, "'<device>/<file>:<content>'", line)
        name, rest = match["path"].split("/", 1)
        value = match["value"].strip()
        device = devices.setdefault(name, {"name": name, "attributes": {}, "ports": {}})
        if port_match := _PORT_PATH.match(rest):
            number_ = int(port_match["port"])
            ports: dict[int, dict[str, object]] = device["ports"]  # type: ignore[assignment]
            port = ports.setdefault(number_, {"port": number_, "counters": {}, "hw_counters": {}})
            _port_file(port, port_match["rest"], value, lineno, line)
        else:
            device["attributes"][rest] = value  # type: ignore[index]
    if not devices:
        raise ParseError(TOOL, 0, "'<device>/<file>:<content>' lines")
    for device in devices.values():
        device["ports"] = list(device["ports"].values())  # type: ignore[union-attr]
    return build(TOOL, SysfsReport, {"devices": list(devices.values())}, text=text)
