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

import itertools
import re
from collections.abc import Iterable, Sequence
from itertools import chain, repeat
from operator import attrgetter, is_not

from fabric.gcpause import gc_paused
from fabric.graph import Ca, FabricGraph, GraphError, Switch, SwitchEnds
from fabric.hostlist import compress

_DIGITS = re.compile(r"(\d+)")


def natural_key(name: str) -> tuple[object, ...]:
    """Sort key that orders ``leaf2`` before ``leaf10``."""
    return tuple(int(p) if p.isdigit() else p for p in _DIGITS.split(name))


class SlurmTree:
    """The Slurm view of a fabric: leaf switch -> hosts, upper switch -> child switches;
    ``merged``: a kept upper switch -> every switch it stands for (itself first), for switches
    merged because their children are the same."""

    def __init__(
        self,
        leaves: dict[str, list[str]],
        uppers: dict[str, list[str]],
        merged: dict[str, list[str]] | None = None,
    ) -> None:
        self.leaves = leaves
        self.uppers = uppers
        self.merged = merged or {}

    def tops(self) -> list[str]:
        """Switches no other switch lists (one per disjoint part of the fabric), in file order."""
        listed = {kid for kids in self.uppers.values() for kid in kids}
        return [sw for sw in [*self.leaves, *self.uppers] if sw not in listed]

    def hosts(self) -> list[str]:
        """Every host, in leaf order."""
        return [h for hosts in self.leaves.values() for h in hosts]


def slurm_tree(graph: FabricGraph, slurm_names: bool = True) -> SlurmTree:
    """Apply the module's placement rule: hosts to their rail-0 leaf; upper levels by BFS.
    ``slurm_names``: refuse a switch name Slurm cannot read (a space, ``=``, ``,``, ...); off
    for outputs that write names their own way (Kubernetes label values)."""
    near, far = _flat_ends(graph.switch_ends())
    return slurm_tree_of_ends(graph.switches, graph.cas, near, far, slurm_names)


def slurm_tree_of_ends(
    switches: dict[str, Switch],
    cas: dict[str, Ca],
    near: Sequence[str],
    far: Sequence[str],
    slurm_names: bool = True,
) -> SlurmTree:
    """``slurm_tree`` of the fabric of ``switches`` and ``cas`` given by its switch ends
    (``FabricGraph.switch_ends``) one link end an entry, in link order: switch ``near[i]`` is
    cabled to node ``far[i]``."""
    with gc_paused():
        return _slurm_tree(switches, cas, near, far, slurm_names)


def _slurm_tree(
    switches: dict[str, Switch],
    cas: dict[str, Ca],
    near: Sequence[str],
    far: Sequence[str],
    slurm_names: bool,
) -> SlurmTree:
    order = {guid: natural_key(sw.name) for guid, sw in switches.items()}
    rank_of = {key: n for n, key in enumerate(sorted(set(order.values())))}
    rank = {guid: rank_of[key] for guid, key in order.items()}  # same comparisons as the keys
    hosts = dict(zip(cas, map(attrgetter("host"), cas.values()), strict=True))  # None for no host
    hca_hosts = (
        hosts
        if set(map(attrgetter("kind"), cas.values())) <= {"hca"}
        else {g: ca.host for g, ca in cas.items() if ca.kind == "hca"}
    )
    to_ca = list(map(cas.__contains__, far))
    node_near = list(itertools.compress(near, to_ca))
    node_far = list(itertools.compress(far, to_ca))
    to_switch = list(map(switches.__contains__, far))
    host_leaf = _host_leaves(node_near, node_far, hca_hosts, rank)
    if not host_leaf:
        raise GraphError(
            f"no switch is cabled to a host's HCA ({len(switches)} switches, {len(cas)} CAs), "
            "so Slurm would get an empty topology; give the fabric with its hosts"
        )
    leaf_hosts: dict[str, list[str]] = {}
    for host, sw in host_leaf.items():
        leaf_hosts.setdefault(sw, []).append(host)
    rail_of = _rail_leaves(node_near, node_far, hosts, set(leaf_hosts), host_leaf)
    sw_adj = _switch_adjacency(
        itertools.compress(near, to_switch), itertools.compress(far, to_switch), switches
    )
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
    merged = _merge_same_children(uppers, level, rank)
    _prune_pass_through_tops(uppers)
    upper_names = {
        name[g]: [name[c] for c in sorted(kids, key=rank.__getitem__)]
        for g, kids in sorted(uppers.items(), key=lambda kv: (level[kv[0]], rank[kv[0]]))
        if kids
    }
    for sw_name in list(leaves) + list(upper_names) if slurm_names else ():
        if re.search(r"[\s=,\[\]#]", sw_name):
            raise GraphError(
                f"switch name {sw_name!r} cannot be a Slurm SwitchName; set a node description without spaces"
            )
    merged_names = {name[g]: [name[m] for m in group] for g, group in merged.items() if g in uppers}
    return SlurmTree(leaves, upper_names, merged_names)


def _merge_same_children(
    uppers: dict[str, set[str]], level: dict[str, int], rank: dict[str, int]
) -> dict[str, list[str]]:
    """Merge, level by level from the leaves up, upper switches whose children are the same
    into the first of them (switch-name order): the others are dropped from ``uppers`` and the
    switches above list the kept one. Returns kept switch -> every switch it stands for.

    Spines of one plane or pod all reach the same leaves: written one line each, slurmctld
    took 19.4 s to build its topology from 2,048 such lines (16,384 hosts, issue 16); merged,
    a fraction of a second. Slurm's placement sees the same tree: the merged switches were
    interchangeable for every set of nodes."""
    kept: dict[str, str] = {}
    first: dict[frozenset[str], str] = {}
    merged: dict[str, list[str]] = {}
    for g in sorted(uppers, key=lambda g: (level[g], rank[g])):
        kids = frozenset(map(kept.get, uppers[g], uppers[g]))
        uppers[g] = set(kids)
        head = first.setdefault(kids, g)
        if head != g:
            kept[g] = head
            merged.setdefault(head, [head]).append(g)
            del uppers[g]
    return merged


