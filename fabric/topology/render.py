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

import itertools
from collections.abc import Iterable
from itertools import chain
from operator import and_, attrgetter, or_
from typing import NamedTuple

from fabric.graph import Ca, FabricGraph, Switch
from fabric.topology.slurm import block_conf, slurm_tree_of_ends, topology_yaml, tree_conf


class _Kept(NamedTuple):
    """What ``only_hosts`` keeps of a graph: its switches and CAs, which links (``links[i]``
    where ``link_kept[i]``), and the kept links' ends (``a_end[j]``, ``b_end[j]``: kept link
    j's)."""

    switches: dict[str, Switch]
    cas: dict[str, Ca]
    link_kept: list[bool]
    a_end: list[str]
    b_end: list[str]


def _keep(graph: FabricGraph, hosts: Iterable[str]) -> _Kept:
    """``only_hosts``'s selection, from C-level passes over the links' ends (a Python test per
    link took half a second at 16,384 hosts, issue 44)."""
    keep = set(hosts)
    cas = {g: c for g, c in graph.cas.items() if c.kind != "hca" or c.host in keep}
    dropped = graph.cas.keys() - cas.keys()
    links = graph.links
    a_end = list(map(attrgetter("a_guid"), links))
    b_end = list(map(attrgetter("b_guid"), links))
    switches = graph.switches
    if dropped:  # else no switch loses its hosts
        dropped_leaves = _cabled(dropped, a_end, b_end) & switches.keys()
        kept_leaves = _hosting(dropped_leaves, cas, a_end, b_end)
        switches = {
            g: sw for g, sw in switches.items() if g in kept_leaves or g not in dropped_leaves
        }
    alive = switches.keys() | cas.keys()
    kept = list(map(and_, map(alive.__contains__, a_end), map(alive.__contains__, b_end)))
    return _Kept(
        dict(switches),
        cas,
        kept,
        list(itertools.compress(a_end, kept)),
        list(itertools.compress(b_end, kept)),
    )


def _cabled(ca_guids: set[str], a_end: list[str], b_end: list[str]) -> set[str]:
    """The nodes cabled to any of ``ca_guids`` (``a_end[i]`` and ``b_end[i]``: link i's)."""
    return {
        *itertools.compress(b_end, map(ca_guids.__contains__, a_end)),
        *itertools.compress(a_end, map(ca_guids.__contains__, b_end)),
    }


def _hosting(
    switches: set[str], cas: dict[str, Ca], a_end: list[str], b_end: list[str]
) -> set[str]:
    """Those of ``switches`` cabled to an HCA of ``cas`` (a Python test for the few links of
    ``switches`` only)."""
    touch = map(or_, map(switches.__contains__, a_end), map(switches.__contains__, b_end))
    out = set()
    for a, b in itertools.compress(zip(a_end, b_end, strict=True), touch):
        for sw, other in ((a, b), (b, a)):
            ca = cas.get(other)
            if sw in switches and ca is not None and ca.kind == "hca":
                out.add(sw)
    return out


def only_hosts(graph: FabricGraph, hosts: Iterable[str]) -> FabricGraph:
    """``graph`` without the host CAs (and their links) whose host is not in ``hosts``, and
    without the leaf switches left with no host (a leaf of only subnet-manager or storage
    hosts is no place for a Slurm job, and kept it would look like an upper level)."""
    kept = _keep(graph, hosts)
    return FabricGraph(
        switches=kept.switches,
        cas=kept.cas,
        links=list(itertools.compress(graph.links, kept.link_kept)),
        warnings=list(graph.warnings),
    )


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
    kept = _keep(graph, hosts)  # only_hosts(graph, hosts), without building its links
    near, far = _switch_ends(kept.a_end, kept.b_end, kept.switches)
    tree = slurm_tree_of_ends(kept.switches, kept.cas, near, far)
    below = {sw: sorted(nodes) for sw, nodes in tree.leaves.items()}

    def nodes_below(sw: str) -> list[str]:
        """The nodes below ``sw``, sorted: its children's lists, which are sorted runs, joined
        in the order of their first nodes, so the sort only merges them (sorting each switch's
        set anew took 0.13 s at 16,384 hosts)."""
        if sw not in below:
            kids = tree.uppers.get(sw, [])
            runs = sorted(map(nodes_below, kids), key=lambda run: run[:1])
            nodes = sorted(chain.from_iterable(runs))
            if not tree.leaves.keys() >= set(kids):  # a node below two upper children
                nodes = list(dict.fromkeys(nodes))  # (a host is in one leaf only)
            below[sw] = nodes
        return below[sw]

    out = {sw: (below[sw], []) for sw in tree.leaves}
    out |= {sw: (nodes_below(sw), sorted(kids)) for sw, kids in tree.uppers.items()}
    return out


def _switch_ends(
    a_end: list[str], b_end: list[str], switches: dict[str, Switch]
) -> tuple[list[str], list[str]]:
    """``FabricGraph.switch_ends`` of these links as parallel lists (``slurm_tree_of_ends``):
    the switch of each link end on a switch and the node at the link's far end, in link order
    (the a end, then the b end)."""
    on_switch = list(
        chain.from_iterable(
            zip(map(switches.__contains__, a_end), map(switches.__contains__, b_end), strict=True)
        )
    )
    near = itertools.compress(chain.from_iterable(zip(a_end, b_end, strict=True)), on_switch)
    far = itertools.compress(chain.from_iterable(zip(b_end, a_end, strict=True)), on_switch)
    return list(near), list(far)
