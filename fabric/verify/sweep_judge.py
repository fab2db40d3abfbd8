"""Judging every cable from one fabric sweep: the tools' parsed output against the declared graph.

Inputs, all parsed from real tool output (``fabric.verify.sweep`` runs the tools):

* the discovered graph (``ibnetdiscover``), diffed against the declared (or imported) graph by
  ``fabric.topology.diff``: a cable missing, miscabled (the far end), at a wrong speed or width;
* every port's state (``iblinkinfo``): logical state Active, physical state LinkUp;
* every port's error counters (``ibqueryerrors`` with every threshold at 0): a :data:`Reading`,
  judged against an earlier one by ``fabric.verify.counters`` (the thresholds per link rate).

Nodes are named as ``FabricGraph.node_name`` names them (a switch name, ``host/device``), so a
port is an :data:`End` ``("leaf01", 3)`` or ``("gpu03/mlx5_0", 1)`` on both sides.

The output is ``CheckResult``s under the check names the SSH suite uses for the same question,
with the same subjects, so ``fabric.verify.causes`` files them as it files the suite's: a
pulled cable is one "cable down", a narrow link one "port degraded", a counter rise one "cable
with errors". A question the sweep could not answer (a node whose counters could not be read, a
discovery that reported MAD errors) is an ``error`` result, never a failure.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from fabric.graph import FabricGraph, Link
from fabric.parsers.iblinkinfo import IblinkinfoReport
from fabric.parsers.ibqueryerrors import IbqueryerrorsReport
from fabric.topology.diff import Discrepancy, diff
from fabric.verify import counters
from fabric.verify.results import CheckResult

#: A port: (node name as ``FabricGraph.node_name`` gives it, port number).
End = tuple[str, int]
#: One counter reading: every port read -> perfquery counter name -> value.
Reading = dict[End, dict[str, int]]

LINK_CHECK = "test_declared_link_discovered"
EXTRA_CHECK = "test_no_undeclared_links"
STATE_CHECK = "test_port_state_active"
PHYS_CHECK = "test_port_physical_state_linkup"
COUNTER_CHECK = "test_port_error_counters"


@dataclass(frozen=True)
class PortView:
    """One port as ``iblinkinfo`` reports it."""

    state: str
    physical_state: str
    width: str | None
    speed: str | None


@dataclass(frozen=True)
class CounterRead:
    """A counter reading and the ports it could not read (End -> why)."""

    values: Reading
    unread: dict[End, str]


def _ca_names(graph: FabricGraph) -> dict[str, str]:
    """CA node description -> node name."""
    return {ca.description: graph.node_name(guid) for guid, ca in graph.cas.items()}


def _switch_names(graph: FabricGraph) -> dict[str, str]:
    """Switch node description -> node name (GUIDs are tried first)."""
    return {sw.description: sw.name for sw in graph.switches.values()}


def port_views(report: IblinkinfoReport, discovered: FabricGraph) -> dict[End, PortView]:
    """Every port iblinkinfo printed, by End (named through the discovered graph)."""
    cas, switches = _ca_names(discovered), _switch_names(discovered)
    out: dict[End, PortView] = {}
    for node in report.nodes:
        if node.kind == "switch" or (node.guid and node.guid in discovered.switches):
            sw = discovered.switches.get(node.guid or "")
            name = sw.name if sw else switches.get(node.name, node.name)
        else:
            name = cas.get(node.name, node.name)
        for link in node.links:
            out[(name, link.port)] = PortView(
                link.state, link.physical_state, _width(link.width), link.speed
            )
    return out


def _width(width: str | None) -> str | None:
    return width.lower() if width else None


def counter_reading(
    report: IbqueryerrorsReport, views: Mapping[End, PortView], discovered: FabricGraph
) -> CounterRead:
    """Every port in ``views`` read by ``report``: zeros, then the values ibqueryerrors printed
    (it prints every non-zero counter when every threshold is 0). Ports of a node whose PMA
    query failed are unread, with the tool's warning as the reason."""
    cas, switches = _ca_names(discovered), _switch_names(discovered)

    def name_of(description: str, guid: str | None) -> str:
        if guid and guid in discovered.switches:
            return discovered.switches[guid].name
        return switches.get(description) or cas.get(description) or description

    failed: dict[str, str] = {}
    for f in report.failures:  # the first failure of a node says why
        failed.setdefault(
            name_of(f.name, None), f"{f.what} query failed on {f.name}, lid {f.lid} port {f.port}"
        )
    zero = {c.name: 0 for c in counters.COUNTERS}
    values: Reading = {end: dict(zero) for end in views if end[0] not in failed}
    unread = {end: failed[end[0]] for end in views if end[0] in failed}
    for node in report.nodes:
        name = name_of(node.name, node.guid)
        for port in node.ports:
            if port.port is None or name in failed:
                continue  # a switch's AllPortSelect sum: its ports follow one by one
            values.setdefault((name, port.port), dict(zero)).update(port.counters)
    return CounterRead(values, unread)


