"""``mlxconfig -d <dev> query`` (also its ``set`` confirmation table and grep'd rows)."""

from __future__ import annotations

import re

from fabric.parsers.common import Model, ParseError, ToolResult, build, find_failure, lines

TOOL = "mlxconfig"

_DEVICE_NO = re.compile(r"^Device #(?P<n>\d+):\s*$")
_RULE = re.compile(r"^-+\s*$")
_INFO = re.compile(
    r"^(?P<key>Device type|Name|Description|Device|PCI device):\s+(?P<value>.*?)\s*$"
)
_CONFIGS = re.compile(r"^Configurations:\s+(?P<columns>.*?)\s*$")
_ROW = re.compile(r"^\s+(?P<name>[A-Z][A-Z0-9_]*(?:\[\d+(?:\.\.\d+)?\])?)\s+(?P<values>\S.*?)\s*$")
_VALUE = re.compile(r"^(?P<label>.*?)\((?P<code>-?\d+)\)$")
_COLUMN_SPLIT = re.compile(r"\s{2,}")


class MlxconfigValue(Model):
    """``True(1)`` -> label ``True``, code 1; ``16`` -> label None, code 16."""

    raw: str
    label: str | None = None
    code: int | None = None


class MlxconfigSetting(Model):
    """One configuration row: a value per column (``Next Boot``, ``New``, ...)."""

    name: str
    values: list[MlxconfigValue]


class MlxconfigReport(ToolResult):
    """The device header and its configuration rows."""

    device_index: int | None = None
    device_type: str | None = None
    name: str | None = None
    description: str | None = None
    device: str | None = None
    columns: list[str] = []
    settings: list[MlxconfigSetting] = []

    def value(self, name: str) -> MlxconfigValue | None:
        """The last column's value of setting ``name`` (``Next Boot`` or ``New``)."""
        for setting in self.settings:
            if setting.name == name:
                return setting.values[-1]
        return None


def _value(raw: str) -> dict[str, object]:
    if match := _VALUE.match(raw):
        return {"raw": raw, "label": match["label"], "code": int(match["code"])}
    if re.fullmatch(r"-?\d+", raw):
        return {"raw": raw, "code": int(raw)}
    return {"raw": raw}


def parse(text: str) -> MlxconfigReport:
    """Parse ``mlxconfig`` query or set output."""
    data: dict[str, object] = {"settings": []}
    settings: list[dict[str, object]] = data["settings"]  # type: ignore[assignment]
    keys = {"Device type": "device_type", "Name": "name", "Description": "description"}
    for lineno, line in lines(text):
        if not line.strip() or _RULE.match(line):
            continue
        if match := _DEVICE_NO.match(line):
            data["device_index"] = int(match["n"])
        elif match := _INFO.match(line):
            data[keys.get(match["key"], "device")] = match["value"]
        elif match := _CONFIGS.match(line):
            data["columns"] = _COLUMN_SPLIT.split(match["columns"])
        elif match := _ROW.match(line):
            values = [_value(v) for v in match["values"].split()]
            settings.append({"name": match["name"], "values": values})
        else:
            if not settings and (reason := find_failure(text)):
                return MlxconfigReport(ok=False, reason=reason)
            raise ParseError(TOOL, lineno, "a 'Device #N:' header or a configuration row", line)
    if not settings:
        if reason := find_failure(text):
            return MlxconfigReport(ok=False, reason=reason)
        raise ParseError(TOOL, 0, "at least one configuration row")
    return build(TOOL, MlxconfigReport, data)
