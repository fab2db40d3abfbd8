"""Filter ``efa_fi_info``: ``fi_info -p efa`` output -> {ok, reason, providers, rdm_domains}.

Parsing is done by :mod:`fabric.parsers.fi_info` (the same parser the checks use). When
the role runs outside the repository's Python path, the repository root (three levels
above this file) is added so that ``fabric`` imports.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any


def _parser() -> Any:
    try:
        from fabric.parsers import fi_info
    except ImportError:
        sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
        from fabric.parsers import fi_info
    return fi_info


def efa_fi_info(text: str) -> dict[str, Any]:
    """Summarise ``fi_info`` output; a failure (``fi_getinfo: -61``) gives ok False."""
    fi_info = _parser()
    try:
        report = fi_info.parse(text)
    except fi_info.ParseError as error:
        return {"ok": False, "reason": str(error), "providers": [], "rdm_domains": []}
    providers = list(dict.fromkeys(entry.provider for entry in report.entries))
    rdm = [e.domain for e in report.entries if e.provider == "efa" and e.type == "FI_EP_RDM"]
    return {
        "ok": bool(report.ok),
        "reason": report.reason,
        "providers": providers,
        # One reliable-datagram domain per EFA device (rdmapXsY-rdm, or efa_N-rdm).
        "rdm_domains": list(dict.fromkeys(rdm)),
    }


class FilterModule:
    """Ansible filter plugin entry point."""

    def filters(self) -> dict[str, Any]:
        return {"efa_fi_info": efa_fi_info}
