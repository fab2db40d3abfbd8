"""The fabric-wide InfiniBand families read from one host: ``routing`` (every switch's
forwarding table against the declared fat tree, or the cabling alone: its switch levels
inferred from the cables) and ``congestion_control`` (``ibccquery``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fabric.verify.families.base import Family, Source, host_list_fixture
from fabric.verify.families.common import no_declared_fabric

if TYPE_CHECKING:
    from fabric.verify.plan import CheckPlan

#: Where ``check --plan`` lists these families.
ORDER = 80


def _unleveled(plan: CheckPlan) -> str | None:
    """Why the declared fabric (a fat tree, or ``fabric.cabling`` alone) gives the routes no
    switch levels to be judged by (``fabric.verify.routing.unjudged_levels``), or None: the
    plan's ``routing_unleveled``, computed once."""
    if plan.expected_graph is None:
        return None
    from fabric.verify.routing import unjudged_levels

    return unjudged_levels(plan.expected_graph)


def _routing_hosts(plan: CheckPlan) -> list[str]:
    """Where the ``routing`` family reads every switch's forwarding table and the fabric
    from: the discovery host (an SM host), else the observer, of an InfiniBand fabric with
    a declared fat tree or cabling whose switch levels can be inferred (hosts at the bottom)."""
    if plan.spec.fabric.kind != "infiniband" or plan.expected_graph is None:
        return []
    if plan.routing_unleveled is not None:
        return []
    host = plan.discovery_host or plan.observer
    return [host] if host else []


def _sm_log_hosts(plan: CheckPlan) -> list[str]:
    """Hosts whose OpenSM log says which routing engine is in use: the declared subnet
    managers railyard runs (the MASTER's is read); empty where railyard runs no SM, and
    the engine is then judged from the forwarding tables alone."""
    ib = plan.spec.fabric.infiniband
    if ib is None:
        return []
    return [
        s.host
        for s in ib.subnet_managers
        if s.host in plan.hosts and getattr(s, "mode", "managed") == "managed"
    ]


def _cc_hosts(plan: CheckPlan) -> list[str]:
    """Where ``ibccquery`` reads every switch's and HCA's congestion-control settings
    from: the routing host, when the spec enables congestion control."""
    ib = plan.spec.fabric.infiniband
    if ib is None or not ib.congestion_control.enabled:
        return []
    return plan.routing_hosts


def _routing_why(plan: CheckPlan) -> str | None:
    kind = plan.spec.fabric.kind
    if kind != "infiniband":
        return f"fabric.kind is {kind}: LFT routing is InfiniBand's"
    if plan.expected_graph is None:
        return no_declared_fabric(
            plan.spec, "the routes", "no declared fat tree to judge the routes against"
        )
    unleveled = plan.routing_unleveled
    if unleveled is not None:
        return unleveled
    if not plan.routing_hosts:
        return "no selected host with an HCA to read the forwarding tables from"
    return None


def _cc_why(plan: CheckPlan) -> str | None:
    kind, ib = plan.spec.fabric.kind, plan.spec.fabric.infiniband
    if kind != "infiniband" or ib is None:
        return f"fabric.kind is {kind}: IB congestion control (class 0x21)"
    if not ib.congestion_control.enabled:
        return "fabric.infiniband.congestion_control.enabled is false: nothing declared to check"
    if plan.simulated:
        return (
            "target lab: the lab cannot prove congestion control. ibsim answers no "
            "congestion-control MADs (class 0x21): its sim_mad.c hands them to its SMP "
            "handlers (class & 0xf), so ibccquery reads SMP attributes, not CC settings. "
            "opensm.conf's cc_* keys are golden- and molecule-tested instead"
        )
    return None if plan.cc_hosts else "no selected host with an HCA to run ibccquery from"


SOURCES: dict[str, Source] = {
    "routing_unleveled": _unleveled,
    "routing_hosts": _routing_hosts,
    "sm_log_hosts": _sm_log_hosts,
    "cc_hosts": _cc_hosts,
}
FAMILIES = (
    Family(
        "routing",
        ("test_routing_engine", "test_routes_minimal_updown", "test_routes_balanced"),
        "routing_hosts",
        _routing_why,
        fixtures=(host_list_fixture("routing_host", "routing_hosts", subject="fabric"),),
    ),
    Family(
        "congestion_control",
        ("test_congestion_control",),
        "cc_hosts",
        _cc_why,
        fixtures=(host_list_fixture("cc_host", "cc_hosts", subject="fabric"),),
    ),
)
