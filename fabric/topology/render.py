"""Slurm's topology.conf for the hand-off, from the discovered or the declared fabric.

``python -m fabric topology --from-ibnetdiscover FILE --nodes gpu[01-08]`` (or
``--spec FILE``) prints it for the tree (or block) plugin; ``--nodes`` (``only_hosts``)
keeps only the hosts that are Slurm nodes. Slurm 22.05's topology/tree refuses to start on a topology.conf
naming a host that slurm.conf does not ("Invalid node name (%s) in switch config"), and a
fabric also carries subnet-manager, storage and login hosts. The files are written by
``fabric.topology.slurm`` (``tree_conf``, ``block_conf``); nothing here writes Slurm syntax.

The output depends only on the fabric's shape and names, never on LIDs, GUID order or the
time of discovery, so the rendered file changes only when the cabling does.
"""

from __future__ import annotations

from collections.abc import Iterable

from fabric.graph import FabricGraph
from fabric.topology.slurm import block_conf, slurm_tree, topology_yaml, tree_conf


def only_hosts(graph: FabricGraph, hosts: Iterable[str]) -> FabricGraph:
    """``graph`` without the host CAs (and their links) whose host is not in ``hosts``, and
    without the leaf switches left with no host (a leaf of only subnet-manager or storage
    hosts is no place for a Slurm job, and kept it would look like an upper level)."""
    keep = set(hosts)
    cas = {g: c for g, c in graph.cas.items() if c.kind != "hca" or c.host in keep}
    dropped = set(graph.cas) - set(cas)

    def host_switches(ca_guids: set[str]) -> set[str]:
        out = set()
        for link in graph.links:
            for a, b in ((link.a_guid, link.b_guid), (link.b_guid, link.a_guid)):
                if a in ca_guids and b in graph.switches:
                    out.add(b)
        return out

    kept_leaves = host_switches({g for g, c in cas.items() if c.kind == "hca"})
    dropped_leaves = host_switches(dropped)  # once, not per switch (issue 44: was quadratic)
    switches = {
        g: sw for g, sw in graph.switches.items() if g in kept_leaves or g not in dropped_leaves
    }
    alive = set(switches) | set(cas)
    links = [link for link in graph.links if link.a_guid in alive and link.b_guid in alive]
    return FabricGraph(switches=switches, cas=cas, links=links, warnings=list(graph.warnings))


def render(
    graph: FabricGraph,
    plugin: str = "tree",
    nodes: Iterable[str] | None = None,
    block_size: int | None = None,
) -> str:
    """topology.conf for ``plugin`` tree or block, or topology.yaml for ``yaml``, restricted to
    ``nodes`` when given."""
    if nodes is not None:
        graph = only_hosts(graph, nodes)
    if plugin == "block":
        return block_conf(graph, block_size)
    if plugin == "yaml":
        return topology_yaml(graph, block_size)
    return tree_conf(graph)


def slurm_switch_view(
    graph: FabricGraph, hosts: Iterable[str]
) -> dict[str, tuple[list[str], list[str]]]:
    """Switch name -> (nodes below it, child switches), as ``scontrol show topology`` shows the
    tree plugin's topology.conf that ``tree_conf`` writes for ``graph`` restricted to ``hosts``
    (Slurm lists every node below a switch, not only its own)."""
    tree = slurm_tree(only_hosts(graph, hosts))
    below: dict[str, set[str]] = {sw: set(nodes) for sw, nodes in tree.leaves.items()}

    def nodes_below(sw: str) -> set[str]:
        if sw not in below:
            below[sw] = set().union(*map(nodes_below, tree.uppers.get(sw, [])))
        return below[sw]

    out = {sw: (sorted(nodes), []) for sw, nodes in tree.leaves.items()}
    out |= {sw: (sorted(nodes_below(sw)), sorted(kids)) for sw, kids in tree.uppers.items()}
    return out