@dataclass(frozen=True)
class _Cable:
    """A declared cable: its id, both ends, the HCA end's port id (None: switch to switch)."""

    link: Link
    id: str
    a: End
    b: End
    hca_port: str | None
    label: str

    @property
    def param(self) -> str:
        return self.hca_port or self.id

    def subject(self, kind: str) -> str:
        """``port:gpu03/mlx5_0/1`` (``counters:`` for the counter check), ``link:<id>`` for a
        switch-to-switch cable."""
        if self.hca_port is None:
            return f"{'counters' if kind == 'counters' else 'link'}:{self.id}"
        return f"{kind}:{self.hca_port}"


#: Node GUID -> its name (``FabricGraph.node_name``) and, for a CA, the host its cables are
#: judged under (None for a switch).
_Ends = dict[str, tuple[str, str | None]]


def _ends(declared: FabricGraph) -> _Ends:
    """Every node's :data:`_Ends` entry, computed once per node rather than per cable end."""
    out: _Ends = {guid: (switch.name, None) for guid, switch in declared.switches.items()}
    node_name = declared.node_name
    for guid in declared.cas:  # after the switches: a GUID in both is a CA, named as a switch
        name = node_name(guid)
        out[guid] = (name, name.split("/", 1)[0])
    return out


def _name(ends: _Ends, guid: str) -> str:
    """``FabricGraph.node_name`` from :func:`_ends` (a node the graph lacks: its GUID)."""
    end = ends.get(guid)
    return guid if end is None else end[0]


def _cable_names(links: list[Link], ends: _Ends) -> Iterator[tuple[str, str, str | None]]:
    """Each link's id (both ends), its HCA port (its id between switches) and that port's host."""
    for link in links:
        a_guid, b_guid = link.a_guid, link.b_guid
        a_name, a_host = ends.get(a_guid) or (a_guid, None)
        b_name, b_host = ends.get(b_guid) or (b_guid, None)
        a_end, b_end = f"{a_name}/{link.a_port}", f"{b_name}/{link.b_port}"
        cable_id = f"{a_end}-{b_end}"
        if a_host is not None:
            yield cable_id, a_end, a_host
        elif b_host is not None:
            yield cable_id, b_end, b_host
        else:
            yield cable_id, cable_id, None


def _cables(declared: FabricGraph) -> list[_Cable]:
    out = []
    switches, ends, links = declared.switches, _ends(declared), declared.links
    for link, (cable_id, port, host) in zip(links, _cable_names(links, ends), strict=True):
        a, b = _name(ends, link.a_guid), _name(ends, link.b_guid)
        a_end = f"{a.replace('/', ' ', 1)} port {link.a_port}"
        b_end = f"{b.replace('/', ' ', 1)} port {link.b_port}"
        switch_first = link.a_guid in switches or link.b_guid not in switches
        label = f"{a_end} ↔ {b_end}" if switch_first else f"{b_end} ↔ {a_end}"
        hca = None if host is None else port
        out.append(_Cable(link, cable_id, (a, link.a_port), (b, link.b_port), hca, label))
    return out


