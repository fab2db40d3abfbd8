"""One scrape of a stack's fabric: cables against the declared values, the master SM, the
last check report by family. A tool that cannot run is a scrape error of its source (a
harness error), never a fabric failure: its metrics are left out, not reported as down.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel

from fabric.graph import WIDTH_LANES, FabricGraph
from fabric.topology.diff import node_key, port_ends
from fabric.verify.facts import keep_255
from fabric.verify.plan import FAMILIES, CheckPlan
from fabric.watch.counters import CounterDelta, CounterWatch, PortReading
from fabric.watch.slurm import COMMAND as SCONTROL_NODES
from fabric.watch.slurm import NodeSample, parse_nodes

#: Seconds each tool gets on its host.
TOOL_TIMEOUT = {"ibnetdiscover": 120.0, "sminfo": 20.0, "scontrol": 20.0}

#: ``(host, command, timeout) -> (exit status, output)``; raises on a harness failure.
Run = Callable[[str, str, float], tuple[int, str]]


class CableSample(BaseModel):
    """A declared cable as found: named by both ends (``a`` is the first end of the declared
    link, e.g. ``leaf01/3``, ``b`` the other, e.g. ``gpu03/mlx5_0/1``)."""

    cable: str
    a: str
    b: str
    up: bool
    as_declared: bool
    rate_gbps: float | None = None
    width_lanes: int | None = None
    declared_rate_gbps: float
    declared_width_lanes: int


class SmSample(BaseModel):
    """The master SM as the observer sees it (``sminfo``), with the host that owns its GUID."""

    host: str | None
    guid: str
    lid: int
    priority: int
    state: str
    declared_priority: int | None = None


class FamilySample(BaseModel):
    """One check family's results in the last ``fabric check`` report."""

    family: str
    passed: int = 0
    failed: int = 0
    error: int = 0
    skipped: int = 0


class Snapshot(BaseModel):
    """Everything one scrape found; ``errors``: source -> message of what could not be read."""

    taken: float
    seconds: float = 0.0
    cables: list[CableSample] = []
    undeclared_cables: int | None = None
    master: SmSample | None = None
    families: list[FamilySample] = []
    report_time: float | None = None
    counter_deltas: list[CounterDelta] = []
    port_counters: list[PortReading] = []
    nodes: list[NodeSample] = []
    errors: dict[str, str] = {}
    sources: list[str] = []


def cable_samples(expected: FabricGraph, found: FabricGraph) -> tuple[list[CableSample], int]:
    """Every declared cable of ``expected`` as ``found`` shows it, and the count of cables
    found between ports no declared cable uses."""
    seen = port_ends(found)
    used: set[tuple[tuple[str, ...], int]] = set()
    out = []
    for link in expected.links:
        a, b = node_key(expected, link.a_guid), node_key(expected, link.b_guid)
        a_name, b_name = expected.node_name(link.a_guid), expected.node_name(link.b_guid)
        used |= {(a, link.a_port), (b, link.b_port)}
        got = seen.get((a, link.a_port)) or seen.get((b, link.b_port))
        right_ends = got is not None and {(got[0], got[1])} & {(a, link.a_port), (b, link.b_port)}
        up = got is not None and bool(right_ends)
        real = got[2] if got is not None and up else None
        out.append(
            CableSample(
                cable=f"{a_name}/{link.a_port}-{b_name}/{link.b_port}",
                a=f"{a_name}/{link.a_port}",
                b=f"{b_name}/{link.b_port}",
                up=up,
                as_declared=bool(real and real.speed == link.speed and real.width == link.width),
                rate_gbps=real.rate_gbps if real else None,
                width_lanes=WIDTH_LANES.get(real.width) if real else None,
                declared_rate_gbps=link.rate_gbps,
                declared_width_lanes=WIDTH_LANES.get(link.width, 0),
            )
        )
    extra = 0
    for link in found.links:
        a, b = node_key(found, link.a_guid), node_key(found, link.b_guid)
        if (a, link.a_port) not in used and (b, link.b_port) not in used:
            extra += 1
    return out, extra


def owner_of(graph: FabricGraph, port_guid: str) -> str | None:
    """The host whose HCA has ``port_guid`` (a node GUID, or node GUID + port as ibsim and
    most HCAs number port GUIDs), or None."""
    value = int(port_guid, 16)
    for ca in graph.cas.values():
        base = int(ca.guid, 16)
        if base <= value <= base + max(ca.ports, 1):
            return ca.host
    return None