def _flat_ends(ends: list[SwitchEnds]) -> tuple[Sequence[str], list[str]]:
    """``ends`` one link end an entry, as two parallel sequences: the switch and the node at
    the far end, in order (whether ``ends`` holds one end an entry or several), so what
    follows is C-level maps, not a Python loop per end (385,000 at 16,384 hosts)."""
    if not ends:
        return (), []
    near, groups = zip(*ends, strict=True)
    far = list(chain.from_iterable(groups))
    if len(far) == len(near) and set(map(len, groups)) == {1}:
        return near, far
    return list(chain.from_iterable(map(repeat, near, map(len, groups)))), far


def _host_leaves(
    near: Sequence[str], far: Sequence[str], hca_host: dict[str, str | None], rank: dict[str, int]
) -> dict[str, str]:
    """Host -> its rail-0 leaf (lowest-ranked switch any of its HCAs is cabled to; the first seen
    in link order on a tie), hosts in first-seen order. Switch ``near[i]`` is cabled to node
    ``far[i]``."""
    at = list(map(hca_host.get, far))  # None: a switch, a CA that is no host's HCA
    hosts = list(filter(None, at))
    leaves = list(itertools.compress(near, at))
    ranks = list(map(rank.__getitem__, leaves))
    # The ends from the best to the worst reversed: ranks descending, and (a stable sort of
    # the reversed ends) on a tie the last end first; each host's best end is written last.
    worst_first = sorted(range(len(leaves) - 1, -1, -1), key=ranks.__getitem__, reverse=True)
    best = zip(
        map(hosts.__getitem__, worst_first), map(leaves.__getitem__, worst_first), strict=True
    )
    host_leaf: dict[str, str] = dict.fromkeys(hosts, "")  # first-seen order
    host_leaf.update(best)
    return host_leaf


def _rail_leaves(
    near: Sequence[str],
    far: Sequence[str],
    hosts: dict[str, str | None],
    leaves: set[str],
    host_leaf: dict[str, str],
) -> dict[str, str]:
    """Rail leaves (switches cabled to placed hosts that hold none) -> the rail-0 leaf of the first
    such host they reach, to be folded into it; in the order of those first ends."""
    leaf_at = list(map(host_leaf.get, map(hosts.get, far)))  # None: not a placed host
    placed = list(map(is_not, leaf_at, repeat(None)))
    at = list(itertools.compress(near, placed))
    rail_of: dict[str, str] = dict.fromkeys(at, "")  # first-end order
    # Written from the last end to the first: each switch keeps its first end's leaf.
    rail_of.update(
        zip(reversed(at), reversed(list(itertools.compress(leaf_at, placed))), strict=True)
    )
    for leaf in leaves:
        rail_of.pop(leaf, None)
    return rail_of


def _switch_adjacency(
    near: Iterable[str], far: Iterable[str], switches: dict[str, Switch]
) -> dict[str, set[str]]:
    """Switch -> the other switches it is cabled to (every switch, with none for some), from
    the switch-to-switch ends: ``near[i]`` cabled to ``far[i]``."""
    sw_adj: dict[str, set[str]] = {guid: set() for guid in switches}
    for sw, other in zip(near, far, strict=True):
        sw_adj[sw].add(other)
    for sw, kids in sw_adj.items():
        kids.discard(sw)
    return sw_adj


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


def _comment(text: str, width: int = 96) -> list[str]:
    """``text`` as ``#`` comment lines of at most about ``width`` characters (split at commas
    and spaces: Slurm reads a config file line by line)."""
    lines: list[str] = []
    line = "#"
    for word in re.split(r"(?<=[, ])", text):
        if len(line) + len(word) > width and line != "#":
            lines.append(line.rstrip())
            line = "#  "
        line += word if line[-1] != "#" else " " + word
    lines.append(line.rstrip())
    return lines


def tree_conf(graph: FabricGraph) -> str:
    """Return ``topology.conf`` for ``TopologyPlugin=topology/tree``: one line per switch,
    switches with the same children merged into one line (a comment lists them), and a comment
    when the fabric has several disjoint parts."""
    tree = slurm_tree(graph)
    lines = ["# topology.conf (topology/tree) written by railyard; hosts under their rail-0 leaf"]
    tops = tree.tops()
    if len(tops) > 1:
        lines += _comment(
            f"this fabric has {len(tops)} disjoint parts (pods or planes) that no switch joins, "
            f"topped by {compress(tops)}: slurmctld logs that no switch reaches all nodes, and "
            "a job is placed within one part when it fits"
        )
    lines += [f"SwitchName={sw} Nodes={compress(hosts)}" for sw, hosts in tree.leaves.items()]
    for sw, kids in tree.uppers.items():
        group = tree.merged.get(sw)
        if group:
            lines += _comment(
                f"SwitchName={sw} stands for {len(group)} switches with the same children: "
                f"{compress(group)}"
            )
        lines.append(f"SwitchName={sw} Switches={compress(kids)}")
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
    import yaml  # only this output needs it (start-up of the topology command)

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
