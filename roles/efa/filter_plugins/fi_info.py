"""Filter ``efa_fi_info``: ``fi_info -p efa`` output -> {ok, reason, providers, rdm_domains}.

A thin adapter over :mod:`fabric.parsers.fi_info` (the parser the checks use; railyard is
installed in the .venv that runs Ansible).
"""

from __future__ import annotations

from typing import Any

from fabric.parsers.common import ParseError
from fabric.parsers.fi_info import FiInfoReport, parse


def efa_fi_info(text: str) -> dict[str, Any]:
    """Summarise ``fi_info`` output; a failure (``fi_getinfo: -61``) or other text gives ok False."""
    try:
        report = parse(str(text))
    except ParseError as error:
        report = FiInfoReport(ok=False, reason=str(error))
    return {
        "ok": report.ok,
        "reason": report.reason,
        "providers": report.providers,
        "rdm_domains": report.efa_rdm_domains,
    }


class FilterModule:
    """Ansible filter plugin entry point."""

    def filters(self) -> dict[str, Any]:
        return {"efa_fi_info": efa_fi_info}
