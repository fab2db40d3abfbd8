"""``mlnx_qos_parse``: ``mlnx_qos -i <netdev>`` output -> the dict the roce_qos tasks compare.

A thin adapter over :mod:`fabric.parsers.mlnx_qos` (railyard is installed in the .venv that
runs Ansible)::

    {"ok": True, "reason": None, "dcbx_mode": "OS controlled", "trust": "dscp",
     "pfc_enabled": [3],          # priorities with PFC on
     "dscp2prio": {26: 3, ...},   # DSCP -> priority, when trust is dscp
     "tcs": {3: {"tc": 3, "ratelimit_gbps": None, "tsa": "vendor", "bw_percent": None,
                 "priorities": [3]}}}

Output that does not parse (no mlnx_qos, a tool failure) gives ``ok`` False, ``trust`` None and
no priorities, so the tasks see drift rather than an error.
"""

from __future__ import annotations

from fabric.parsers.common import ParseError
from fabric.parsers.mlnx_qos import MlnxQosReport, parse


def mlnx_qos_parse(text: str) -> dict:
    try:
        report = parse(str(text))
    except ParseError as error:
        report = MlnxQosReport(ok=False, reason=str(error))
    return {
        "ok": report.ok,
        "reason": report.reason,
        "dcbx_mode": report.dcbx_mode,
        "trust": report.trust,
        "pfc_enabled": report.pfc_priorities,
        "dscp2prio": report.priority_of_dscp,
        "tcs": {tc.tc: tc.model_dump() for tc in report.tcs},
    }


class FilterModule:
    """Ansible entry point."""

    def filters(self):
        return {"mlnx_qos_parse": mlnx_qos_parse}
