"""``fi_info -p efa``: libfabric provider entries (provider, fabric, domain, endpoint type)."""

from __future__ import annotations

import re

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

TOOL = "fi_info"

_PROVIDER = re.compile(r"^provider:\s*(?P<value>\S+)\s*$")
_FIELD = re.compile(r"^\s+(?P<key>fabric|domain|version|type|protocol):\s*(?P<value>\S+)\s*$")
_NO_DATA = re.compile(r"^fi_getinfo: -?\d+.*$")


class FiInfoEntry(Model):
    """One ``provider:`` entry."""

    provider: str
    fabric: str
    domain: str
    version: str
    type: str
    protocol: str


class FiInfoReport(ToolResult):
    """Every provider entry fi_info printed."""

    entries: list[FiInfoEntry] = []

    @property
    def domains(self) -> list[str]:
        """Distinct domain names, in order."""
        return list(dict.fromkeys(entry.domain for entry in self.entries))

    @property
    def providers(self) -> list[str]:
        """Distinct provider names, in order (``efa``, ``efa;ofi_rxd`` for a layered one)."""
        return list(dict.fromkeys(entry.provider for entry in self.entries))

    @property
    def efa_rdm_domains(self) -> list[str]:
        """Distinct reliable-datagram domains of the ``efa`` provider itself, one per EFA
        device (``rdmap0s31-rdm``, ``efa_0-rdm``); layered providers are not devices."""
        return list(
            dict.fromkeys(
                e.domain for e in self.entries if e.provider == "efa" and e.type == "FI_EP_RDM"
            )
        )


def parse(text: str) -> FiInfoReport:
    """Parse ``fi_info`` (default, non-verbose) output."""
    entries: list[dict[str, str]] = []
    for lineno, line in lines(text):
        if not line.strip():
            continue
        if match := _PROVIDER.match(line):
            entries.append({"provider": match["value"]})
        elif entries and (match := _FIELD.match(line)):
            entries[-1][match["key"]] = match["value"]
        else:
            if (reason := failure_line(line, [_NO_DATA])) or (
                not entries and (reason := find_failure(text, [_NO_DATA]))
            ):
                return failed(TOOL, FiInfoReport, {"entries": entries}, reason)
            raise ParseError(TOOL, lineno, "'provider: <name>' or an indented entry field", line)
    if not entries:
        raise ParseError(TOOL, 0, "'provider: <name>'")
    return build(TOOL, FiInfoReport, {"entries": entries}, text=text)