def sm_sample(report: object, graph: FabricGraph | None, declared: dict[str, int]) -> SmSample:
    """The master SM from a parsed ``sminfo`` report."""
    guid = getattr(report, "sm_guid", None) or ""
    host = owner_of(graph, guid) if graph is not None and guid else None
    return SmSample(
        host=host,
        guid=guid,
        lid=getattr(report, "sm_lid", 0) or 0,
        priority=getattr(report, "priority", 0) or 0,
        state=getattr(report, "state", "") or "",
        declared_priority=declared.get(host or ""),
    )


def family_samples(results: list) -> list[FamilySample]:
    """Check results (``fabric.verify.results.CheckResult``) counted per family of
    ``fabric.verify.plan.FAMILIES``; results of no known family are left out."""
    by_check = {check: family for family, (checks, _) in FAMILIES.items() for check in checks}
    counts: dict[str, FamilySample] = {}
    for result in results:
        family = by_check.get(result.name)
        if family is None:
            continue
        sample = counts.setdefault(family, FamilySample(family=family))
        setattr(sample, result.outcome, getattr(sample, result.outcome) + 1)
    return [counts[f] for f in FAMILIES if f in counts]


def collect(
    plan: CheckPlan,
    run: Run,
    junit: Path | None,
    counter_watch: CounterWatch | None = None,
    slurm: bool = True,
) -> Snapshot:
    """One scrape: ibnetdiscover and sminfo over ``run``, the report in ``junit``, with
    ``counter_watch`` every declared cable end's counters (and their rises since its previous
    scrape), and with ``slurm`` Slurm's node states from the selected controller."""
    from fabric.parsers import ParseError
    from fabric.parsers.ibnetdiscover import parse as parse_ibnetdiscover
    from fabric.parsers.sminfo import parse as parse_sminfo

    start = time.monotonic()
    snap = Snapshot(taken=time.time())
    expected = plan.expected_graph
    found: FabricGraph | None = None
    host = plan.discovery_host
    if expected is not None and host is not None:
        snap.sources.append("ibnetdiscover")
        try:
            rc, text = run(host, "ibnetdiscover", TOOL_TIMEOUT["ibnetdiscover"])
            if rc != 0:
                raise RuntimeError(f"ibnetdiscover on {host} exited {rc}: {text.strip()[:200]}")
            found = parse_ibnetdiscover(text)
            snap.cables, snap.undeclared_cables = cable_samples(expected, found)
        except (RuntimeError, ParseError, ValueError) as exc:
            snap.errors["ibnetdiscover"] = str(exc)
    observer = plan.observer
    if observer is not None and plan.spec.fabric.kind == "infiniband":
        snap.sources.append("sminfo")
        try:
            rc, text = run(observer, keep_255("sminfo"), TOOL_TIMEOUT["sminfo"])
            report = parse_sminfo(text)
            if not report.ok or report.sm_guid is None:
                raise RuntimeError(f"sminfo on {observer}: {report.reason or f'exit {rc}'}")
            declared = {s.host: s.priority for s in plan.subnet_managers if s.host}
            snap.master = sm_sample(report, found or expected, declared)
        except (RuntimeError, ParseError, ValueError) as exc:
            snap.errors["sminfo"] = str(exc)
    if counter_watch is not None and plan.counter_ports:
        snap.sources.append("perfquery")
        snap.counter_deltas, snap.port_counters, unread = counter_watch.scrape(run)
        if unread:
            more = f" (and {len(unread) - 1} more)" if len(unread) > 1 else ""
            snap.errors["perfquery"] = unread[0] + more
    if slurm and plan.slurm_controller is not None:
        snap.sources.append("slurm")
        try:
            rc, text = run(plan.slurm_controller, SCONTROL_NODES, TOOL_TIMEOUT["scontrol"])
            if rc != 0:
                raise RuntimeError(
                    f"{SCONTROL_NODES} on {plan.slurm_controller} exited {rc}: {text.strip()[:200]}"
                )
            snap.nodes = parse_nodes(text)
        except (RuntimeError, ValueError) as exc:
            snap.errors["slurm"] = str(exc)
    if junit is not None:
        snap.sources.append("checks")
        if junit.is_file():
            from fabric.verify.results import read_junit

            try:
                snap.families = family_samples(read_junit(junit))
                snap.report_time = junit.stat().st_mtime
            except (OSError, ValueError, SyntaxError) as exc:
                snap.errors["checks"] = f"{junit}: {exc}"
    snap.seconds = time.monotonic() - start
    return snap
