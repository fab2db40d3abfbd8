"""Slurm topology files from a ``FabricGraph``: ``topology.conf`` (tree and block plugins) and
``topology.yaml`` (Slurm 25.05+).

Placement rule for hosts cabled to several leaves (rail-optimized fabrics, where HCA k of
every node of a scalable unit goes to leaf k of that unit): **a host belongs to its rail-0
leaf**, i.e. the first leaf, in switch-name order (natural sort: leaf2 < leaf10), that any
of its HCAs is cabled to. In a rail-optimized unit every node reaches the same set of rail
leaves, so the rail-0 leaf stands for the whole scalable unit: Slurm packs jobs into one unit
(one hop over every rail) before spilling over the spines, which is what NCCL traffic wants.
The other rail leaves of the unit list no nodes; they are folded into the rail-0 leaf, so a
spine's ``Switches=`` lists the rail-0 leaves it reaches through any rail. Without the rule a
host would sit under several leaf switches, which the tree plugin does not model.

Tree levels: Slurm leaf switches carry ``Nodes=``; every other switch lists the switches one
hop closer to the hosts (by BFS distance) in ``Switches=``. Switches that reach no host are
left out. Host lists are compressed the way Slurm writes them (``fabric.hostlist.compress``).
Blocks (``topology/block``): one block per Slurm leaf switch, named after it.
"""

from __future__ import annotations

import re

import yaml

from fabric.hostlist import compress
from fabric.topology.graph import FabricGraph, GraphError

_DIGITS = re.compile(r"(\d+)")


def natural_key(name: str) -> tuple[object, ...]:
    """Sort key that orders ``leaf2`` before ``leaf10``."""
    return tuple(int(p) if p.isdigit() else p for p in _DIGITS.split(name))


class SlurmTree:
    """The Slurm view of a fabric: leaf switch -> hosts, upper switch -> child switches."""

    def __init__(self, leaves: dict[str, list[str]], uppers: dict[str, list[str]]) -> None:
        self.leaves = leaves
        self.uppers = uppers

    def hosts(self) -> list[str]:
        """Every host, in leaf order."""
        return [h for hosts in self.leaves.values() for h in hosts]


def slurm_tree(graph: FabricGraph) -> SlurmTree:
    """Apply the module's placement rule: hosts to their rail-0 leaf; upper levels by BFS."""
    switches = graph.switches
    order = {guid: natural_key(sw.name) for guid, sw in switches.items()}
    host_leaf: dict[str, str] = {}
    sw_adj: dict[str, set[str]] = {guid: set() for guid in switches}
    for link in graph.links:
        a, b = link.a_guid, link.b_guid
        if a in switches and b in switches:
            if a != b:
                sw_adj[a].add(b)
                sw_adj[b].add(a)
            continue
        if a in switches:
            sw, ca = a, graph.cas.get(b)
        elif b in switches:
            sw, ca = b, graph.cas.get(a)
        else:
            continue
        if ca is None or ca.host is None or ca.kind != "hca":
            continue
        best = host_leaf.get(ca.host)
        if best is None or order[sw] < order[best]:
            host_leaf[ca.host] = sw
    leaf_hosts: dict[str, list[str]] = {}
    for host, sw in host_leaf.items():
        leaf_hosts.setdefault(sw, []).append(host)
    # Fold rail leaves (host-bearing switches left without hosts) into the rail-0 leaf.
    leaf_guids = set(leaf_hosts)
    rail_of: dict[str, str] = {}
    for link in graph.links:
        for sw, other in ((link.a_guid, link.b_guid), (link.b_guid, link.a_guid)):
            ca = graph.cas.get(other)
            if sw in switches and sw not in leaf_guids and ca is not None and ca.host in host_leaf:
                rail_of.setdefault(sw, host_leaf[ca.host])
    level: dict[str, int] = {g: 0 for g in leaf_guids}
    level.update({g: 0 for g in rail_of})
    frontier = list(level)
    while frontier:
        nxt = []
        for g in frontier:
            for n in sw_adj[g]:
                if n not in level:
                    level[n] = level[g] + 1
                    nxt.append(n)
        frontier = nxt
    uppers: dict[str, set[str]] = {}
    for g, lvl in level.items():
        if lvl == 0:
            continue
        children = uppers.setdefault(g, set())
        for n in sw_adj[g]:
            if level.get(n) == lvl - 1:
                children.add(rail_of.get(n, n))
    name = {g: sw.name for g, sw in switches.items()}
    leaves = {name[g]: hosts for g, hosts in sorted(leaf_hosts.items(), key=lambda kv: order[kv[0]])}
    upper_names = {
        name[g]: sorted((name[c] for c in kids), key=natural_key)
        for g, kids in sorted(uppers.items(), key=lambda kv: (level[kv[0]], order[kv[0]]))
        if kids
    }
    for sw_name in list(leaves) + list(upper_names):
        if re.search(r"[\s=,\[\]#]", sw_name):
            raise GraphError(f"switch name {sw_name!r} cannot be a Slurm SwitchName; set a node description without spaces")
    return SlurmTree(leaves, upper_names)


def tree_conf(graph: FabricGraph) -> str:
    """Return ``topology.conf`` for ``TopologyPlugin=topology/tree``."""
    tree = slurm_tree(graph)
    lines = ["# topology.conf (topology/tree) written by railyard; hosts under their rail-0 leaf"]
    lines += [f"SwitchName={sw} Nodes={compress(hosts)}" for sw, hosts in tree.leaves.items()]
    lines += [f"SwitchName={sw} Switches={compress(kids)}" for sw, kids in tree.uppers.items()]
    return "\n".join(lines) + "\n"


def _blocks(graph: FabricGraph, block_size: int | None) -> dict[str, list[str]]:
    blocks = slurm_tree(graph).leaves
    if block_size is not None:
        small = {b: len(h) for b, h in blocks.items() if len(h) < block_size}
        if small:
            raise GraphError(
                f"block size {block_size} is larger than blocks {small}; Slurm needs every block to "
                f"hold at least BlockSizes' first value: use --block-size {min(len(h) for h in blocks.values())} or less"
            )
    return blocks


def block_conf(graph: FabricGraph, block_size: int | None = None) -> str:
    """Return ``topology.conf`` for ``TopologyPlugin=topology/block`` (Slurm 23.11+)."""
    lines = ["# topology.conf (topology/block) written by railyard; one block per leaf (scalable unit)"]
    lines += [f"BlockName={b} Nodes={compress(h)}" for b, h in _blocks(graph, block_size).items()]
    if block_size is not None:
        lines.append(f"BlockSizes={block_size}")
    return "\n".join(lines) + "\n"


def topology_yaml(graph: FabricGraph, block_size: int | None = None) -> str:
    """Return ``topology.yaml`` (Slurm 25.05+): a default ``tree`` topology and a ``block`` one."""
    tree = slurm_tree(graph)
    switches: list[dict[str, str]] = [{"switch": s, "nodes": compress(h)} for s, h in tree.leaves.items()]
    switches += [{"switch": s, "children": compress(k)} for s, k in tree.uppers.items()]
    block: dict[str, object] = {
        "blocks": [{"block": b, "nodes": compress(h)} for b, h in _blocks(graph, block_size).items()]
    }
    if block_size is not None:
        block = {"block_sizes": [block_size], **block}
    doc = [
        {"topology": "fabric", "cluster_default": True, "tree": {"switches": switches}},
        {"topology": "blocks", "cluster_default": False, "block": block},
    ]
    return yaml.safe_dump(doc, sort_keys=False)
