"""``ibqueryerrors``: error counters over threshold per port, PMA query failures, the summary.

Shapes (rdma-core ``infiniband-diags/ibqueryerrors.c``): a node with a counter over its
threshold gets a header, ``Errors for "gpu03"`` (a CA) or ``Errors for 0x200000 "leaf01"`` (a
switch, with its GUID), then one line per port, ``   GUID 0x100005 port 1: [PortRcvErrors ==
5]`` (``port ALL`` for a switch's AllPortSelect sum, followed by its ports one by one). A
counter is printed when it exceeds its threshold; with an empty threshold file
(``--threshold-file /dev/null``) every threshold is 0, so every non-zero error counter of every
port is printed and a port not listed read all zeros. Extended values carry a human-readable
tail (``[SymbolErrorCounter == 37 (37.000 )]``). A port the tool could not read is an
``ibwarn`` line on stderr (``classportinfo query failed on gpu03, Lid 5 port 1``) and a
``## N PMA query failures`` summary line. The summary closes every completed run; the exit
status is 1 when any port has errors, so a run is complete when the summary is there.
"""

from __future__ import annotations

import re

from fabric.parsers.common import (
    Counter,
    Model,
    ParseError,
    ToolResult,
    build,
    failed,
    find_failure,
    lines,
    normalize_guid,
)

TOOL = "ibqueryerrors"

_NODE = re.compile(r'^Errors for (?:(?P<guid>0x[0-9a-fA-F]{1,16}) )?"(?P<name>.*)"\s*$')
_PORT = re.compile(r"^\s+GUID (?P<guid>0x[0-9a-fA-F]{1,16}) port (?P<port>\d+|ALL):(?P<rest>.*)$")
_COUNTER = re.compile(r"\[(?P<name>[A-Za-z0-9]+) == (?P<value>\d+)(?: \([^)]*\))?\]")
_SUMMARY = re.compile(r"^## Summary: (?P<nodes>\d+) nodes checked, (?P<bad>\d+) bad nodes found")
_PORTS = re.compile(
    r"^##\s+(?P<ports>\d+) ports checked, (?P<bad>\d+) ports have errors beyond threshold"
)
_PMA = re.compile(r"^##\s+(?P<n>\d+) PMA query failures")
_WARN = re.compile(
    r"^ibwarn: \[\d+\] \w+: (?P<what>.+?) query failed on (?P<name>.*), "
    r"Lid (?P<lid>\d+) port (?P<port>\d+)\s*$"
)
#: Lines a run may print besides its records (the threshold and suppression notes, the
#: port-configuration lines of ``-r``, libibmad's other warnings).
_NOISE = re.compile(r"^(## |ibwarn: |\s+Link info:|\s+\d+\s+\d+\[)")


class PortErrors(Model):
    """One port's counters over threshold (``port`` None: a switch's AllPortSelect sum)."""

    guid: str
    port: int | None
    counters: dict[str, Counter]


class NodeErrors(Model):
    """A node with counters over threshold."""

    name: str
    guid: str | None = None
    ports: list[PortErrors] = []


class QueryFailure(Model):
    """A PMA query that failed (the ``ibwarn`` line): what, on which node, LID and port."""

    what: str
    name: str
    lid: int
    port: int


class IbqueryerrorsReport(ToolResult):
    """Nodes with errors, PMA failures and the summary (``complete``: the summary was read)."""

    nodes: list[NodeErrors] = []
    failures: list[QueryFailure] = []
    nodes_checked: int | None = None
    ports_checked: int | None = None
    bad_ports: int | None = None
    pma_failures: int = 0
    complete: bool = False


def parse(text: str) -> IbqueryerrorsReport:
    """Parse ``ibqueryerrors`` output (stdout, or stdout and stderr together)."""
    nodes: list[dict[str, object]] = []
    data: dict[str, object] = {"failures": [], "pma_failures": 0}
    for lineno, line in lines(text):
        if not line.strip():
            continue
        if match := _NODE.match(line):
            guid = normalize_guid(match["guid"]) if match["guid"] else None
            nodes.append({"name": match["name"], "guid": guid, "ports": []})
        elif match := _PORT.match(line):
            if not nodes:
                raise ParseError(TOOL, lineno, "an 'Errors for ...' header before a port", line)
            counters = {m["name"]: int(m["value"]) for m in _COUNTER.finditer(match["rest"])}
            port = None if match["port"] == "ALL" else int(match["port"])
            entry = {"guid": normalize_guid(match["guid"]), "port": port, "counters": counters}
            nodes[-1]["ports"].append(entry)  # type: ignore[union-attr]
        elif match := _SUMMARY.match(line):
            data["nodes_checked"], data["complete"] = int(match["nodes"]), True
        elif match := _PORTS.match(line):
            data["ports_checked"], data["bad_ports"] = int(match["ports"]), int(match["bad"])
        elif match := _PMA.match(line):
            data["pma_failures"] = int(match["n"])
        elif match := _WARN.match(line):
            data["failures"].append(  # type: ignore[union-attr]
                {
                    "what": match["what"],
                    "name": match["name"],
                    "lid": int(match["lid"]),
                    "port": int(match["port"]),
                }
            )
        elif _NOISE.match(line):
            continue
        elif reason := find_failure(line) or _tool_failure(line):
            return failed(TOOL, IbqueryerrorsReport, {"nodes": nodes, **data}, reason)
        else:
            raise ParseError(TOOL, lineno, "'Errors for ...', '   GUID ... port N:' or '## '", line)
    if not any(line.strip() for _, line in lines(text)):
        raise ParseError(TOOL, 0, "'Errors for ...' lines or the '## Summary:' line")
    if not data.get("complete"):
        return IbqueryerrorsReport(
            nodes=build(TOOL, IbqueryerrorsReport, {"nodes": nodes}, text=text).nodes,
            failures=build(
                TOOL, IbqueryerrorsReport, {"failures": data["failures"]}, text=text
            ).failures,
            ok=False,
            reason=f"{TOOL}: no summary: the run did not complete",
        )
    return build(TOOL, IbqueryerrorsReport, {"nodes": nodes, **data}, text=text)


def _tool_failure(line: str) -> str | None:
    """ibqueryerrors' own failure lines that the shared markers do not cover."""
    stripped = line.strip()
    for marker in ("discover failed", "loading cached fabric failed", "Query SA failed"):
        if stripped.startswith(marker):
            return stripped
    return None
