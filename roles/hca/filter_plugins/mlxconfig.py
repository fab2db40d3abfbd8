"""hca role filters over ``mlxconfig`` / ``mstconfig`` query output: a thin adapter over
:mod:`fabric.parsers.mlxconfig` (railyard is installed in the .venv that runs Ansible).

``mlxconfig_params(text, column="Next Boot")``  ``{PARAM: cell}`` (``{}`` for output that does not parse)
``mlxconfig_diff(current, wanted)``             ``{PARAM: wanted}`` for each wanted value not held
``mlxconfig_value_matches(current, wanted)``    whether one cell holds one wanted value
``mlxconfig_reboot_pending(text, names=None)``  parameters set but not yet current (``query -e``)
``mlxconfig_set_args(changes)``                 ``["NAME=value", ...]`` for ``mlxconfig set``
"""

from __future__ import annotations

from fabric.parsers.common import ParseError
from fabric.parsers.mlxconfig import MlxconfigReport, diff, parse, value_matches


def _report(text: str) -> MlxconfigReport | None:
    try:
        report = parse(str(text))
    except ParseError:
        return None
    return report if report.ok else None


def mlxconfig_params(text: str, column: str = "Next Boot") -> dict[str, str]:
    report = _report(text)
    return report.params(column) if report else {}


def mlxconfig_reboot_pending(text: str, names: list[str] | None = None) -> list[str]:
    report = _report(text)
    return report.reboot_pending(names) if report else []


def mlxconfig_diff(current: dict, wanted: dict) -> dict:
    return diff(current or {}, wanted or {})


def mlxconfig_set_args(changes: dict) -> list[str]:
    """``{"SRIOV_EN": True}`` -> ``["SRIOV_EN=True"]`` (mlxconfig spells booleans True/False)."""
    return [f"{name}={value}" for name, value in (changes or {}).items()]


class FilterModule:
    """Ansible entry point."""

    def filters(self):
        return {
            "mlxconfig_params": mlxconfig_params,
            "mlxconfig_diff": mlxconfig_diff,
            "mlxconfig_value_matches": value_matches,
            "mlxconfig_set_args": mlxconfig_set_args,
            "mlxconfig_reboot_pending": mlxconfig_reboot_pending,
        }
