"""Declared-vs-discovered findings per declared cable, from ``fabric.topology.diff``.

``ibnetdiscover`` runs on an SM host and is parsed into a ``FabricGraph``; ``diff`` compares
it with the plan's expected graph (the declared graph, or ``simulated(declared)`` in the lab,
where ibsim reports NDR as HDR). Each discrepancy names switch, port, host and HCA; here it is
filed under the declared cable it concerns (by that cable's switch ports), so every declared
cable is one parametrised check, and discrepancies about undeclared cables (``extra``) go to
their own check.
"""

from __future__ import annotations

from fabric.graph import FabricGraph
from fabric.topology.diff import Discrepancy, diff
from fabric.verify.plan import CheckPlan

#: Key of the findings about cables the spec does not declare.
EXTRA = "extra"


def switch_ends(graph: FabricGraph) -> dict[tuple[str, int], str]:
    """(switch name, switch port) -> the id of the declared cable on that port.

    Ids are those of ``CheckPlan.declared_links`` (``a_name/a_port-b_name/b_port``).
    """
    out: dict[tuple[str, int], str] = {}
    for link in graph.links:
        link_id = f"{graph.node_name(link.a_guid)}/{link.a_port}-{graph.node_name(link.b_guid)}/{link.b_port}"
        for guid, port in ((link.a_guid, link.a_port), (link.b_guid, link.b_port)):
            if guid in graph.switches:
                out[(graph.switches[guid].name, port)] = link_id
    return out


def group(expected: FabricGraph, found: list[Discrepancy]) -> dict[str, list[Discrepancy]]:
    """Declared cable id -> its discrepancies; ``EXTRA`` -> cables found but never declared.

    A discrepancy whose switch port carries no declared cable (a missing/miscabled HCA link
    whose switch end is not named) is filed under ``EXTRA`` too, so none is ever dropped.
    """
    ends = switch_ends(expected)
    out: dict[str, list[Discrepancy]] = {}
    for item in found:
        key = ends.get((item.switch or "", item.port or 0)) if item.kind != "extra" else None
        out.setdefault(key or EXTRA, []).append(item)
    return out


def findings_for(plan: CheckPlan, discovered: FabricGraph) -> dict[str, list[Discrepancy]]:
    """Discrepancies of ``discovered`` against the plan's expected graph, by declared cable."""
    expected = plan.expected_graph
    if expected is None:
        raise ValueError("the spec declares no fabric topology to compare ibnetdiscover with")
    return group(expected, diff(expected, discovered))


def describe(items: list[Discrepancy]) -> str:
    """One failure message: every discrepancy's own message, which names switch, port, host, HCA."""
    return "; ".join(item.message for item in items)
