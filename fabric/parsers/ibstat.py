"""``ibstat``: CAs and their ports (tabs or spaces, as pasted)."""

from __future__ import annotations

import re

from fabric.parsers.common import (
    Model,
    Number,
    ParseError,
    build,
    failure_line,
    find_failure,
    lines,
    normalize_guid,
    normalize_link_layer,
    normalize_phys_state,
    normalize_state,
    number,
    to_int,
)

TOOL = "ibstat"

_CA = re.compile(r"^CA '(?P<name>[^']+)'\s*$")
_PORT = re.compile(r"^\s+Port (?P<port>\d+):\s*$")
_FIELD = re.compile(r"^\s+(?P<key>[A-Za-z][A-Za-z ]*?):\s*(?P<value>.*?)\s*$")


class IbstatPort(Model):
    """One port of a CA."""

    port: int
    state: str
    physical_state: str
    rate_gbps: Number
    link_layer: str
    base_lid: int
    sm_lid: int
    lmc: int | None = None
    capability_mask: str | None = None
    port_guid: str | None = None


class IbstatDevice(Model):
    """One CA (``CA 'mlx5_0'``)."""

    name: str
    type: str
    firmware: str
    ports: list[IbstatPort]
    number_of_ports: int | None = None
    hardware_version: str | None = None
    node_guid: str | None = None
    system_image_guid: str | None = None


class IbstatReport(Model):
    """Every CA ibstat printed; ``ok=False`` when ibstat panicked."""

    devices: list[IbstatDevice]
    ok: bool = True
    reason: str | None = None


_DEVICE_KEYS = {
    "CA type": "type",
    "Number of ports": "number_of_ports",
    "Firmware version": "firmware",
    "Hardware version": "hardware_version",
    "Node GUID": "node_guid",
    "System image GUID": "system_image_guid",
}
_PORT_KEYS = {
    "State": "state",
    "Physical state": "physical_state",
    "Rate": "rate_gbps",
    "Base lid": "base_lid",
    "LMC": "lmc",
    "SM lid": "sm_lid",
    "Capability mask": "capability_mask",
    "Port GUID": "port_guid",
    "Link layer": "link_layer",
}


def _port_value(key: str, value: str) -> object:
    if key in {"base_lid", "sm_lid", "lmc"}:
        return to_int(value)
    if key == "rate_gbps":
        return number(value)
    if key == "state":
        return normalize_state(value)
    if key == "physical_state":
        return normalize_phys_state(value)
    if key == "link_layer":
        return normalize_link_layer(value)
    if key == "port_guid":
        return normalize_guid(value)
    return value


def _device_value(key: str, value: str) -> object:
    if key == "number_of_ports":
        return int(value)
    if key in {"node_guid", "system_image_guid"}:
        return normalize_guid(value)
    return value


def parse(text: str) -> IbstatReport:
    """Parse ``ibstat`` output."""
    devices: list[dict[str, object]] = []
    port: dict[str, object] | None = None
    for lineno, line in lines(text):
        if not line.strip():
            continue
        if match := _CA.match(line):
            devices.append({"name": match["name"], "ports": []})
            port = None
            continue
        if not devices:
            if reason := find_failure(text):
                return IbstatReport(devices=[], ok=False, reason=reason)
            raise ParseError(TOOL, lineno, "\"CA '<name>'\"", line)
        if match := _PORT.match(line):
            port = {"port": int(match["port"])}
            devices[-1]["ports"].append(port)  # type: ignore[union-attr]
            continue
        match = _FIELD.match(line)
        if not match:
            if reason := failure_line(line):  # ibstat gave up after the CAs above
                return _report(devices, reason, text=text)
            raise ParseError(TOOL, lineno, "'<field>: <value>'", line)
        key, value = match["key"], match["value"]
        try:
            if port is not None and key in _PORT_KEYS:
                port[_PORT_KEYS[key]] = _port_value(_PORT_KEYS[key], value)
            elif port is None and key in _DEVICE_KEYS:
                devices[-1][_DEVICE_KEYS[key]] = _device_value(_DEVICE_KEYS[key], value)
            else:
                raise ParseError(TOOL, lineno, "a known ibstat field", line)
        except ValueError as err:
            if isinstance(err, ParseError):
                raise
            raise ParseError(TOOL, lineno, f"a valid {key}", line) from err
    if not devices:
        raise ParseError(TOOL, 0, "\"CA '<name>'\"")
    return _report(devices, text=text)


def _report(
    devices: list[dict[str, object]], reason: str | None = None, text: str | None = None
) -> IbstatReport:
    """The report; not ok with ``reason`` (ibstat's own failure), or when a CA lists fewer
    ports than its ``Number of ports`` promised (the output was cut short)."""
    for device in devices:
        promised, listed = device.get("number_of_ports"), len(device["ports"])  # type: ignore[arg-type]
        if reason is None and isinstance(promised, int) and listed < promised:
            reason = (
                f"ibstat: CA '{device['name']}' lists {listed} of its {promised} ports: "
                "the output was cut short"
            )
    data = {"devices": devices, "ok": reason is None, "reason": reason}
    return build(TOOL, IbstatReport, data, text=text)
