"""The declared fabric: build a ``FabricGraph`` from a ``ClusterSpec`` fat tree.

Deterministic layout rules:

* Switches are ``leaf01..`` (``topology.leaves``) and ``spine01..`` (``topology.spines``).
* HCA-bearing hosts are taken in declaration order and filled into leaves
  ``nodes_per_leaf`` hosts at a time; host ports use leaf ports 1, 2, ... (a 2-port HCA
  takes two consecutive ports).
* Rail-optimized (``rail_optimized: true``): each ``nodes_per_leaf`` hosts form a scalable
  unit (SU) with ``rails`` leaves (rails = highest HCA ``rail`` + 1); the HCA with rail k of
  the j-th node of SU u goes to leaf ``u * rails + k + 1``, port j + 1.
* Leaf uplinks use the top ``uplinks_per_leaf`` ports of each leaf; uplink i of leaf L (from 0)
  goes to spine ``(L * uplinks_per_leaf + i) mod spines``, on that spine's next free port
  (ports 1, 2, ...): uplinks are dealt round-robin, so spines differ by at most one link.
* Three levels (``pods`` > 1 or ``super_spines``): leaves and spines are split evenly into
  ``pods`` in order (pod p holds leaves ``p * L/pods ..`` and spines ``p * S/pods ..``; a
  rail-optimized scalable unit's leaves stay in one pod), and the rule above deals each pod's
  leaf uplinks over that pod's spines (L counted within the pod). Spine uplinks use the top
  ``uplinks_per_spine`` ports of each spine; uplink j of spine s (from 0, over all pods) goes to
  super-spine ``(s * uplinks_per_spine + j) mod super_spines``, ``superspine01..``, on its next
  free port.
* Host links take width/rate from the HCA; uplinks from ``link_width``/``link_rate_gbps``.
* GUIDs: switch n (leaves, spines, then super-spines, counted from 0) is
  ``SWITCH_GUID_BASE + n``; CA n
  (in placement order) is ``CA_GUID_BASE + 4 n``, leaving room for ibsim's port GUIDs
  (node GUID + port).
"""

from __future__ import annotations

from fabric.graph import Ca, FabricGraph, GraphError, Link, Switch, link_rate, speed_for
from fabric.spec import ClusterSpec, FatTree, HcaSpec
from fabric.targets import line_of
from fabric.topology.cabling import graph_from_cabling

SWITCH_GUID_BASE = 0x0002C90301000000
CA_GUID_BASE = 0x0002C90302000000


def guid_str(value: int) -> str:
    """Format a GUID as ``0x`` + 16 hex digits."""
    return f"0x{value:016x}"


def _topology(spec: ClusterSpec) -> FatTree:
    topo = spec.fabric.topology
    if topo is None:
        raise GraphError(
            "fabric.topology is not set; declare a fat-tree (kind, leaves, nodes_per_leaf)"
        )
    if topo.leaves > 1 and topo.spines == 0:
        raise GraphError(
            f"fabric.topology: {topo.leaves} leaves but spines is 0, so the leaves are not "
            "connected; set spines >= 1 and uplinks_per_leaf >= 1"
        )
    if topo.spines and not topo.uplinks_per_leaf:
        raise GraphError(
            "fabric.topology.uplinks_per_leaf is 0 but spines are declared; set it >= 1"
        )
    if topo.leaves % topo.pods or topo.spines % topo.pods:
        raise GraphError(
            f"fabric.topology.pods: {topo.pods} pods do not split {topo.leaves} leaves and "
            f"{topo.spines} spines evenly; use a common divisor"
        )
    if topo.super_spines and not (topo.spines and topo.uplinks_per_spine):
        raise GraphError(
            "fabric.topology.super_spines need spines and uplinks_per_spine >= 1 to reach them"
        )
    return topo


