"""Slurm topology on a cloud: the provider's placement of the compute instances, read when the
check runs, turned into the tree Slurm should show by the InfiniBand writer
(``fabric.topology.cloud`` -> ``fabric.topology.render.slurm_switch_view``), and compared with
``scontrol show topology`` on the controller.

Each compute node runs its target's ``PLACEMENT_COMMAND`` (``model.py``), and the target's
``placement.py`` turns what they printed into the graph (AWS: instance ids looked up with
``DescribeInstanceTopology``; GCP: each VM's ``physical_host_topology`` metadata key).

Reading placement is the harness's part: a metadata server or CLI that does not answer is a
:class:`HarnessError`, never a fabric failure. An instance the provider gives no placement for
is named in the check's failure (Slurm would place it nowhere).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from fabric.graph import FabricGraph
from fabric.targets import hook, hooks
from fabric.topology.render import slurm_switch_view
from fabric.verify.harness_error import HarnessError
from fabric.verify.slurm import parse_show_topology

__all__ = ["placement_command", "provider_graph", "topology_problems"]


def provider_graph(
    provider: str,
    readings: Mapping[str, tuple[str, int, str]],
    region: str,
    run: Any = None,
) -> FabricGraph:
    """The provider's placement of the hosts from what its ``PLACEMENT_COMMAND`` gave on each
    (host -> stdout, exit status, stderr), read by the target's ``placement.py`` (``graph``):
    AWS looks the instance ids up in ``region``, GCE metadata is read as it is."""
    graph = hook(provider, "placement", "graph")
    if graph is None:
        having = ", ".join(t for t, _ in hooks("placement", "graph"))
        raise HarnessError(f"no placement source for provider {provider!r} ({having})")
    return graph(readings, region) if run is None else graph(readings, region, run=run)


def placement_command(provider: str) -> str:
    """What each compute node runs to give its placement (``PLACEMENT_COMMAND`` of the
    provider's ``model.py``); a harness error for a provider without one."""
    command = hook(provider, "model", "PLACEMENT_COMMAND")
    if command is None:
        raise HarnessError(f"no placement command for provider {provider!r}")
    return str(command)


def topology_problems(graph: FabricGraph, nodes: Sequence[str], scontrol: str) -> list[str]:
    """What ``scontrol show topology`` (its text) shows against the tree the provider's
    placement of ``nodes`` gives: a switch missing, different or extra; an instance the
    provider gives no placement for."""
    expected = slurm_switch_view(graph, nodes)
    loaded = parse_show_topology(scontrol)
    problems = [f"no placement from the provider: {w}" for w in graph.warnings]
    if not expected:
        return problems
    if not loaded:
        problems.append(
            "Slurm shows no topology (TopologyPlugin none, or no topology.conf loaded); the "
            f"provider places the nodes under {len(expected)} network nodes"
        )
        return problems
    from fabric.hostlist import expand

    for name, (nodes_below, kids) in sorted(expected.items()):
        fields = loaded.get(name)
        if fields is None:
            problems.append(
                f"Slurm has no switch {name} (the provider's network node above {nodes_below})"
            )
            continue
        got = (
            sorted(expand(fields["Nodes"])) if fields.get("Nodes") else [],
            sorted(expand(fields["Switches"])) if fields.get("Switches") else [],
        )
        if got != (nodes_below, kids):
            problems.append(
                f"Slurm switch {name}: nodes {got[0]} switches {got[1]}; the provider places "
                f"nodes {nodes_below} switches {kids} there"
            )
    extra = sorted(set(loaded) - set(expected))
    if extra:
        problems.append(f"Slurm has switches the provider does not place the nodes under: {extra}")
    return problems
