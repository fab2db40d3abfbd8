"""``ibv_devinfo`` and ``ibv_devinfo -v`` (detected from the verbose-only fields)."""

from __future__ import annotations

import re

from fabric.parsers.common import (
    Model,
    Number,
    ParseError,
    ToolResult,
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

TOOL = "ibv_devinfo"

_HCA = re.compile(r"^hca_id:\s*(?P<name>\S+)\s*$")
_PORT = re.compile(r"^\s+port:\s*(?P<port>\d+)\s*$")
_GID = re.compile(r"^\s+GID\[\s*(?P<index>\d+)\]:\s*(?P<gid>\S+)\s*$")
_FIELD = re.compile(r"^\s+(?P<key>[A-Za-z_][A-Za-z0-9_]*):\s+(?P<value>\S.*?)\s*$")
_CODED = re.compile(r"^(?P<text>.*?)\s*\((?P<code>\d+)\)$")

#: Fields only ``ibv_devinfo -v`` prints.
VERBOSE_FIELDS = frozenset({"max_mr_size", "max_qp", "max_msg_sz", "port_cap_flags"})


class DevinfoPort(Model):
    """One ``port: N`` stanza."""

    port: int
    state: str
    max_mtu: int
    active_mtu: int
    sm_lid: int
    port_lid: int
    port_lmc: int
    link_layer: str
    active_width: str | None = None
    active_speed_gbps: Number | None = None
    physical_state: str | None = None
    gids: dict[int, str] = {}
    attributes: dict[str, str] = {}


class DevinfoDevice(Model):
    """One ``hca_id:`` stanza."""

    hca_id: str
    transport: str
    fw_ver: str
    node_guid: str
    sys_image_guid: str
    vendor_id: str
    vendor_part_id: int
    hw_ver: str
    board_id: str | None = None
    phys_port_cnt: int
    ports: list[DevinfoPort]
    attributes: dict[str, str] = {}


class DevinfoReport(ToolResult):
    """Every device ibv_devinfo printed; ``verbose`` when it was ``-v`` output."""

    verbose: bool = False
    devices: list[DevinfoDevice] = []


_DEVICE_KEYS = {
    "transport",
    "fw_ver",
    "node_guid",
    "sys_image_guid",
    "vendor_id",
    "vendor_part_id",
    "hw_ver",
    "board_id",
    "phys_port_cnt",
}
_PORT_KEYS = {"state", "max_mtu", "active_mtu", "sm_lid", "port_lid", "port_lmc", "link_layer"}


def _coded(value: str) -> str:
    """``"4096 (5)"`` -> ``"4096"``; ``"4X (2)"`` -> ``"4X"``."""
    match = _CODED.match(value)
    return match["text"] if match else value


def _device_field(device: dict[str, object], key: str, value: str) -> None:
    if key not in _DEVICE_KEYS:
        device["attributes"][key] = value  # type: ignore[index]
    elif key in {"node_guid", "sys_image_guid"}:
        device[key] = normalize_guid(value)
    elif key in {"vendor_part_id", "phys_port_cnt"}:
        device[key] = int(value)
    else:
        device[key] = value


def _port_field(port: dict[str, object], key: str, value: str) -> None:
    if key == "state":
        port["state"] = normalize_state(value)
    elif key in {"max_mtu", "active_mtu", "sm_lid", "port_lid", "port_lmc"}:
        port[key] = to_int(_coded(value))
    elif key == "link_layer":
        port["link_layer"] = normalize_link_layer(value)
    elif key == "active_width":
        port["active_width"] = _coded(value)
    elif key == "active_speed":
        port["active_speed_gbps"] = number(_coded(value).removesuffix("Gbps").strip())
    elif key == "phys_state":
        port["physical_state"] = normalize_phys_state(value)
    else:
        port["attributes"][key] = value  # type: ignore[index]


def parse(text: str) -> DevinfoReport:
    """Parse ``ibv_devinfo`` or ``ibv_devinfo -v`` output."""
    devices: list[dict[str, object]] = []
    port: dict[str, object] | None = None
    verbose = False
    for lineno, line in lines(text):
        if not line.strip():
            continue
        if match := _HCA.match(line):
            devices.append({"hca_id": match["name"], "ports": [], "attributes": {}})
            port = None
            continue
        if not devices:
            if reason := find_failure(text):
                return DevinfoReport(ok=False, reason=reason)
            raise ParseError(TOOL, lineno, "'hca_id: <device>'", line)
        if match := _PORT.match(line):
            port = {"port": int(match["port"]), "gids": {}, "attributes": {}}
            devices[-1]["ports"].append(port)  # type: ignore[union-attr]
            continue
        if port is not None and (match := _GID.match(line)):
            port["gids"][int(match["index"])] = match["gid"]  # type: ignore[index]
            continue
        match = _FIELD.match(line)
        if not match:
            if reason := failure_line(line):  # the tool gave up after the devices above
                return _report(devices, verbose, reason, text=text)
            if port is not None:
                raise ParseError(TOOL, lineno, "'<port field>: <value>'", line)
            continue  # verbose-only capability lists and banners
        key, value = match["key"], match["value"]
        verbose = verbose or key in VERBOSE_FIELDS
        try:
            if port is not None:
                _port_field(port, key, value)
            else:
                _device_field(devices[-1], key, value)
        except ValueError as err:
            raise ParseError(TOOL, lineno, f"a valid {key}", line) from err
    if not devices:
        raise ParseError(TOOL, 0, "'hca_id: <device>'")
    return _report(devices, verbose, text=text)


def _report(
    devices: list[dict[str, object]],
    verbose: bool,
    reason: str | None = None,
    text: str | None = None,
) -> DevinfoReport:
    """The report; not ok with ``reason`` (the tool's own failure), or when a device lists
    fewer ports than its ``phys_port_cnt`` promised (the output was cut short)."""
    for device in devices:
        promised, listed = device.get("phys_port_cnt"), len(device["ports"])  # type: ignore[arg-type]
        if reason is None and isinstance(promised, int) and listed < promised:
            reason = (
                f"ibv_devinfo: {device['hca_id']} lists {listed} of its {promised} ports: "
                "the output was cut short"
            )
    data = {"verbose": verbose, "devices": devices, "ok": reason is None, "reason": reason}
    return build(TOOL, DevinfoReport, data, text=text)
