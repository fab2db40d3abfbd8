"""Filters that read ``mlxconfig`` / ``mstconfig`` output and compare it with wanted settings.

``mlxconfig -d <dev> query`` (MFT) and ``mstconfig -d <dev> query`` (mstflint) print the same
layout::

    Device #1:
    ----------

    Device type:    ConnectX6
    Device:         b1:00.0

    Configurations:                              Next Boot       New
             SRIOV_EN                            False(0)        True(1)
             NUM_OF_VFS                          0               2

The ``Configurations:`` header names the value columns (``Next Boot``; ``Default Current
Next Boot`` with ``-e``; ``Next Boot New`` after ``set``). Each parameter row is indented and
its cells are separated by two or more spaces. A value is either a plain number (``16``) or a
label with its number (``IB(1)``, ``True(1)``). ``-e`` marks rows that differ from the default
with a leading ``*``.

Filters:

``mlxconfig_devices(text)``
    every device block: ``{"index", "device_type", "name", "description", "device",
    "columns", "params": {PARAM: {column: value}}}``
``mlxconfig_params(text, column="Next Boot")``
    ``{PARAM: value}`` of the first device (rows of a header-less, grep-filtered query too)
``mlxconfig_diff(current, wanted)``
    ``{PARAM: wanted_value}`` for every wanted parameter whose current value differs
``mlxconfig_value_matches(current, wanted)``
    whether one current cell satisfies one wanted value
``mlxconfig_reboot_pending(text, names=None)``
    parameters set for the next boot but not yet current (needs ``query -e`` output)
``mlxconfig_set_args(changes)``
    ``["NAME=value", ...]`` arguments for ``mlxconfig set``
"""

from __future__ import annotations

import re

_SPLIT = re.compile(r"\s{2,}")
_LABELLED = re.compile(r"^(?P<label>.*?)\((?P<number>-?\d+)\)$")
_DEVICE = re.compile(r"^Device #(?P<index>\d+):\s*$")
_HEADER_KEYS = {
    "Device type": "device_type",
    "Name": "name",
    "Description": "description",
    "Device": "device",
}
_TRUE = {"true", "yes", "on", "enabled", "1"}
_FALSE = {"false", "no", "off", "disabled", "0"}


def _new_device(index: int) -> dict:
    return {
        "index": index,
        "device_type": None,
        "name": None,
        "description": None,
        "device": None,
        "columns": [],
        "params": {},
    }


def mlxconfig_devices(text: str) -> list[dict]:
    """Parse the whole output into one dict per ``Device #N:`` block."""
    devices: list[dict] = []
    current: dict | None = None
    in_config = False
    for raw in str(text).splitlines():
        line = raw.rstrip()
        if not line.strip():
            continue
        match = _DEVICE.match(line.strip())
        if match:
            current = _new_device(int(match.group("index")))
            devices.append(current)
            in_config = False
            continue
        if set(line.strip()) == {"-"}:
            continue
        if current is None:
            # A grep-filtered query has neither header nor ``Configurations:`` line.
            current = _new_device(1)
            current["columns"] = ["Next Boot"]
            devices.append(current)
            in_config = True
        stripped = line.strip()
        if stripped.startswith("Configurations:"):
            cells = _SPLIT.split(stripped)
            current["columns"] = [c for c in cells[1:] if c] or ["Next Boot"]
            in_config = True
            continue
        if not in_config and not line[0].isspace() and ":" in stripped:
            key, _, value = stripped.partition(":")
            field = _HEADER_KEYS.get(key.strip())
            if field:
                current[field] = value.strip()
            continue
        if in_config and line[0].isspace():
            cells = _SPLIT.split(stripped)
            name = cells[0].lstrip("*").strip()
            values = cells[1:]
            if not name or not values:
                continue
            columns = current["columns"] or ["Next Boot"]
            current["params"][name] = {
                columns[i] if i < len(columns) else f"column{i}": value
                for i, value in enumerate(values)
            }
    return devices


