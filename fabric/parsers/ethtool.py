"""``ethtool <netdev>``: link settings (speed, duplex, link modes, FEC, link detected)."""

from __future__ import annotations

import re

from fabric.parsers.common import ParseError, ToolResult, build, find_failure, lines

TOOL = "ethtool"

_HEADER = re.compile(r"^Settings for (?P<name>\S+):\s*$")
_FIELD = re.compile(r"^\t(?P<key>[A-Za-z][^:]*?):\s*(?P<value>.*?)\s*$")
_CONTINUATION = re.compile(r"^\t\s+(?P<value>\S.*?)\s*$")
_LIST_KEYS = {
    "Supported link modes",
    "Advertised link modes",
    "Link partner advertised link modes",
    "Supported FEC modes",
    "Advertised FEC modes",
    "Link partner advertised FEC modes",
}


class EthtoolSettings(ToolResult):
    """One ``Settings for <netdev>:`` block; ``speed_mbps`` None when Unknown."""

    interface: str | None = None
    speed_mbps: int | None = None
    duplex: str | None = None
    lanes: int | None = None
    port: str | None = None
    auto_negotiation: bool | None = None
    link_detected: bool | None = None
    supported_link_modes: list[str] = []
    advertised_link_modes: list[str] = []
    supported_fec_modes: list[str] = []
    advertised_fec_modes: list[str] = []
    settings: dict[str, str | list[str]] = {}


def _yes(value: str) -> bool | None:
    return {"yes": True, "on": True, "no": False, "off": False}.get(value.lower())


def parse(text: str) -> EthtoolSettings:
    """Parse ``ethtool <netdev>`` output."""
    name: str | None = None
    settings: dict[str, str | list[str]] = {}
    key: str | None = None
    for lineno, line in lines(text):
        if not line.strip():
            continue
        if match := _HEADER.match(line):
            name = match["name"]
        elif name is None:
            if reason := find_failure(
                text, [re.compile(r"^Cannot .*"), re.compile(r".*: No data")]
            ):
                return EthtoolSettings(ok=False, reason=reason)
            raise ParseError(TOOL, lineno, "'Settings for <netdev>:'", line)
        elif (match := _CONTINUATION.match(line)) and key in _LIST_KEYS:
            settings[key].extend(match["value"].split())  # type: ignore[union-attr]
        elif match := _FIELD.match(line):
            key = match["key"]
            value = match["value"]
            settings[key] = value.split() if key in _LIST_KEYS else value
        else:
            raise ParseError(TOOL, lineno, "'\\t<setting>: <value>'", line)
    if name is None:
        raise ParseError(TOOL, 0, "'Settings for <netdev>:'")
    speed = str(settings.get("Speed", ""))
    data: dict[str, object] = {
        "interface": name,
        "speed_mbps": int(speed.removesuffix("Mb/s")) if speed.endswith("Mb/s") else None,
        "duplex": settings.get("Duplex"),
        "lanes": int(str(settings["Lanes"])) if str(settings.get("Lanes", "")).isdigit() else None,
        "port": settings.get("Port"),
        "auto_negotiation": _yes(str(settings.get("Auto-negotiation", ""))),
        "link_detected": _yes(str(settings.get("Link detected", ""))),
        "settings": settings,
    }
    for key_ in _LIST_KEYS:
        field = key_.lower().replace(" ", "_")
        if field in EthtoolSettings.model_fields:
            data[field] = settings.get(key_, [])
    return build(TOOL, EthtoolSettings, data)