@dataclass(frozen=True)
class CableId:
    """How the sweep's results name one declared cable: ``link`` (both ends, the discovery
    check's parameter), ``port`` (the HCA port, or ``link`` for a switch-to-switch cable: the
    state and counter checks' parameter), and the host of its HCA end (None between switches)."""

    link: str
    port: str
    host: str | None


def cable_ids(declared: FabricGraph) -> list[CableId]:
    """Every declared cable as the sweep's results name it, in the graph's order."""
    return [CableId(link, port, host) for link, port, host in cable_names(declared)]


def cable_names(declared: FabricGraph) -> Iterator[tuple[str, str, str | None]]:
    """:func:`cable_ids` as plain ``(link, port, host)`` tuples, for a caller that builds its
    own object per cable (the check plan names every cable of a 16k-host fabric)."""
    return _cable_names(declared.links, _ends(declared))


def _group(cables: list[_Cable], found: list[Discrepancy]) -> dict[str, list[Discrepancy]]:
    """Declared cable id -> its discrepancies (by switch port, as ``fabric.verify.discovery``
    files them, else by HCA); "" -> the rest (cables found but never declared)."""
    by_switch: dict[tuple[str, int], str] = {}
    by_hca: dict[tuple[str, str], str] = {}
    for cable in cables:
        for name, port in (cable.a, cable.b):
            if "/" not in name:
                by_switch[(name, port)] = cable.id
            else:
                host, _, device = name.partition("/")
                by_hca[(host, device)] = cable.id
    out: dict[str, list[Discrepancy]] = {}
    for item in found:
        key = ""
        if item.kind != "extra":
            key = by_switch.get((item.switch or "", item.port or 0)) or by_hca.get(
                (item.host or "", item.hca or ""), ""
            )
        out.setdefault(key, []).append(item)
    return out


def _result(name: str, param: str, outcome: str, message: str, subject: str) -> CheckResult:
    return CheckResult.model_construct(
        name=name, param=param, outcome=outcome, message=message, subjects=[subject], seconds=0.0
    )


def judge(
    declared: FabricGraph,
    discovered: FabricGraph,
    views: Mapping[End, PortView],
    after: CounterRead,
    before: CounterRead | None = None,
    seconds: float = 0.0,
    overrides: Mapping[str, int | None] | None = None,
    incomplete: str | None = None,
) -> list[CheckResult]:
    """Every declared cable judged: discovered as declared, both ports Active/LinkUp, error
    counters (``after`` against ``before``, ``seconds`` apart) within the thresholds.

    ``incomplete``: why discovery may have missed nodes (the tool reported MAD errors); a
    cable it did not find is then an error (could not look), not a failure.
    """
    cables = _cables(declared)
    groups = _group(cables, diff(declared, discovered))
    out: list[CheckResult] = []
    for cable in cables:
        problems = groups.get(cable.id, [])
        link_subject = f"link:{cable.id}"
        if not problems:
            out.append(_result(LINK_CHECK, cable.id, "passed", "", link_subject))
        elif incomplete and all(p.kind == "missing" for p in problems):
            text = f"{_describe(problems)} (not confirmed: {incomplete})"
            out.append(_result(LINK_CHECK, cable.id, "error", text, link_subject))
        else:
            out.append(_result(LINK_CHECK, cable.id, "failed", _describe(problems), link_subject))
        down = _state(out, cable, views, incomplete)
        out.append(_counters(cable, after, before, seconds, overrides, down))
    extra = groups.get("", [])
    out.append(
        _result(EXTRA_CHECK, "sweep", "failed" if extra else "passed", _describe(extra), "fabric")
    )
    return out


def _describe(items: list[Discrepancy]) -> str:
    return "; ".join(item.message for item in items)


