"""Routing: the engine in use is the declared one, every host pair is routed over a minimal
up/down path of the fat tree, and routes spread over the spines within the declared imbalance.

Read once from the routing host (an SM host): every switch's forwarding table (``dump_fts
-n``) and the fabric (``ibnetdiscover``), judged by ``fabric.verify.routing``. Where railyard
runs the SM, the MASTER's OpenSM log says which engine configured the switches (a fallback
from ftree to minhop is named with OpenSM's own reason); elsewhere the tables decide. A tool
that cannot read is a harness error, never a routing failure.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from fabric.verify.facts import Facts
from fabric.verify.harness_error import HarnessError
from fabric.verify.plan import CheckPlan
from fabric.verify.routing import (
    SHOWN,
    RouteVerdict,
    RoutingHarnessError,
    judge_engine,
    judge_routes,
    read_fabric,
    read_log,
    read_tables,
)
from fabric.verify.sweep import shell_runner

pytestmark = pytest.mark.family("routing")


def _routes(facts: Facts, plan: CheckPlan, host: str) -> RouteVerdict:
    def make() -> RouteVerdict:
        run = shell_runner(facts.shell(host))
        try:
            tables = read_tables(run)
            if host == plan.discovery_host:  # the discovery family's ibnetdiscover, run once
                fabric = facts.discovered()
            else:
                fabric = read_fabric(run)
        except (RoutingHarnessError, RuntimeError) as err:
            raise HarnessError(f"routing on {host}: {err}") from None
        return judge_routes(tables, fabric, plan.expected_graph)

    return facts._once(("routing", host), make)


def _master(facts: Facts, plan: CheckPlan, host: str) -> str | None:
    """The declared SM host whose OpenSM is MASTER, as ``sminfo`` on ``host`` sees it."""
    info = facts.sminfo(host)
    if not info.ok or info.sm_lid is None:
        return None
    return next((h for h in plan.sm_log_hosts if facts.lid(h) == info.sm_lid), None)


def test_routing_engine(host, facts: Facts, plan: CheckPlan, routing_host: str) -> None:
    """The declared routing engine configured the switches (no silent fallback)."""
    ib = plan.spec.fabric.infiniband
    assert ib is not None  # the plan generates this family for InfiniBand only
    routes = _routes(facts, plan, routing_host)
    log, where = None, "the forwarding tables"
    if plan.sm_log_hosts:
        master = _master(facts, plan, routing_host)
        if master is None:
            raise HarnessError(
                f"no declared SM host is MASTER as {routing_host} sees it: the sm family names "
                "the MASTER; its log cannot be read here"
            )
        try:
            log = read_log(shell_runner(facts.shell(master)))
        except RoutingHarnessError as err:
            raise HarnessError(f"{master}: {err}") from None
        where = f"OpenSM's log on {master}"
    verdict = judge_engine(ib.routing_engine, log, routes)
    worst = routes.worst
    assert verdict.ok, f"{where}: {verdict.message}" + (
        f"; worst-loaded port: {worst.line()}" if worst is not None else ""
    )


def test_routes_minimal_updown(host, facts: Facts, plan: CheckPlan, routing_host: str) -> None:
    """Every host pair is routed, over a minimal up/down path of the declared fat tree."""
    r = _routes(facts, plan, routing_host)
    problems = []
    if r.missing_tables:
        problems.append(f"no forwarding table read from {', '.join(r.missing_tables)}")
    if r.unrouted:
        problems.append(
            f"{len(r.unrouted)} HCAs no switch delivers a LID to: {', '.join(r.unrouted[:SHOWN])}"
        )
    for count, what, examples in (
        (r.broken_pairs, "broken (no entry, no cable, a loop)", r.broken),
        (r.not_updown_pairs, "not up/down", r.not_updown),
        (r.not_minimal_pairs, "longer than the shortest path", r.not_minimal),
    ):
        if count:
            problems.append(f"{count} of {r.pairs} pairs {what}, e.g. " + "; ".join(examples))
    assert not problems, f"{r.hosts} hosts, {r.lids} LIDs: " + " | ".join(problems)


def test_routes_balanced(
    host,
    facts: Facts,
    plan: CheckPlan,
    routing_host: str,
    record_property: Callable[[str, object], None],
) -> None:
    """No spine-facing port carries more than ``routing_imbalance`` x its peers' mean."""
    ib = plan.spec.fabric.infiniband
    assert ib is not None
    r = _routes(facts, plan, routing_host)
    over = r.over(ib.routing_imbalance)
    for port in over[:SHOWN]:
        record_property("subject", f"switch:{port.switch}")
    assert not over, (
        f"{len(over)} of {len(r.loads)} switch-to-switch ports above "
        f"{ib.routing_imbalance}x their peers' mean; worst first: "
        + "; ".join(p.line() for p in over[:SHOWN])
    )
