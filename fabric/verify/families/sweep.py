"""The ``sweep`` family: one vantage host's MAD sweep judges every declared InfiniBand cable
(discovered as declared, state, physical state, error counters) and finds undeclared ones
(``fabric.verify.sweep``, ``fabric.verify.sweep_judge``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fabric.verify.families.base import Family, Fixture, Source
from fabric.verify.families.common import no_declared_fabric
from fabric.verify.families.params import DeclaredLink, SweptCable

if TYPE_CHECKING:
    from fabric.verify.plan import CheckPlan

#: Where ``check --plan`` lists this family.
ORDER = 70


def _sweep_hosts(plan: CheckPlan) -> list[str]:
    """Where the fabric sweep (``fabric.verify.sweep``) runs from: the observer of an
    InfiniBand fabric with a declared graph, a fat tree or ``fabric.cabling`` alone (one
    vantage point judges every cable)."""
    if plan.spec.fabric.kind != "infiniband" or plan.expected_graph is None:
        return []
    return [plan.observer] if plan.observer else []


def _swept_cables(plan: CheckPlan) -> list[SweptCable]:
    """Every declared cable the sweep judges: those of the selected hosts' HCAs, every
    switch-to-switch cable and every cable to a CA no host owns (a SHARP aggregation node,
    an HCA whose node description was never set: ``fabric.cabling``'s ``guid:`` ends), as one
    sweep judges the whole fabric."""
    if not plan.sweep_hosts or plan.expected_graph is None:
        return []
    from fabric.verify.sweep_judge import cable_names

    selected, hosts = set(plan.hosts), plan.spec.hosts
    return [
        SweptCable(link, port, host)  # positional: 258,049 cables at 16,384 hosts
        for link, port, host in cable_names(plan.expected_graph)
        if host is None or host in selected or host not in hosts
    ]


def _declared_links(plan: CheckPlan) -> list[DeclaredLink]:
    """Every declared cable (as the target reports it), for the discovered-vs-declared diff."""
    graph = plan.expected_graph
    if graph is None:
        return []
    return [
        DeclaredLink(
            a_name=graph.node_name(link.a.guid),
            a_port=link.a.port,
            b_name=graph.node_name(link.b.guid),
            b_port=link.b.port,
            width=link.width,
            speed=link.speed,
            rate_gbps=link.rate_gbps,
        )
        for link in graph.links
    ]


def _why(plan: CheckPlan) -> str | None:
    kind = plan.spec.fabric.kind
    if kind != "infiniband":
        return f"fabric.kind is {kind}: the MAD sweep judges InfiniBand cables"
    if plan.expected_graph is None:
        return no_declared_fabric(
            plan.spec, "the cables", "no declared fat tree or cabling to judge the cables against"
        )
    return None if plan.sweep_hosts else "no selected host with an HCA to sweep the fabric from"


def _cable(name: str, ident: str) -> Fixture:
    """A swept cable, named by its link or its port; the sweep's verdict records its subject."""
    return Fixture(
        name,
        lambda plan: plan.swept_cables,
        ident=lambda c: getattr(c, ident),
        on=lambda plan, _: plan.sweep_hosts[0],
        subject=lambda _, __: None,
        group=lambda _: "sweep",
    )


SOURCES: dict[str, Source] = {
    "sweep_hosts": _sweep_hosts,
    "swept_cables": _swept_cables,
    "declared_links": _declared_links,
}
FAMILIES = (
    Family(
        "sweep",
        (
            "test_declared_link_discovered",
            "test_no_undeclared_links",
            "test_port_state_active",
            "test_port_physical_state_linkup",
            "test_port_error_counters",
        ),
        "swept_cables",
        _why,
        fixtures=(
            _cable("swept_link", "link"),
            _cable("swept_port", "port"),
            Fixture(
                "sweep_host",
                lambda plan: plan.sweep_hosts,
                ident=lambda _: "sweep",
                subject=lambda _, __: None,
                group=lambda _: "sweep",
            ),
        ),
    ),
)
