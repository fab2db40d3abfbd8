"""The ``kubernetes_labels`` family (``orchestrator: kubernetes`` or ``both``): every node's
topology labels, read back from the API server, against the fabric as discovered
(``ibnetdiscover`` from the discovery host), not only as declared: a host recabled under
another leaf whose label still names the old one is named, with both leaves.

The judging (:func:`label_problems`) is pure; ``fabric/verify/checks/test_kubernetes.py``
reads the labels (``fabric.components.kubernetes.read_node_labels``, credentials from
``RAILYARD_KUBE_TOKEN`` and ``RAILYARD_KUBE_CA``) and the discovered fabric.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fabric.graph import FabricGraph, GraphError
from fabric.verify.families.base import Family, Fixture, Source

if TYPE_CHECKING:
    from fabric.verify.plan import CheckPlan

#: Where ``check --plan`` lists this family: after the Slurm families.
ORDER = 95
#: Labels railyard's topology writer owns (tiers, rails); others on a node are not judged.
OWNED_PREFIXES = (
    "fabric.topograph.run/",
    "network.topology.nvidia.com/",
    "railyard.dev/rail-",
)


def _kubernetes_nodes(plan: CheckPlan) -> list[str]:
    """The selected hosts that carry topology labels in the declared fabric."""
    if plan.spec.kubernetes is None or plan.declared_graph is None:
        return []
    from fabric.topology.kubernetes import node_labels

    try:
        labelled = node_labels(plan.declared_graph, plan.spec.kubernetes.labels.scheme).labels
    except GraphError:
        return []
    return [h for h in plan.hosts if h.lower() in labelled]


def _why(plan: CheckPlan) -> str | None:
    if plan.spec.kubernetes is None:
        return f"orchestrator is {plan.spec.orchestrator}: no Kubernetes nodes to read"
    if plan.discovery_host is None:
        return "no SM host selected to run ibnetdiscover on (the fabric as discovered)"
    if not plan.kubernetes_nodes:
        return "no selected host carries topology labels in the declared fabric"
    return None


def _owned(key: str) -> bool:
    return key.startswith(OWNED_PREFIXES)


def label_problems(
    node: str,
    found: dict[str, str] | None,
    discovered: FabricGraph,
    scheme: str = "topograph",
) -> list[str]:
    """What is wrong with ``node``'s topology labels (``found``, as the API server has them;
    None: no such Node) given the discovered fabric: one line per label that names another
    switch than the discovered one, is missing, or is left from a fabric that is gone."""
    from fabric.topology.kubernetes import node_labels

    name = node.lower()
    expected = node_labels(discovered, scheme).labels.get(name)  # type: ignore[arg-type]
    if found is None:
        return [f"{node}: no Node object on the API server"]
    if expected is None:
        return [f"{node}: not in the discovered fabric (no HCA cabled to a switch)"]
    problems = []
    for key, value in expected.items():
        have = found.get(key)
        if have is None:
            problems.append(f"{node}: label {key} missing; the discovered fabric says {value}")
        elif have != value:
            problems.append(
                f"{node}: label {key}={have}, but the discovered fabric has it under {value}"
                " (recabled, or labels not applied since)"
            )
    for key in sorted(k for k in found if _owned(k) and k not in expected):
        problems.append(
            f"{node}: label {key}={found[key]} names no switch of the discovered fabric"
        )
    return problems


SOURCES: dict[str, Source] = {"kubernetes_nodes": _kubernetes_nodes}
FAMILIES = (
    Family(
        "kubernetes_labels",
        ("test_topology_labels",),
        "kubernetes_nodes",
        _why,
        fixtures=(
            Fixture(
                "kubernetes_node",
                lambda plan: plan.kubernetes_nodes,
                on=lambda plan, _: plan.discovery_host,
            ),
        ),
    ),
)
