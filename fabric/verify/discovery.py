"""Declared-vs-discovered findings per declared cable, for the discovery checks.

Until ``fabric.topology.diff`` lands this compares by node names (switch description,
``host/device`` for HCAs) with ``FabricGraph.neighbours``; swap in the topology diff then.
"""

from __future__ import annotations

from pydantic import BaseModel

from fabric.topology.graph import FabricGraph
from fabric.verify.plan import CheckPlan, DeclaredLink


class Finding(BaseModel):
    """One difference: its kind and a message naming switch, port, host and HCA."""

    kind: str  # missing | miscabled | speed | undeclared
    message: str


def _label(name: str, port: int) -> str:
    if "/" in name:
        host, device = name.split("/", 1)
        return f"{host} HCA {device} port {port}"
    return f"{name} port {port}"


def _ports(graph: FabricGraph) -> dict[tuple[str, int], tuple[str, int, str, str]]:
    """(node name, port) -> (peer name, peer port, width, speed)."""
    out: dict[tuple[str, int], tuple[str, int, str, str]] = {}
    for guid, ends in graph.neighbours().items():
        for port, peer, peer_port, link in ends:
            out[(graph.node_name(guid), port)] = (graph.node_name(peer), peer_port, link.width, link.speed)
    return out


def compare(declared: list[DeclaredLink], discovered: FabricGraph) -> dict[str, list[Finding]]:
    """Declared link id -> its findings; ``"undeclared"`` -> cables found but not declared."""
    found = _ports(discovered)
    out: dict[str, list[Finding]] = {}
    wanted: set[tuple[str, int]] = set()
    for link in declared:
        a, b = (link.a_name, link.a_port), (link.b_name, link.b_port)
        wanted |= {a, b}
        want = f"{_label(*a)} <-> {_label(*b)}"
        problems: list[Finding] = []
        peer_of_a, peer_of_b = found.get(a), found.get(b)
        if peer_of_a is None and peer_of_b is None:
            problems.append(Finding(kind="missing", message=f"missing link {want}: neither end is linked"))
        elif peer_of_a is None or (peer_of_a[0], peer_of_a[1]) != b:
            side, seen = (a, peer_of_a) if peer_of_a else (b, peer_of_b)
            assert seen is not None
            problems.append(Finding(
                kind="miscabled",
                message=f"miscabled {want}: {_label(*side)} is cabled to {_label(seen[0], seen[1])}",
            ))
        elif (peer_of_a[2].lower(), peer_of_a[3]) != (link.width.lower(), link.speed):
            problems.append(Finding(
                kind="speed",
                message=f"wrong speed {want}: {peer_of_a[2]}{peer_of_a[3]}, declared {link.width}{link.speed}",
            ))
        out[link.id] = problems
    extra = []
    for (name, port), (peer, peer_port, width, speed) in sorted(found.items()):
        if (name, port) not in wanted and (peer, peer_port) not in wanted and (name, port) < (peer, peer_port):
            extra.append(Finding(kind="undeclared",
                                 message=f"undeclared link {_label(name, port)} <-> {_label(peer, peer_port)} ({width}{speed})"))
    out["undeclared"] = extra
    return out


def findings_for(plan: CheckPlan, discovered: FabricGraph) -> dict[str, list[Finding]]:
    """Findings of the plan's declared links (as the target reports them) against ``discovered``."""
    return compare(plan.declared_links, discovered)
