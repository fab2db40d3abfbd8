"""``ethtool <netdev>``: link settings (speed, duplex, link modes, FEC, link detected)."""

from __future__ import annotations

import re

from fabric.parsers.common import (
    ParseError,
    ToolResult,
    build,
    failure_line,
    find_failure,
    lines,
)

TOOL = "ethtool"

_HEADER = re.compile(r"^Settings for (?P<name>\S+):\s*$")
_FIELD = re.compile(r"^\t(?P<key>[A-Za-z][^:]*?):\s*(?P<value>.*?)\s*$")
_CONTINUATION = re.compile(r"^\t\s+(?P<value>\S.*?)\s*$")
#: ethtool's own failure lines (``Cannot get device settings: ...``), beyond the shared ones.
_FAILURES = (re.compile(r"^Cannot .*"), re.compile(r".*: No data"))
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
    reason: str | None = None
    for lineno, line in lines(text):
        if not line.strip():
            continue
        if match := _HEADER.match(line):
            name = match["name"]
        elif name is None:
            if reason := find_failure(text, _FAILURES):
                return EthtoolSettings(ok=False, reason=reason)
            raise ParseError(TOOL, lineno, "'Settings for <netdev>:'", line)
        elif (match := _CONTINUATION.match(line)) and key in _LIST_KEYS:
            settings[key].extend(match["value"].split())  # type: ignore[union-attr]
        elif match := _FIELD.match(line):
            key = match["key"]
            value = match["value"]
            settings[key] = value.split() if key in _LIST_KEYS else value
        elif failure := failure_line(line, _FAILURES):
            reason = reason or failure
        else:
            raise ParseError(TOOL, lineno, "'\\t<setting>: <value>'", line)
    if name is None:
        raise ParseError(TOOL, 0, "'Settings for <netdev>:'")
    if reason is None and "Link detected" not in settings:
        reason = (
            "ethtool: no 'Link detected:' line (ethtool prints it last): the output was cut short"
        )
    speed = str(settings.get("Speed", ""))
    data: dict[str, object] = {
        "interface": name,
        "speed_mbps": int(speed[:-4])
        if speed.endswith("Mb/s") and speed[:-4].isdecimal()
        else None,
        "duplex": settings.get("Duplex"),
        "lanes": int(str(settings["Lanes"]))
        if str(settings.get("Lanes", "")).isdecimal()
        else None,
        "port": settings.get("Port"),
        "auto_negotiation": _yes(str(settings.get("Auto-negotiation", ""))),
        "link_detected": _yes(str(settings.get("Link detected", ""))),
        "settings": settings,
        "ok": reason is None,
        "reason": reason,
    }
    for key_ in _LIST_KEYS:
        field = key_.lower().replace(" ", "_")
        if field in EthtoolSettings.model_fields:
            data[field] = settings.get(key_, [])
    return build(TOOL, EthtoolSettings, data, text=text)
