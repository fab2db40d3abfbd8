"""The Slurm families: ``slurm`` (every partition node idle or allocated),
``slurm_topology`` (the declared fat tree as ``scontrol show topology`` shows it) and
``slurm_provider_topology`` (a cloud's placement of the compute nodes against Slurm's
topology, on the targets whose ``model`` part has a ``PLACEMENT_COMMAND``, as for the hand-off)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fabric.graph import GraphError
from fabric.hostlist import expand
from fabric.targets import hook, hooks
from fabric.verify.families.base import Family, Fixture, Source
from fabric.verify.families.params import ProviderTopology

if TYPE_CHECKING:
    from fabric.verify.plan import CheckPlan

#: Where ``check --plan`` lists these families.
ORDER = 90


def _slurm_nodes(plan: CheckPlan) -> list[str]:
    """Nodes Slurm must report idle or allocated (members of a Slurm partition)."""
    names: list[str] = []
    seen: set[str] = set()  # ``names`` before this partition's (sets: issue 44, plans linear)
    selected = set(plan.hosts)
    for part in plan.spec.slurm.partitions:
        members = list(plan.spec.hosts) if part.nodes == "ALL" else expand(part.nodes)
        added = [n for n in members if n in selected and n not in seen]
        names += added
        seen.update(added)
    return names


def _slurm_switches(plan: CheckPlan) -> dict[str, tuple[list[str], list[str]]]:
    """Switch name -> (nodes below it, child switches) ``scontrol show topology`` must show:
    the tree ``fabric.topology.slurm`` writes for the declared fabric and Slurm's nodes (the
    compute hosts, as the hand-off writes topology.conf, whether or not a partition lists
    them yet). The hand-off writes it from the discovered fabric, so a difference is a
    fabric that is not as declared, or a topology.conf that Slurm did not load."""
    try:
        return _switch_view(plan)
    except GraphError:
        return {}  # _topology_why says why


def _switch_view(plan: CheckPlan) -> dict[str, tuple[list[str], list[str]]]:
    """``_slurm_switches``, raising ``GraphError`` where the declared fabric gives Slurm no
    tree (a switch-only cabling: no switch is cabled to a host's HCA)."""
    graph = plan.declared_graph
    if graph is None:
        return {}
    from fabric.topology.render import slurm_switch_view

    return slurm_switch_view(graph, plan.spec.hosts_with_role("compute"))


def _region(plan: CheckPlan) -> str | None:
    """The region the target reads the provider's placement in (its section's ``region``);
    None where it reads none."""
    return getattr(plan.spec.section, "region", None) if _placed(plan) else None


def _provider_topology(plan: CheckPlan) -> list[ProviderTopology]:
    """On a cloud target, with the controller and every compute node selected: the provider's
    placement of the compute nodes (DescribeInstanceTopology, GCE physical host topology)
    against ``scontrol show topology`` (``test_provider_topology``)."""
    region, nodes = _region(plan), plan.spec.hosts_with_role("compute")
    if region is None or plan.slurm_controller is None or not nodes:
        return []
    if not set(nodes) <= set(plan.hosts):
        return []
    return [
        ProviderTopology(
            provider=plan.spec.target,
            controller=plan.slurm_controller,
            nodes=nodes,
            region=region,
        )
    ]


def _placed(plan: CheckPlan) -> bool:
    """Whether the target reads a provider's placement: its ``model`` part names the command
    each node runs (``PLACEMENT_COMMAND``), the one the hand-off renders Slurm's topology by."""
    return hook(plan.spec.target, "model", "PLACEMENT_COMMAND") is not None


def _topology_why(plan: CheckPlan) -> str | None:
    if plan.slurm_switches and plan.slurm_controller is not None:
        return None
    try:
        if not plan.slurm_switches:  # else the view was built: no error to tell (issue 44)
            _switch_view(plan)
    except GraphError as exc:
        return f"the declared fabric gives Slurm no topology tree: {exc}"
    if not _placed(plan):
        return "no declared fat tree or no Slurm controller selected"
    return (
        f"target {plan.spec.target}: no declared fabric; slurm_provider_topology "
        "compares Slurm's topology with the provider's placement"
    )


def _provider_why(plan: CheckPlan) -> str | None:
    if plan.provider_topology:
        return None
    if not _placed(plan):
        placed = " and ".join(t for t, _ in hooks("model", "PLACEMENT_COMMAND"))
        return f"target {plan.spec.target}: the provider's placement is read on {placed}"
    return "needs the Slurm controller and every compute node selected"


SOURCES: dict[str, Source] = {
    "slurm_nodes": _slurm_nodes,
    "slurm_switches": _slurm_switches,
    "provider_topology": _provider_topology,
}
FAMILIES = (
    Family(
        "slurm",
        ("test_node_idle_or_allocated",),
        "slurm_nodes",
        lambda plan: (
            None
            if plan.slurm_nodes and plan.slurm_controller is not None
            else "no Slurm partition nodes or controller among the selected hosts"
        ),
        fixtures=(
            Fixture(
                "slurm_node",
                lambda plan: plan.slurm_nodes,
                on=lambda plan, _: plan.slurm_controller,
            ),
        ),
    ),
    Family(
        "slurm_topology",
        ("test_topology_switch",),
        "slurm_switches",
        _topology_why,
        params=lambda plan: sorted(plan.slurm_switches),
        fixtures=(
            Fixture(
                "slurm_switch",
                lambda plan: sorted(plan.slurm_switches),
                on=lambda plan, _: plan.slurm_controller,
                subject=lambda _, s: f"switch:{s}",
            ),
        ),
    ),
    Family(
        "slurm_provider_topology",
        ("test_provider_topology",),
        "provider_topology",
        _provider_why,
        fixtures=(
            Fixture(
                "provider_topology",
                lambda plan: plan.provider_topology,
                ident=lambda t: t.id,
                on=lambda _, t: t.controller,
                subject=lambda _, __: "fabric",
            ),
        ),
    ),
)
