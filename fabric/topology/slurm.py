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
left out, and so are top switches whose single child is an upper switch (an unpopulated leaf
would otherwise sit above its spine). Host lists are compressed the way Slurm writes them
(``fabric.hostlist.compress``).
Blocks (``topology/block``): one block per Slurm leaf switch, named after it.
"""

from __future__ import annotations

import gc
import re
from itertools import repeat
from operator import attrgetter

import yaml

from fabric.hostlist import compress
from fabric.topology.graph import FabricGraph, GraphError, SwitchEnds

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
    enabled = gc.isenabled()
    gc.disable()  # builds only acyclic containers; the collector would rescan the whole graph
    try:
        return _slurm_tree(graph)
    finally:
        if enabled:
            gc.enable()


def _slurm_tree(graph: FabricGraph) -> SlurmTree:
    switches = graph.switches
    order = {guid: natural_key(sw.name) for guid, sw in switches.items()}
    rank_of = {key: n for n, key in enumerate(sorted(set(order.values())))}
    rank = {guid: rank_of[key] for guid, key in order.items()}  # same comparisons as the keys
    ends = graph.switch_ends()
    cas = graph.cas
    hosts = dict(zip(cas, map(attrgetter("host"), cas.values()), strict=True))  # None for no host
    hca_hosts = (
        hosts
        if set(map(attrgetter("kind"), cas.values())) <= {"hca"}
        else {g: ca.host for g, ca in cas.items() if ca.kind == "hca"}
    )
    host_leaf = _host_leaves(ends, hca_hosts, rank)
    leaf_hosts: dict[str, list[str]] = {}
    for host, sw in host_leaf.items():
        leaf_hosts.setdefault(sw, []).append(host)
    rail_of = _rail_leaves(ends, hosts, set(leaf_hosts), host_leaf)
    sw_adj: dict[str, set[str]] = {guid: set() for guid in switches}
    for sw, others in ends:
        sw_adj[sw].update(filter(switches.__contains__, others))
    for sw, kids in sw_adj.items():
        kids.discard(sw)
    level = _levels([*leaf_hosts, *rail_of], sw_adj)
    at_level: dict[int, set[str]] = {}
    for g, lvl in level.items():
        at_level.setdefault(lvl, set()).add(g)
    uppers: dict[str, set[str]] = {}
    for g, lvl in level.items():
        if lvl:
            below = sw_adj[g] & at_level[lvl - 1]
            uppers[g] = set(
                map(rail_of.get, below, below)
            )  # rail leaves folded into their rail-0 leaf
    name = {g: sw.name for g, sw in switches.items()}
    leaves = {name[g]: hosts for g, hosts in sorted(leaf_hosts.items(), key=lambda kv: rank[kv[0]])}
    _prune_pass_through_tops(uppers)
    upper_names = {
        name[g]: [name[c] for c in sorted(kids, key=rank.__getitem__)]
        for g, kids in sorted(uppers.items(), key=lambda kv: (level[kv[0]], rank[kv[0]]))
        if kids
    }
    for sw_name in list(leaves) + list(upper_names):
        if re.search(r"[\s=,\[\]#]", sw_name):
            raise GraphError(
                f"switch name {sw_name!r} cannot be a Slurm SwitchName; set a node description without spaces"
            )
    return SlurmTree(leaves, upper_names)


def _host_leaves(
    ends: list[SwitchEnds], hca_host: dict[str, str | None], rank: dict[str, int]
) -> dict[str, str]:
    """Host -> its rail-0 leaf (lowest-ranked switch any of its HCAs is cabled to; the first seen
    in link order on a tie), hosts in first-seen order."""
    host_leaf: dict[str, str] = {}
    for sw, others in ends:
        hosts = list(filter(None, map(hca_host.get, others)))
        if not hosts:
            continue
        r = rank[sw]
        bests = list(map(host_leaf.get, hosts))
        if not any(bests):  # all new (the first rail): in order, a repeated host keeps its first
            host_leaf.update(zip(hosts, repeat(sw)))
        elif None not in bests and r >= max(map(rank.__getitem__, bests)):
            continue  # all placed on leaves at least as low (the other rails)
        else:
            for host in hosts:
                best = host_leaf.get(host)
                if best is None or r < rank[best]:
                    host_leaf[host] = sw
    return host_leaf


def _rail_leaves(
    ends: list[SwitchEnds],
    hosts: dict[str, str | None],
    leaves: set[str],
    host_leaf: dict[str, str],
) -> dict[str, str]:
    """Rail leaves (switches cabled to placed hosts that hold none) -> the rail-0 leaf of the first
    such host they reach, to be folded into it."""
    rail_of: dict[str, str] = {}
    for sw, others in ends:
        if sw in leaves or sw in rail_of:
            continue
        for host in filter(host_leaf.__contains__, map(hosts.get, others)):
            rail_of[sw] = host_leaf[host]
            break
    return rail_of


def _prune_pass_through_tops(uppers: dict[str, set[str]]) -> None:
    """Drop, repeatedly, top switches (no other switch lists them) whose single child is itself
    an upper switch: they hold the same nodes as that child. A leaf with no host (an
    unpopulated leaf of a fat tree) is one hop above its spine by BFS distance and would
    otherwise top the tree. A spine above a single leaf stays, as Slurm is usually shown."""
    while True:
        listed = set().union(*uppers.values()) if uppers else set()
        tops = [
            g
            for g, kids in uppers.items()
            if g not in listed and len(kids) == 1 and kids <= uppers.keys()
        ]
        if not tops:
            return
        for g in tops:
            del uppers[g]


def _levels(leaves: list[str], sw_adj: dict[str, set[str]]) -> dict[str, int]:
    """BFS distance of every switch reachable from ``leaves`` (level 0)."""
    level = dict.fromkeys(leaves, 0)
    frontier = set(level)
    depth = 0
    while frontier:
        depth += 1
        frontier = set().union(*map(sw_adj.__getitem__, frontier)) - level.keys()
        level.update(dict.fromkeys(frontier, depth))
    return level


def tree_conf(graph: FabricGraph) -> str:
    """Return ``topology.conf`` for ``TopologyPlugin=topology/tree``."""
    tree = slurm_tree(graph)
    lines = ["# topology.conf (topology/tree) written by railyard; hosts under their rail-0 leaf"]
    lines += [f"SwitchName={sw} Nodes={compress(hosts)}" for sw, hosts in tree.leaves.items()]
    memo: dict[tuple[str, ...], str] = {}  # spines of one plane often list the same leaves
    for sw, kids in tree.uppers.items():
        key = tuple(kids)
        if key not in memo:
            memo[key] = compress(kids)
        lines.append(f"SwitchName={sw} Switches={memo[key]}")
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
    lines = [
        "# topology.conf (topology/block) written by railyard; one block per leaf (scalable unit)"
    ]
    lines += [f"BlockName={b} Nodes={compress(h)}" for b, h in _blocks(graph, block_size).items()]
    if block_size is not None:
        lines.append(f"BlockSizes={block_size}")
    return "\n".join(lines) + "\n"


def topology_yaml(graph: FabricGraph, block_size: int | None = None) -> str:
    """Return ``topology.yaml`` (Slurm 25.05+): a default ``tree`` topology and a ``block`` one."""
    tree = slurm_tree(graph)
    switches: list[dict[str, str]] = [
        {"switch": s, "nodes": compress(h)} for s, h in tree.leaves.items()
    ]
    switches += [{"switch": s, "children": compress(k)} for s, k in tree.uppers.items()]
    block: dict[str, object] = {
        "blocks": [
            {"block": b, "nodes": compress(h)} for b, h in _blocks(graph, block_size).items()
        ]
    }
    if block_size is not None:
        block = {"block_sizes": [block_size], **block}
    doc = [
        {"topology": "fabric", "cluster_default": True, "tree": {"switches": switches}},
        {"topology": "blocks", "cluster_default": False, "block": block},
    ]
    return yaml.safe_dump(doc, sort_keys=False)