def _state(
    out: list[CheckResult],
    cable: _Cable,
    views: Mapping[End, PortView],
    incomplete: str | None,
) -> bool:
    """Append the cable's state and physical-state results; True when it is down."""
    hca_end = cable.a if "/" in cable.a[0] else cable.b if "/" in cable.b[0] else None
    order = [e for e in (hca_end, cable.a, cable.b) if e is not None]
    seen = next(((end, views[end]) for end in order if end in views), None)
    state_subject = cable.subject("port")
    if seen is None:
        why = f"{cable.label}: neither end was found by the sweep"
        outcome = "error" if incomplete else "failed"
        why += f" (not confirmed: {incomplete})" if incomplete else ""
        out.append(
            _result(
                STATE_CHECK,
                cable.param,
                outcome,
                f"{why}: state Down, expected Active",
                state_subject,
            )
        )
        out.append(
            _result(
                PHYS_CHECK,
                cable.param,
                outcome,
                f"{why}: physical state unknown, expected LinkUp",
                state_subject,
            )
        )
        return True
    end, view = seen
    where = f"{cable.param}: " if end == hca_end else f"{cable.param} (at {end[0]} port {end[1]}): "
    if view.state == "Active":
        out.append(_result(STATE_CHECK, cable.param, "passed", "", state_subject))
    else:
        text = f"{where}state {view.state}, expected Active"
        out.append(_result(STATE_CHECK, cable.param, "failed", text, state_subject))
    if view.physical_state == "LinkUp":
        out.append(_result(PHYS_CHECK, cable.param, "passed", "", state_subject))
    else:
        text = f"{where}physical state {view.physical_state}, expected LinkUp"
        out.append(_result(PHYS_CHECK, cable.param, "failed", text, state_subject))
    return view.physical_state != "LinkUp"


#: Each error counter's largest value (a counter there has saturated: ``counters.judge``).
_MAX = {c.name: (1 << c.bits) - 1 for c in counters.COUNTERS if not c.congestion}


def _saturated(values: Mapping[str, int]) -> bool:
    return any(values.get(name) == top for name, top in _MAX.items())


def _counters(
    cable: _Cable,
    after: CounterRead,
    before: CounterRead | None,
    seconds: float,
    overrides: Mapping[str, int | None] | None,
    down: bool,
) -> CheckResult:
    subject = cable.subject("counters")
    if before is None:
        return _result(
            COUNTER_CHECK,
            cable.param,
            "skipped",
            "no earlier reading: the next sweep judges the rise",
            subject,
        )
    limits: dict[str, int | None] | None = None
    breaches: list[str] = []
    unread: list[str] = []
    read = 0
    for end in (cable.a, cable.b):
        old, new = before.values.get(end), after.values.get(end)
        if old is None or new is None:
            unread.append(
                after.unread.get(end)
                or before.unread.get(end)
                or f"{end[0]} port {end[1]} not found"
            )
            continue
        read += 1
        if old == new and not _saturated(new):  # nothing rose (most ports, most sweeps)
            continue
        limits = limits or counters.thresholds(cable.link.rate_gbps, overrides)
        for breach in counters.failing(counters.judge(old, new, seconds, limits)):
            breaches.append(f"{end[0].replace('/', ' ', 1)} port {end[1]} {breach.text()}")
    if breaches:
        return _result(
            COUNTER_CHECK, cable.param, "failed", f"{cable.label}: {'; '.join(breaches)}", subject
        )
    if read == 0:
        if down:
            return _result(
                COUNTER_CHECK,
                cable.param,
                "skipped",
                f"{cable.label}: cable down, counters not read",
                subject,
            )
        return _result(
            COUNTER_CHECK,
            cable.param,
            "error",
            f"{cable.label}: counters not read: {'; '.join(unread)}",
            subject,
        )
    return _result(COUNTER_CHECK, cable.param, "passed", "", subject)
