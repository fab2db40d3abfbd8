"""``mlxconfig -d <dev> query`` (also ``query -e``, the ``set`` confirmation table and grep'd rows).

``mstconfig`` (mstflint) prints the same layout. ``Configurations:`` names the value columns
(``Next Boot``; ``Default Current Next Boot`` with ``-e``; ``Next Boot New`` after ``set``); a
grep-filtered query has rows only. With ``-e`` a row whose next-boot value differs from its
default or current one starts with ``*`` (``RO`` marks read-only rows), and a footer line
explains the marks. One device per text (run it with ``-d``): a second ``Device #N:`` header is
a ParseError.

Beyond the model, this module answers what the hca role asks (its filter plugin is a thin
adapter): :meth:`MlxconfigReport.params`, :meth:`MlxconfigReport.reboot_pending`,
:func:`value_matches` and :func:`diff`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

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

TOOL = "mlxconfig"

_DEVICE_NO = re.compile(r"^Device #(?P<n>\d+):\s*$")
_RULE = re.compile(r"^-+\s*$")
_INFO = re.compile(
    r"^(?P<key>Device type|Name|Description|Device|PCI device):\s+(?P<value>.*?)\s*$"
)
_CONFIGS = re.compile(r"^Configurations:\s+(?P<columns>.*?)\s*$")
_ROW = re.compile(
    r"^(?P<modified>\*)?(?P<read_only>RO)?\s+(?P<name>[A-Z][A-Z0-9_]*(?:\[\d+(?:\.\.\d+)?\])?)"
    r"\s+(?P<values>\S.*?)\s*$"
)
_FOOTER = re.compile(r"^The '(?:\*|RO)' shows parameters .*$")
_VALUE = re.compile(r"^(?P<label>.*?)\((?P<code>-?\d+)\)$")
_COLUMN_SPLIT = re.compile(r"\s{2,}")
_TRUE = frozenset({"true", "yes", "on", "enabled", "1"})
_FALSE = frozenset({"false", "no", "off", "disabled", "0"})


class MlxconfigValue(Model):
    """``True(1)`` -> label ``True``, code 1; ``16`` -> label None, code 16."""

    raw: str
    label: str | None = None
    code: int | None = None


class MlxconfigSetting(Model):
    """One configuration row: a value per column (``Next Boot``, ``New``, ...).

    ``modified``: the row's ``*`` mark (``query -e``: next boot differs from default/current);
    ``read_only``: its ``RO`` mark.
    """

    name: str
    values: list[MlxconfigValue]
    modified: bool = False
    read_only: bool = False


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

    def params(self, column: str = "Next Boot") -> dict[str, str]:
        """``{NAME: raw cell}`` from ``column``; rows without it (a grep'd query has no header)
        give their last cell."""
        index = self.columns.index(column) if column in self.columns else -1
        return {
            s.name: s.values[index].raw if index < len(s.values) else s.values[-1].raw
            for s in self.settings
        }

    def reboot_pending(self, names: Iterable[str] | None = None) -> list[str]:
        """Settings (of ``names``, when given) whose ``Next Boot`` cell differs from their
        ``Current`` one: set, but the adapter was not reset since. Needs ``query -e`` output;
        without a ``Current`` column the answer is empty."""
        if "Current" not in self.columns or "Next Boot" not in self.columns:
            return []
        wanted = set(names) if names else None
        current, following = self.params("Current"), self.params("Next Boot")
        return [
            name
            for name in current
            if (wanted is None or name in wanted) and current[name] != following[name]
        ]


def _value(raw: str) -> dict[str, object]:
    if match := _VALUE.match(raw):
        return {"raw": raw, "label": match["label"], "code": int(match["code"])}
    if re.fullmatch(r"-?\d+", raw):
        return {"raw": raw, "code": int(raw)}
    return {"raw": raw}


def _split_cell(cell: str) -> tuple[str, str | None]:
    """``"IB(1)"`` -> ``("IB", "1")``; ``"16"`` -> ``("16", None)``."""
    cell = cell.strip()
    if match := _VALUE.match(cell):
        return match["label"].strip(), match["code"]
    return cell, None


def value_matches(current: str | None, wanted: object) -> bool:
    """Whether a cell (``IB(1)``, ``True(1)``, ``16``) already holds ``wanted``.

    ``wanted`` may be the label (``IB``, any case), the number (``1``), the whole cell
    (``IB(1)``), a boolean or its spelling (``true``, ``yes``, ``on``) for ``True(1)`` /
    ``False(0)`` cells, or a number in another base (``0x10`` for ``16``). ``None`` (a setting
    the device does not report) matches nothing.
    """
    if current is None:
        return False
    label, code = _split_cell(str(current))
    if isinstance(wanted, bool):
        wanted = "True" if wanted else "False"
    wanted_text = str(wanted).strip()
    _, wanted_code = _split_cell(wanted_text)
    if wanted_code is not None:
        return code == wanted_code if code is not None else label == wanted_code
    if label.lower() == wanted_text.lower() or (code is not None and code == wanted_text):
        return True
    if label.lower() in ("true", "false"):
        spelled = wanted_text.lower()
        wanted_bool = True if spelled in _TRUE else False if spelled in _FALSE else None
        return wanted_bool is not None and wanted_bool == (label.lower() == "true")
    try:
        return int(label, 0) == int(wanted_text, 0)
    except ValueError:
        return False


def diff(current: Mapping[str, str], wanted: Mapping[str, object]) -> dict[str, object]:
    """The ``wanted`` settings whose ``current`` cell (:meth:`MlxconfigReport.params`) does not
    hold them, or that the device does not report."""
    return {
        name: value for name, value in wanted.items() if not value_matches(current.get(name), value)
    }


def parse(text: str) -> MlxconfigReport:
    """Parse ``mlxconfig`` query or set output."""
    data: dict[str, object] = {"settings": []}
    settings: list[dict[str, object]] = data["settings"]  # type: ignore[assignment]
    keys = {"Device type": "device_type", "Name": "name", "Description": "description"}
    for lineno, line in lines(text):
        if not line.strip() or _RULE.match(line) or _FOOTER.match(line):
            continue
        if match := _DEVICE_NO.match(line):
            if "device_index" in data:
                raise ParseError(TOOL, lineno, "one device (run mlxconfig with -d <dev>)", line)
            data["device_index"] = int(match["n"])
        elif match := _INFO.match(line):
            data[keys.get(match["key"], "device")] = match["value"]
        elif match := _CONFIGS.match(line):
            data["columns"] = _COLUMN_SPLIT.split(match["columns"])
        elif match := _ROW.match(line):
            values = [_value(v) for v in match["values"].split()]
            settings.append(
                {
                    "name": match["name"],
                    "values": values,
                    "modified": match["modified"] is not None,
                    "read_only": match["read_only"] is not None,
                }
            )
        else:
            if (reason := failure_line(line)) or (not settings and (reason := find_failure(text))):
                return failed(TOOL, MlxconfigReport, data, reason)
            raise ParseError(TOOL, lineno, "a 'Device #N:' header or a configuration row", line)
    if not settings:
        if reason := find_failure(text):
            return MlxconfigReport(ok=False, reason=reason)
        raise ParseError(TOOL, 0, "at least one configuration row")
    return build(TOOL, MlxconfigReport, data, text=text)