def mlxconfig_params(text: str, column: str = "Next Boot") -> dict:
    """``{PARAM: value}`` of the first device, from ``column`` (default: the next-boot value)."""
    devices = mlxconfig_devices(text)
    if not devices:
        return {}
    result = {}
    for name, cells in devices[0]["params"].items():
        if column in cells:
            result[name] = cells[column]
        elif cells:
            result[name] = list(cells.values())[-1]
    return result


def _split_value(cell: str) -> tuple[str, str | None]:
    """``"IB(1)"`` -> ``("IB", "1")``; ``"16"`` -> ``("16", None)``."""
    cell = str(cell).strip()
    match = _LABELLED.match(cell)
    if match:
        return match.group("label").strip(), match.group("number")
    return cell, None


def _as_bool(value) -> bool | None:
    text = str(value).strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    return None


def mlxconfig_value_matches(current, wanted) -> bool:
    """Whether the current cell (``IB(1)``, ``True(1)``, ``16``) already holds ``wanted``.

    ``wanted`` may be the label (``IB``, case-insensitive), the number (``1``), the full cell
    (``IB(1)``), a boolean spelling (``true``/``"True"``/``yes``/``on``) for ``True(1)``/``False(0)``
    cells, or a number in another base (``0x10`` for ``16``).
    """
    if current is None:
        return False
    label, number = _split_value(current)
    if isinstance(wanted, bool):
        wanted = "True" if wanted else "False"
    wanted_text = str(wanted).strip()
    wanted_label, wanted_number = _split_value(wanted_text)
    if wanted_number is not None:
        return number == wanted_number if number is not None else label == wanted_number
    if label.lower() == wanted_text.lower():
        return True
    if number is not None and number == wanted_text:
        return True
    if label.lower() in ("true", "false"):
        wanted_bool = _as_bool(wanted_text)
        return wanted_bool is not None and wanted_bool == (label.lower() == "true")
    try:
        return int(label, 0) == int(wanted_text, 0)
    except ValueError:
        return False


def mlxconfig_diff(current: dict, wanted: dict) -> dict:
    """Wanted parameters whose current value differs, or that the device does not report.

    ``current`` is ``mlxconfig_params`` output; ``wanted`` the role's ``hca_mlxconfig`` dict.
    """
    changes = {}
    for name, value in (wanted or {}).items():
        if not mlxconfig_value_matches((current or {}).get(name), value):
            changes[name] = value
    return changes


def mlxconfig_reboot_pending(text: str, names=None) -> list[str]:
    """Parameters whose ``Next Boot`` value differs from their ``Current`` one (``query -e``).

    Such a setting was made but the adapter has not been reset since, so a reboot is still
    needed. Only ``names`` are looked at when given. Output without a ``Current`` column
    (a plain ``query``) tells nothing, so the answer is then empty.
    """
    devices = mlxconfig_devices(text)
    if not devices:
        return []
    pending = []
    for name, cells in devices[0]["params"].items():
        if names and name not in names:
            continue
        if "Current" in cells and "Next Boot" in cells and cells["Current"] != cells["Next Boot"]:
            pending.append(name)
    return pending


def mlxconfig_set_args(changes: dict) -> list[str]:
    """``{"SRIOV_EN": True}`` -> ``["SRIOV_EN=True"]`` for ``mlxconfig set``."""
    args = []
    for name, value in (changes or {}).items():
        if isinstance(value, bool):
            value = "True" if value else "False"
        args.append(f"{name}={value}")
    return args


class FilterModule:
    """Ansible entry point."""

    def filters(self):
        return {
            "mlxconfig_devices": mlxconfig_devices,
            "mlxconfig_params": mlxconfig_params,
            "mlxconfig_diff": mlxconfig_diff,
            "mlxconfig_value_matches": mlxconfig_value_matches,
            "mlxconfig_set_args": mlxconfig_set_args,
            "mlxconfig_reboot_pending": mlxconfig_reboot_pending,
        }