def _placements(spec: ClusterSpec, topo: FatTree) -> list[tuple[int, str, HcaSpec]]:
    """Return (leaf index, host, hca) for every HCA, in port order per leaf."""
    hosts = [(h, g.hcas) for h, g in spec.hosts.items() if g.hcas]
    out: list[tuple[int, str, HcaSpec]] = []
    if topo.rail_optimized:
        rails = 1 + max(hca.rail for _, hcas in hosts for hca in hcas) if hosts else 1
        units = -(-len(hosts) // topo.nodes_per_leaf)
        if units * rails > topo.leaves:
            raise GraphError(
                f"fabric.topology.leaves is {topo.leaves} but {len(hosts)} hosts in scalable units of "
                f"nodes_per_leaf={topo.nodes_per_leaf} with {rails} rails need {units * rails} leaves; "
                f"raise leaves to {units * rails}"
            )
        for index, (host, hcas) in enumerate(hosts):
            unit = index // topo.nodes_per_leaf
            out.extend((unit * rails + hca.rail, host, hca) for hca in hcas)
    else:
        needed = -(-len(hosts) // topo.nodes_per_leaf)
        if needed > topo.leaves:
            raise GraphError(
                f"fabric.topology.leaves is {topo.leaves} but {len(hosts)} HCA-bearing hosts at "
                f"nodes_per_leaf={topo.nodes_per_leaf} need {needed} leaves; raise leaves to {needed}"
            )
        for index, (host, hcas) in enumerate(hosts):
            out.extend((index // topo.nodes_per_leaf, host, hca) for hca in hcas)
    out.sort(key=lambda item: item[0])  # stable: keeps host order within a leaf
    return out


def graph_from_spec(spec: ClusterSpec) -> FabricGraph:
    """Return the declared fabric of ``spec`` (see the module docstring for the layout), or
    the cables it lists (``fabric.cabling``, fabric.topology.cabling) when it lists them or is
    a running cluster's without a fat tree (target ``existing``: no cable declared, none
    expected)."""
    if spec.fabric.cabling or (line_of(spec.target).adopts and spec.fabric.topology is None):
        return graph_from_cabling(spec)
    topo = _topology(spec)
    nports = topo.ports_per_switch
    leaves = [
        Switch(
            guid=guid_str(SWITCH_GUID_BASE + i),
            name=f"leaf{i + 1:02d}",
            description=f"leaf{i + 1:02d}",
            ports=nports,
        )
        for i in range(topo.leaves)
    ]
    spines = [
        Switch(
            guid=guid_str(SWITCH_GUID_BASE + topo.leaves + i),
            name=f"spine{i + 1:02d}",
            description=f"spine{i + 1:02d}",
            ports=nports,
        )
        for i in range(topo.spines)
    ]
    cas: dict[str, Ca] = {}
    links: list[Link] = []
    next_port = [1] * topo.leaves
    first_uplink = nports - topo.uplinks_per_leaf + 1
    leaf_guids = [leaf.guid for leaf in leaves]
    shapes: dict[int, tuple[str, int, str, str, float]] = {}  # by HCA: a node group's are shared
    new = tuple.__new__  # Ca and Link built without their Python-level __new__: 390,000 here
    for n, (leaf_index, host, hca) in enumerate(_placements(spec, topo)):
        shape = shapes.get(id(hca))
        if shape is None:
            speed = speed_for(hca.width, hca.rate_gbps)
            shape = shapes[id(hca)] = (
                hca.device,
                hca.ports,
                hca.width,
                speed,
                link_rate(hca.width, speed),
            )
        device, ports, width, speed, rate = shape
        guid = f"0x{CA_GUID_BASE + 4 * n:016x}"  # guid_str, inline
        cas[guid] = new(Ca, (guid, host, device, f"{host} {device}", ports, "hca"))
        for ca_port in range(1, ports + 1):
            leaf_port = next_port[leaf_index]
            if leaf_port >= first_uplink:
                raise GraphError(
                    f"leaf{leaf_index + 1:02d} is out of host ports at {host} {device}: "
                    f"ports_per_switch={nports} minus uplinks_per_leaf={topo.uplinks_per_leaf} leaves "
                    f"{first_uplink - 1}; lower nodes_per_leaf or raise ports_per_switch"
                )
            next_port[leaf_index] = leaf_port + 1
            links.append(
                new(Link, (leaf_guids[leaf_index], leaf_port, guid, ca_port, width, speed, rate))
            )
    supers = [
        Switch(
            guid=guid_str(SWITCH_GUID_BASE + topo.leaves + topo.spines + i),
            name=f"superspine{i + 1:02d}",
            description=f"superspine{i + 1:02d}",
            ports=nports,
        )
        for i in range(topo.super_spines)
    ]
    if spines:
        links += _uplinks(topo, leaves, spines, first_uplink, supers)
    return FabricGraph(
        switches={s.guid: s for s in leaves + spines + supers},
        cas=cas,
        links=links,
    )


def _uplinks(
    topo: FatTree,
    leaves: list[Switch],
    spines: list[Switch],
    first_uplink: int,
    supers: list[Switch],
) -> list[Link]:
    """Leaf-to-spine links, pod by pod, then spine-to-super-spine links (module docstring)."""
    nports = topo.ports_per_switch
    speed = speed_for(topo.link_width, topo.link_rate_gbps)
    up = (topo.link_width, speed, link_rate(topo.link_width, speed))
    per_pod, spines_per_pod = len(leaves) // topo.pods, len(spines) // topo.pods
    spine_top = nports - (topo.uplinks_per_spine if supers else 0)
    spine_port = [1] * len(spines)
    links: list[Link] = []
    new = tuple.__new__  # no Python-level Link.__new__: 131,072 uplinks at 16,384 hosts
    for n, leaf in enumerate(leaves):
        pod, index = divmod(n, per_pod)
        for i in range(topo.uplinks_per_leaf):
            s = pod * spines_per_pod + (index * topo.uplinks_per_leaf + i) % spines_per_pod
            if spine_port[s] > spine_top:
                raise GraphError(
                    f"{spines[s].name} is out of ports: {per_pod} leaves x uplinks_per_leaf="
                    f"{topo.uplinks_per_leaf} over {spines_per_pod} spines exceeds "
                    f"ports_per_switch={nports} less uplinks_per_spine; "
                    "add spines or lower uplinks_per_leaf"
                )
            links.append(
                new(Link, (leaf.guid, first_uplink + i, spines[s].guid, spine_port[s], *up))
            )
            spine_port[s] += 1
    super_port = [1] * len(supers)
    for n, spine in enumerate(spines if supers else []):
        for j in range(topo.uplinks_per_spine):
            s = (n * topo.uplinks_per_spine + j) % len(supers)
            if super_port[s] > nports:
                raise GraphError(
                    f"{supers[s].name} is out of ports: {len(spines)} spines x uplinks_per_spine="
                    f"{topo.uplinks_per_spine} over {len(supers)} super-spines exceeds "
                    f"ports_per_switch={nports}; add super_spines or lower uplinks_per_spine"
                )
            links.append(Link(spine.guid, spine_top + 1 + j, supers[s].guid, super_port[s], *up))
            super_port[s] += 1
    return links
