"""The cluster spec's cross-field rules: what no single field can check on its own.

Each rule reads a ClusterSpec through a :class:`~fabric.spec.checker.Checker` and records
problems; :func:`cross_field_problems` runs them all (these general rules with the network
rules of fabric.spec.networks, then the target rules of fabric.spec.targets: each target's
``fabric/targets/<name>/rules.py``, then the shared ones), so a user
sees every mistake in one pass. Paths
are written as users read them: ``fabric.infiniband.subnet_managers[1].priority``.

A spec whose fields failed validation can still be checked: fabric.spec.load passes the
paths of the failed fields as ``unknown`` and findings in or reading them are dropped.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Collection
from typing import TYPE_CHECKING, Any

from fabric.hostlist import HostlistError, expand
from fabric.spec.checker import HOST_NAMES, Checker, Rule, in_range, path_parts
from fabric.spec.consistency import CONSISTENCY_RULES
from fabric.spec.constants import (
    DSCP_RANGE,
    ETH_LANE_RATES,
    ETH_MTU_RANGE,
    FABRIC_LINK_LAYER,
    HOSTNAME_PATTERN,
    IB_LANE_RATES,
    IB_MTUS,
    NETDEV_PATTERN,
    PFC_PRIORITY_RANGE,
    RDMA_DEVICE_PATTERN,
    SLURM_TIME_PATTERN,
    SM_MEMBER_KEYWORDS,
    SM_PRIORITY_RANGE,
    WIDTH_LANES,
)
from fabric.spec.kubernetes import KUBERNETES_RULES
from fabric.spec.networks import NETWORK_RULES
from fabric.spec.problems import Problem
from fabric.spec.sm import expected_master
from fabric.spec.storage_rules import STORAGE_RULES
from fabric.spec.targets import target_rules
from fabric.targets import TARGETS, hook, hooks, line_of

if TYPE_CHECKING:  # the models run these rules in ClusterSpec's validator
    from fabric.spec.models import (
        ClusterSpec,
        FatTree,
        LinkLayer,
        NodeGroup,
        SubnetManager,
        Target,
    )

__all__ = [
    "GENERAL_RULES",
    "RULES",
    "Checker",
    "cross_field_problems",
    "path_parts",
    "provision_problems",
]

_TREE_FIELDS = (
    "leaves",
    "spines",
    "nodes_per_leaf",
    "uplinks_per_leaf",
    "ports_per_switch",
    "rail_optimized",
    "pods",
    "super_spines",
    "uplinks_per_spine",
)


# --- nodes ---------------------------------------------------------------------------------


def check_host_names(c: Checker) -> None:
    """Host lists expand, host names are valid and unique; fills ``c.hosts``."""
    for index, group in enumerate(c.spec.nodes):
        path = f"nodes[{index}].names"
        if not c.known(path):
            c.all_hosts_known = False
            continue
        try:
            names = expand(group.names)
        except HostlistError as error:
            c.add(path, str(error))
            c.all_hosts_known = False
            continue
        if not names:
            c.add(path, f"host list {group.names!r} names no hosts; write e.g. gpu[01-08]")
        for name in names:
            if not HOSTNAME_PATTERN.match(name):
                c.add(
                    path,
                    f"host name {name!r} is not valid; use letters, digits and inner hyphens,"
                    " at most 63 characters",
                )
            if name in c.hosts:
                first = c.hosts[name]
                where = "earlier in this group" if first == index else f"in nodes[{first}]"
                c.add(
                    path,
                    f"host {name!r} is declared twice (also {where}); host names must be unique",
                )
            else:
                c.hosts[name] = index


def check_hca_devices(c: Checker) -> None:
    """No node lists one HCA device twice."""
    for index, group in enumerate(c.spec.nodes):
        devices: dict[str, int] = {}
        for hca_index, hca in enumerate(group.hcas):
            path = f"nodes[{index}].hcas[{hca_index}].device"
            if hca.device in devices:
                c.add(
                    path,
                    f"device {hca.device!r} is listed twice (also hcas[{devices[hca.device]}])",
                    reads=[f"nodes[{index}].hcas[{devices[hca.device]}].device"],
                )
            devices.setdefault(hca.device, hca_index)
            if not RDMA_DEVICE_PATTERN.match(hca.device):
                c.add(
                    path,
                    f"{hca.device!r} is not an RDMA device name; write it as `rdma link show`"
                    " or ibv_devinfo lists it, e.g. mlx5_0",
                )
        netdevs: dict[str, int] = {}
        for hca_index, hca in enumerate(group.hcas):
            if hca.netdev is None:
                continue
            if not NETDEV_PATTERN.match(hca.netdev):
                c.add(
                    f"nodes[{index}].hcas[{hca_index}].netdev",
                    f"{hca.netdev!r} is not a network interface name (at most 15 letters, digits,"
                    " '_', '.', '-'); write it as `ip link` lists it, e.g. ens1f0np0",
                )
            if hca.netdev in netdevs:
                first = netdevs[hca.netdev]
                c.add(
                    f"nodes[{index}].hcas[{hca_index}].netdev",
                    f"netdev {hca.netdev!r} is also hcas[{first}]'s ({group.hcas[first].device});"
                    " each HCA port has its own netdev: see `rdma link show` on the node",
                    reads=[f"nodes[{index}].hcas[{first}].netdev"],
                )
            netdevs.setdefault(hca.netdev, hca_index)


def link_rates(layer: LinkLayer, width: str) -> dict[int, str]:
    """The whole-Gb/s rates a link of ``width`` runs at, each with its generation name."""
    table: dict[str, float] = IB_LANE_RATES if layer == "InfiniBand" else ETH_LANE_RATES
    lanes = WIDTH_LANES[width]
    rates: dict[int, str] = {}
    for generation, lane in table.items():
        rate = lane * lanes
        if rate == int(rate) and int(rate) not in rates:
            rates[int(rate)] = generation
    return dict(sorted(rates.items()))


def _rate_problem(layer: LinkLayer, rate: int, width: str) -> str | None:
    """Why ``rate`` at ``width`` is not a rate of any ``layer`` generation, or None."""
    rates = link_rates(layer, width)
    if rate in rates:
        return None
    widths = [w for w in WIDTH_LANES if rate in link_rates(layer, w)]
    listed = ", ".join(widths[:-1]) + " or " + widths[-1] if len(widths) > 1 else "".join(widths)
    fits = f"; {rate} Gb/s is a {listed} rate" if widths else ""
    allowed = ", ".join(f"{r} ({g})" for r, g in rates.items())
    return f"no {layer} generation runs {width} at {rate} Gb/s{fits}; {width} runs at {allowed}"


def check_link_rates(c: Checker) -> None:
    """Every HCA rate and the switch link rate exist for their width in some InfiniBand or
    Ethernet generation (EFA devices report no rate: not checked)."""
    if c.spec.fabric.kind == "efa" or not c.known("fabric.kind"):
        return
    for index, group in enumerate(c.spec.nodes):
        for hca_index, hca in enumerate(group.hcas):
            path = f"nodes[{index}].hcas[{hca_index}]"
            problem = _rate_problem(hca.link_layer, hca.rate_gbps, hca.width)
            if problem is not None:
                c.add(f"{path}.rate_gbps", problem, reads=[f"{path}.width", f"{path}.link_layer"])
    tree = c.spec.fabric.topology
    if tree is not None:
        layer: LinkLayer = "InfiniBand" if c.spec.fabric.kind == "infiniband" else "Ethernet"
        problem = _rate_problem(layer, tree.link_rate_gbps, tree.link_width)
        if problem is not None:
            path = "fabric.topology"
            c.add(f"{path}.link_rate_gbps", problem, reads=[f"{path}.link_width"])


def check_roce_netdevs(c: Checker) -> None:
    """Every HCA of a RoCE fabric names its netdev: PFC, trust and ECN are set per netdev
    (not in the lab: its nodes have no ConnectX to set them on)."""
    if c.spec.fabric.kind != "roce" or line_of(c.spec.target).one_machine:
        return
    if not c.known("fabric.kind"):
        return
    for index, group in enumerate(c.spec.nodes):
        for hca_index, hca in enumerate(group.hcas):
            if hca.netdev is None:
                c.add(
                    f"nodes[{index}].hcas[{hca_index}].netdev",
                    f"RoCE HCA {hca.device!r} needs its netdev (PFC, trust and ECN are set per"
                    " netdev); set netdev as `rdma link show` lists it, e.g. ens1f0np0",
                )


def check_gpus(c: Checker) -> None:
    """A GPU type names the GPUs a node has: none without GPUs."""
    for index, group in enumerate(c.spec.nodes):
        if group.gpu_type is not None and group.gpus == 0:
            c.add(
                f"nodes[{index}].gpus",
                f"0 GPUs, but gpu_type is {group.gpu_type!r}; set gpus to the GPUs per node,"
                " or remove gpu_type",
                reads=[f"nodes[{index}].gpu_type"],
            )


# --- target and fabric kind ----------------------------------------------------------------


def cloud_fabrics() -> dict[str, str]:
    """Target -> the one fabric kind it supports (``FABRIC_KIND`` of its ``section.py``): a
    cloud's own fabric, which only that target has."""
    return dict(hooks("section", "FABRIC_KIND"))


def check_target_kind(c: Checker) -> None:
    """The fabric kind suits the target: cloud targets and cloud kinds go together."""
    if not c.known("target", "fabric.kind"):
        return
    kind, target = c.spec.fabric.kind, c.spec.target
    cloud_fabric = cloud_fabrics()
    if target in cloud_fabric and kind != cloud_fabric[target]:
        c.add(
            "fabric.kind",
            f"target {target} supports only kind {cloud_fabric[target]}, not {kind!r}",
        )
    for cloud, cloud_kind in cloud_fabric.items():
        if kind == cloud_kind and target != cloud:
            c.add("fabric.kind", f"kind {kind} needs target {cloud}, not {target!r}")


def check_target_blocks(c: Checker) -> None:
    """The target's settings block is present, and no other target's block is."""
    if not c.known("target"):
        return
    spec, target = c.spec, c.spec.target
    for name, _ in hooks("section", "MODEL"):
        block = getattr(spec, name)
        if target == name and block is None:
            c.add(name, f"target {target} needs the {name} block; see railyard schema")
        if block is not None and target != name:
            c.add(name, f"the {name} block applies only to target {name}; target is {target!r}")
    # a baremetal stack over a lab datacenter marks its nodes as simulated with a lab block
    line = line_of(target)
    if spec.lab is not None and not (line.one_machine or line.lab_block):
        labs = " or ".join(t for t in TARGETS if line_of(t).one_machine)
        c.add("lab", f"the lab block applies only to target {labs}; target is {target!r}")


# --- fabric --------------------------------------------------------------------------------


def check_mtu(c: Checker) -> None:
    """The MTU is an InfiniBand MTU, or in the Ethernet range and under the cloud's cap."""
    fabric = c.spec.fabric
    if not c.known("fabric.kind"):
        return
    if fabric.kind == "infiniband":
        if fabric.mtu not in IB_MTUS:
            allowed = ", ".join(map(str, IB_MTUS))
            c.add("fabric.mtu", f"{fabric.mtu} is not an InfiniBand MTU; use one of {allowed}")
        return
    low, high = ETH_MTU_RANGE
    cap = hook(c.spec.target, "section", "MAX_MTU")
    if not in_range(fabric.mtu, ETH_MTU_RANGE):
        c.add("fabric.mtu", f"{fabric.mtu} is outside the Ethernet MTU range {low}-{high}")
    elif cap is not None and fabric.mtu > cap:
        c.add(
            "fabric.mtu",
            f"{fabric.mtu} is above the {c.spec.target} maximum MTU {cap}",
            reads=["target"],
        )


def check_fabric_blocks(c: Checker) -> None:
    """Only the settings block the fabric kind uses is present."""
    fabric = c.spec.fabric
    if not c.known("fabric.kind"):
        return
    if fabric.infiniband is not None and fabric.kind != "infiniband":
        c.add("fabric.infiniband", f"InfiniBand settings do not apply to kind {fabric.kind!r}")
    if fabric.roce is not None and fabric.kind != "roce":
        c.add("fabric.roce", f"RoCE settings do not apply to kind {fabric.kind!r}")
    if fabric.topology is not None and fabric.kind in cloud_fabrics().values():
        c.add("fabric.topology", f"the {fabric.kind} fabric is the cloud's; remove topology")


def check_hca_link_layers(c: Checker) -> None:
    """Every HCA's link layer is the one the fabric kind runs on."""
    wanted = FABRIC_LINK_LAYER.get(c.spec.fabric.kind)
    if wanted is None or not c.known("fabric.kind"):
        return
    for index, group in enumerate(c.spec.nodes):
        for hca_index, hca in enumerate(group.hcas):
            if hca.link_layer != wanted:
                c.add(
                    f"nodes[{index}].hcas[{hca_index}].link_layer",
                    f"{hca.link_layer} HCA {hca.device!r} on a {c.spec.fabric.kind} fabric;"
                    f" set link_layer: {wanted}",
                )


# --- topology ------------------------------------------------------------------------------


def check_topology(c: Checker) -> None:
    """Leaves have enough host ports for the fabric nodes, and leaf and spine ports add up.

    Layout as in fabric/topology/from_spec.py: fabric nodes fill leaves ``nodes_per_leaf``
    at a time; rail-optimized, each ``nodes_per_leaf`` nodes form a scalable unit taking
    one leaf per rail, with HCA rail k on leaf k of the unit.
    """
    tree = c.spec.fabric.topology
    if tree is None or not c.known(*(f"fabric.topology.{name}" for name in _TREE_FIELDS)):
        return
    fabric_nodes = [(host, g) for host, g in c.host_groups() if g.hcas]
    rails = 1 + max((h.rail for g in _groups_of(fabric_nodes) for h in g.hcas), default=0)
    node_reads = [HOST_NAMES, "nodes[*].hcas[*].rail"]
    if tree.rail_optimized and not check_rails(c, tree):
        check_spines(c, tree)  # the leaf counts read the rails: wrong ones would mislead
        return
    if tree.rail_optimized:
        units = tree.leaves // rails
        ports = units * tree.nodes_per_leaf
        if len(fabric_nodes) > ports and c.all_hosts_known:
            needed = -(-len(fabric_nodes) // tree.nodes_per_leaf)
            c.add(
                "fabric.topology.leaves",
                f"{tree.leaves} leaves hold {units} scalable unit(s) of {rails} rails ="
                f" {ports} nodes, but {len(fabric_nodes)} HCA-bearing nodes need {needed}"
                f" units = {needed * rails} leaves; raise leaves or nodes_per_leaf",
                reads=node_reads,
            )
    else:
        ports = tree.leaves * tree.nodes_per_leaf
        if len(fabric_nodes) > ports and c.all_hosts_known:
            c.add(
                "fabric.topology.nodes_per_leaf",
                f"{len(fabric_nodes)} HCA-bearing nodes but {tree.leaves} leaves x"
                f" {tree.nodes_per_leaf} nodes_per_leaf = {ports} host ports;"
                " raise leaves or nodes_per_leaf",
                reads=node_reads,
            )
    check_leaf_ports(c, tree, fabric_nodes)
    check_spines(c, tree)


def check_rails(c: Checker, tree: FatTree) -> bool:
    """In a rail-optimized tree each HCA of a node has its own rail, numbered 0..rails-1
    (rails: the most HCAs a node has), each rail a leaf of the scalable unit. False when
    a rail is wrong (reported at that HCA's ``rail``)."""
    rails = max((len(group.hcas) for group in c.spec.nodes), default=0)
    before = len(c.problems)
    for index, group in enumerate(c.spec.nodes):
        taken: dict[int, int] = {}
        free = [r for r in range(rails) if r not in {h.rail for h in group.hcas}]
        for hca_index, hca in enumerate(group.hcas):
            path = f"nodes[{index}].hcas[{hca_index}].rail"
            use = f"; use rail {free[0]}" if free else ""
            if hca.rail in taken:
                first = taken[hca.rail]
                c.add(
                    path,
                    f"rail {hca.rail} is also hcas[{first}]'s ({group.hcas[first].device}); in a"
                    f" rail-optimized tree each HCA of a node has its own rail{use}",
                    reads=[f"nodes[{index}].hcas[{first}].rail"],
                )
            elif hca.rail >= rails:
                c.add(
                    path,
                    f"rail {hca.rail} is outside 0-{rails - 1}: nodes have at most {rails} HCAs,"
                    f" one rail each{use}",
                    reads=["nodes[*].hcas"],
                )
            taken.setdefault(hca.rail, hca_index)
    return len(c.problems) == before


def check_leaf_ports(c: Checker, tree: FatTree, fabric_nodes: list[tuple[str, NodeGroup]]) -> None:
    """Host ports plus uplinks of one leaf fit in ``ports_per_switch``."""
    per_node = 1
    for group in _groups_of(fabric_nodes):
        by_leaf: dict[int, int] = {}
        for hca in group.hcas:
            leaf = hca.rail if tree.rail_optimized else 0
            by_leaf[leaf] = by_leaf.get(leaf, 0) + hca.ports
        per_node = max(per_node, *by_leaf.values())
    host_ports = tree.nodes_per_leaf * per_node
    used = host_ports + tree.uplinks_per_leaf
    if used > tree.ports_per_switch:
        each = f" x {per_node} ports each" if per_node > 1 else ""
        c.add(
            "fabric.topology.ports_per_switch",
            f"nodes_per_leaf {tree.nodes_per_leaf}{each} + uplinks_per_leaf"
            f" {tree.uplinks_per_leaf} = {used} leaf ports, more than ports_per_switch"
            f" {tree.ports_per_switch}",
            reads=["nodes[*].hcas[*].rail", "nodes[*].hcas[*].ports"],
        )


def _groups_of(hosts: list[tuple[str, NodeGroup]]) -> list[NodeGroup]:
    """The node groups of ``hosts``, each once: a group's thousands of hosts share its HCAs."""
    return list({id(group): group for _, group in hosts}.values())


def check_spines(c: Checker, tree: FatTree) -> None:
    """Leaves reach the spines, and the spines have a port for every uplink."""
    path = "fabric.topology"
    if tree.spines == 0 and (tree.leaves > 1 or tree.uplinks_per_leaf > 0):
        c.add(f"{path}.spines", f"{tree.leaves} leaves with uplinks need at least one spine")
    if tree.spines > 0 and tree.uplinks_per_leaf == 0:
        c.add(
            f"{path}.uplinks_per_leaf",
            f"0 uplinks leave {tree.spines} spines unreachable; set uplinks_per_leaf >= 1",
        )
    down_ports = tree.ports_per_switch - tree.uplinks_per_spine
    spine_ports = tree.spines * down_ports
    if tree.spines > 0 and tree.leaves * tree.uplinks_per_leaf > spine_ports:
        each = f"{tree.ports_per_switch} ports"
        if tree.uplinks_per_spine:
            each = f"({each} - {tree.uplinks_per_spine} uplinks_per_spine)"
        c.add(
            f"{path}.spines",
            f"{tree.leaves} leaves x {tree.uplinks_per_leaf} uplinks = "
            f"{tree.leaves * tree.uplinks_per_leaf} spine ports needed, but {tree.spines} spines"
            f" x {each} = {spine_ports}",
        )
    check_three_levels(c, tree)


def check_three_levels(c: Checker, tree: FatTree) -> None:
    """Pods split the leaves and spines evenly (a scalable unit's rail leaves in one pod), the
    super-spines join them, and their ports add up."""
    path = "fabric.topology"
    for field, count in (("leaves", tree.leaves), ("spines", tree.spines)):
        if tree.pods > 1 and count % tree.pods:
            c.add(
                f"{path}.pods",
                f"{tree.pods} pods do not split {count} {field} evenly; use a divisor of {count}",
                reads=[f"{path}.{field}"],
            )
    if tree.pods > 1 and tree.super_spines == 0:
        c.add(
            f"{path}.super_spines",
            f"{tree.pods} pods need super-spines to join them (one subnet); set super_spines",
        )
    if tree.super_spines and tree.spines == 0:
        c.add(f"{path}.spines", "super-spines sit above spines; set spines >= 1")
    if tree.super_spines and tree.uplinks_per_spine == 0:
        c.add(
            f"{path}.uplinks_per_spine",
            f"0 uplinks leave {tree.super_spines} super-spines unreachable; set it >= 1",
        )
    if tree.uplinks_per_spine and tree.super_spines == 0:
        c.add(f"{path}.super_spines", "uplinks_per_spine needs super_spines >= 1")
    needed = tree.spines * tree.uplinks_per_spine
    if tree.super_spines and needed > tree.super_spines * tree.ports_per_switch:
        c.add(
            f"{path}.super_spines",
            f"{tree.spines} spines x {tree.uplinks_per_spine} uplinks = {needed} super-spine "
            f"ports needed, but {tree.super_spines} super-spines x {tree.ports_per_switch} "
            f"ports = {tree.super_spines * tree.ports_per_switch}",
        )
    rails = max((len(group.hcas) for group in c.spec.nodes), default=1)
    per_pod = tree.leaves // tree.pods
    if tree.rail_optimized and tree.pods > 1 and not tree.leaves % tree.pods and per_pod % rails:
        c.add(
            f"{path}.pods",
            f"{per_pod} leaves per pod do not hold whole scalable units of {rails} rail leaves; "
            f"make leaves / pods a multiple of {rails}",
            reads=[f"{path}.leaves", "nodes[*].hcas"],
        )


# --- InfiniBand ----------------------------------------------------------------------------


#: The fields each SM mode takes beyond mode, priority and role.
_SM_FIELDS = {
    "managed": ("host",),
    "external": ("node_description", "guid"),
    "switch": ("switch", "node_description", "guid", "configure"),
}
_SM_EXAMPLE = (
    "e.g. - {host: sm1, priority: 14} (railyard runs OpenSM), "
    '- {mode: external, node_description: "ufm01 mlx5_0", priority: 15} (UFM) or '
    "- {mode: switch, switch: leaf01, priority: 15}"
)


def check_subnet_managers(c: Checker) -> None:
    """An InfiniBand fabric declares its subnet managers in any mode (managed OpenSM on a
    declared host with an HCA, an external SM known by node description or GUID, a switch's
    SM on a declared switch), with valid priorities and exactly one expected master."""
    fabric = c.spec.fabric
    if fabric.kind != "infiniband" or not c.known("fabric.kind"):
        return
    ib = fabric.infiniband
    if ib is None or not ib.subnet_managers:
        path = "fabric.infiniband" if ib is None else "fabric.infiniband.subnet_managers"
        c.add(path, f"an infiniband fabric needs at least one subnet manager, {_SM_EXAMPLE}")
        return
    seen: dict[str, int] = {}
    for index, sm in enumerate(ib.subnet_managers):
        path = f"fabric.infiniband.subnet_managers[{index}]"
        if not in_range(sm.priority, SM_PRIORITY_RANGE):
            low, high = SM_PRIORITY_RANGE
            c.add(
                f"{path}.priority",
                f"{sm.priority} is outside the sm_priority range {low}-{high}",
            )
        _check_sm_fields(c, path, sm)
        if sm.mode == "managed":
            _check_managed_sm(c, path, index, sm)
        elif sm.mode == "switch":
            _check_switch_sm(c, path, sm)
        elif sm.node_description is None and sm.guid is None:
            c.add(
                f"{path}.node_description",
                "an external SM is known by what its port answers: set node_description "
                "(smpquery nodedesc <its lid>) and/or guid (sminfo's sm guid)",
            )
        key = sm.id
        if key in seen and sm.mode != "managed":
            c.add(
                path,
                f"{key} is subnet_managers[{seen[key]}] already; list each subnet manager once",
            )
        seen.setdefault(key, index)
    _check_expected_master(c, ib.subnet_managers)


def _check_sm_fields(c: Checker, path: str, sm: SubnetManager) -> None:
    """Fields another mode takes are refused, naming the mode that takes them."""
    for name in ("host", "switch", "node_description", "guid", "configure"):
        value = getattr(sm, name)
        if value in (None, False) or name in _SM_FIELDS[sm.mode]:
            continue
        takes = " or ".join(m for m, fields in _SM_FIELDS.items() if name in fields)
        c.add(
            f"{path}.{name}",
            f"mode {sm.mode} takes no {name} (only mode {takes} does); remove it or set the mode",
        )


def _check_managed_sm(c: Checker, path: str, index: int, sm: SubnetManager) -> None:
    if sm.host is None:
        c.add(
            f"{path}.host",
            "a managed SM runs on a declared host: set host (railyard runs OpenSM there), or "
            "set mode external or switch for an SM railyard does not run",
        )
        return
    c.check_host(f"{path}.host", sm.host)
    sms = c.spec.fabric.infiniband.subnet_managers if c.spec.fabric.infiniband else []
    if any(o.mode == "managed" and o.host == sm.host for o in sms[:index]):
        c.add(f"{path}.host", f"{sm.host!r} runs a subnet manager already; list each host once")
    group = c.hosts.get(sm.host)
    if group is not None and not c.spec.nodes[group].hcas:
        c.add(
            f"{path}.host",
            f"{sm.host!r} has no HCA, so OpenSM there cannot reach the fabric; run it on a"
            f" host with an HCA, or give nodes[{group}] its hcas",
            reads=[f"nodes[{group}].hcas"],
        )


def _fabric_switch_names(c: Checker) -> set[str] | None:
    """The switch names of the declared fabric (fabric.switches, the cabling, the fat
    tree's leafNN/spineNN/superspineNN), or None when the fat tree is not known."""
    fabric = c.spec.fabric
    names = {s.name for s in fabric.switches}
    for cable in fabric.cabling:
        names |= {end.switch for end in (cable.a, cable.b) if end.switch}
    tree = fabric.topology
    if tree is not None:
        if not c.known("fabric.topology"):
            return None
        names |= {f"leaf{i + 1:02d}" for i in range(tree.leaves)}
        names |= {f"spine{i + 1:02d}" for i in range(tree.spines)}
        names |= {f"superspine{i + 1:02d}" for i in range(tree.super_spines)}
    return names


def _check_switch_sm(c: Checker, path: str, sm: SubnetManager) -> None:
    if sm.switch is None:
        c.add(
            f"{path}.switch",
            "a switch SM names its switch: set switch to a switch of the fabric, e.g. leaf01",
        )
        return
    names = _fabric_switch_names(c)
    if names is not None and sm.switch not in names:
        shown = ", ".join(sorted(names)[:6]) + (" ..." if len(names) > 6 else "")
        c.add(
            f"{path}.switch",
            f"{sm.switch!r} is not a switch of the fabric; name one of: {shown or 'none declared'}",
        )
    if sm.configure and not c.spec.simulated:
        c.add(
            f"{path}.configure",
            "railyard enables a switch's SM only in the lab (ibsim); enable it on the switch "
            "itself (its management interface) and set configure: false",
        )


def _check_expected_master(c: Checker, sms: list[SubnetManager]) -> None:
    """Exactly one SM is expected to be master, and OpenSM's election would pick it: no other
    SM has a higher priority (with equal priorities the lowest port GUID wins, which the spec
    cannot know: the master needs the highest priority, or role: master to say so)."""
    base = "fabric.infiniband.subnet_managers"
    masters = [i for i, sm in enumerate(sms) if sm.role == "master"]
    if len(masters) > 1:
        c.add(
            f"{base}[{masters[1]}].role",
            f"subnet_managers[{masters[0]}] is the master already; exactly one SM is master: "
            "set role: standby or remove role",
        )
        return
    index = expected_master(sms)
    if index is None:
        open_ = [i for i, sm in enumerate(sms) if sm.role is None]
        if not open_:
            c.add(
                f"{base}[0].role",
                "every SM is role: standby, so none is expected master; set role: master on one",
            )
            return
        top = max(sms[i].priority for i in open_)
        tied = [i for i in open_ if sms[i].priority == top]
        c.add(
            f"{base}[{tied[1]}].priority",
            f"subnet_managers[{tied[0]}] and [{tied[1]}] share the highest priority {top}, so "
            "OpenSM picks the master by port GUID; give the master a higher priority, or set "
            "role: master on it",
        )
        return
    master = sms[index]
    for i, sm in enumerate(sms):
        if i != index and sm.priority > master.priority:
            c.add(
                f"{base}[{i}].priority",
                f"priority {sm.priority} is above the expected master's "
                f"(subnet_managers[{index}], {master.priority}), so this SM would win the "
                "election; lower it, or make this one the master",
            )


def _railyard_runs_the_sm(ib: Any) -> bool:
    """True when railyard runs the subnet manager itself (upstream OpenSM, ``managed``)."""
    modes = {getattr(sm, "mode", "managed") for sm in ib.subnet_managers}
    return getattr(ib, "mode", "managed") == "managed" and modes <= {"managed"}


def check_infiniband_sm_features(c: Checker) -> None:
    """Adaptive routing only with an SM that has it; one CA congestion setting per SL."""
    fabric = c.spec.fabric
    ib = fabric.infiniband
    if fabric.kind != "infiniband" or ib is None or not c.known("fabric.infiniband"):
        return
    if ib.adaptive_routing and _railyard_runs_the_sm(ib):
        c.add(
            "fabric.infiniband.adaptive_routing",
            "upstream OpenSM, which railyard runs (managed mode), has no adaptive routing; "
            "declare it only with an SM that has it (NVIDIA's SM in UFM or a managed switch), "
            "or set it false",
            reads=["fabric.infiniband.subnet_managers"],
        )
    seen: set[int] = set()
    for index, entry in enumerate(ib.congestion_control.ca):
        if entry.sl in seen:
            c.add(
                f"fabric.infiniband.congestion_control.ca[{index}].sl",
                f"SL {entry.sl} is set twice; give each SL one entry",
            )
        seen.add(entry.sl)


def _free_pkey(used: set[int]) -> str:
    """The lowest partition key not in ``used`` (0x7fff is the default partition's)."""
    return f"0x{next(key for key in range(1, 0x7FFF) if key not in used):04x}"


def _first_host(subnet: ipaddress.IPv4Network) -> str:
    return str(next(subnet.hosts(), subnet.network_address))


def check_partitions(c: Checker) -> None:
    """InfiniBand partitions have distinct names, members OpenSM can resolve (a keyword: port
    GUIDs are known only after discovery) and distinct, valid partition keys."""
    ib = c.spec.fabric.infiniband
    if ib is None:
        return
    pkeys: dict[int, int] = {}
    names: dict[str, int] = {}
    for index, part in enumerate(ib.partitions):
        path = f"fabric.infiniband.partitions[{index}]"
        if part.name in names:
            c.add(
                f"{path}.name",
                f"{part.name!r} is already partitions[{names[part.name]}]; give each partition"
                " its own name, or merge the two",
            )
        names.setdefault(part.name, index)
        if part.members not in SM_MEMBER_KEYWORDS:
            c.add(
                f"{path}.members",
                f"{part.members!r}: OpenSM partitions name port GUIDs, known only after"
                f" discovery, not hosts; use one of {', '.join(SM_MEMBER_KEYWORDS)}",
            )
        value = int(part.pkey, 16) if re.fullmatch(r"0x[0-9a-fA-F]{1,4}", part.pkey) else None
        if value is None or not 1 <= value <= 0x7FFF:
            c.add(f"{path}.pkey", f"{part.pkey!r} is not a partition key; use hex 0x0001-0x7fff")
        elif value in pkeys:
            c.add(
                f"{path}.pkey",
                f"{part.pkey} is already used by partitions[{pkeys[value]}]; give each partition"
                f" its own key (unused: {_free_pkey(set(pkeys))})",
            )
        else:
            pkeys[value] = index


# --- RoCE ----------------------------------------------------------------------------------


def check_roce(c: Checker) -> None:
    """PFC priority and DSCP values are in range and consistent with the RoCE ToS."""
    roce = c.spec.fabric.roce
    if roce is None:
        return
    if not in_range(roce.pfc_priority, PFC_PRIORITY_RANGE):
        low, high = PFC_PRIORITY_RANGE
        c.add(
            "fabric.roce.pfc_priority",
            f"{roce.pfc_priority} is outside the PFC priority range {low}-{high}",
        )
    for name in ("rdma_dscp", "cnp_dscp"):
        value = getattr(roce, name)
        if not in_range(value, DSCP_RANGE):
            c.add(f"fabric.roce.{name}", f"{value} is outside the DSCP range 0-63")
    if roce.rdma_dscp == roce.cnp_dscp:
        c.add(
            "fabric.roce.cnp_dscp",
            f"{roce.cnp_dscp} equals rdma_dscp; CNPs need their own DSCP, e.g. 48",
            reads=["fabric.roce.rdma_dscp"],
        )
    if in_range(roce.rdma_dscp, DSCP_RANGE) and roce.roce_tos >> 2 != roce.rdma_dscp:
        c.add(
            "fabric.roce.roce_tos",
            f"{roce.roce_tos} carries DSCP {roce.roce_tos >> 2} but rdma_dscp is {roce.rdma_dscp};"
            f" use {roce.rdma_dscp << 2 | 2} (rdma_dscp << 2 | ECT(0))",
            reads=["fabric.roce.rdma_dscp"],
        )


def check_roce_classes(c: Checker) -> None:
    """Only RDMA is lossless: the lossless priorities are RDMA's PFC priority alone; CNPs have a
    priority of their own, outside the lossless classes."""
    roce = c.spec.fabric.roce
    if roce is None:
        return
    path = "fabric.roce.lossless_priorities"
    # Unset, they follow pfc_priority, whose range check_roce reports.
    lossless = roce.lossless if roce.lossless_priorities is not None else []
    if not in_range(roce.cnp_priority, PFC_PRIORITY_RANGE):
        c.add("fabric.roce.cnp_priority", f"{roce.cnp_priority} is outside the priority range 0-7")
    elif roce.cnp_priority == roce.pfc_priority:
        c.add(
            "fabric.roce.cnp_priority",
            f"{roce.cnp_priority} equals pfc_priority; CNPs need their own strict class, e.g. 6",
            reads=["fabric.roce.pfc_priority"],
        )
    for index, prio in enumerate(lossless):
        where = f"{path}[{index}]" if roce.lossless_priorities else path
        if not in_range(prio, PFC_PRIORITY_RANGE):
            c.add(where, f"{prio} is outside the priority range 0-7")
        elif prio == roce.cnp_priority and prio != roce.pfc_priority:
            c.add(where, f"{prio} is cnp_priority; CNPs are not lossless: remove it")
        elif prio != roce.pfc_priority:
            c.add(
                where,
                f"priority {prio} is lossless but has no PFC (PFC is on pfc_priority "
                f"{roce.pfc_priority} only, and only RDMA is lossless): use [{roce.pfc_priority}]",
                reads=["fabric.roce.pfc_priority"],
            )
    if roce.lossless_priorities is not None and roce.pfc_priority not in lossless:
        c.add(
            path,
            f"pfc_priority {roce.pfc_priority} is not lossless; add it: [{roce.pfc_priority}]",
            reads=["fabric.roce.pfc_priority"],
        )


def check_roce_congestion(c: Checker) -> None:
    """ECN marking per lossless queue has min below max, covers each lossless queue when ECN
    is on; the PFC watchdog is on, and it restores no sooner than it detects; the headroom
    holds at least two frames."""
    roce = c.spec.fabric.roce
    if roce is None:
        return
    lossless = roce.lossless
    seen: set[int] = set()
    for index, queue in enumerate(roce.ecn_marking):
        path = f"fabric.roce.ecn_queues[{index}]"
        if not in_range(queue.priority, PFC_PRIORITY_RANGE):
            if roce.ecn_queues is not None:
                c.add(f"{path}.priority", f"{queue.priority} is outside the priority range 0-7")
            continue
        if queue.min_bytes >= queue.max_bytes:
            c.add(
                f"{path}.min_bytes",
                f"{queue.min_bytes} is not below max_bytes {queue.max_bytes}; ECN marks from min "
                f"to max: lower min_bytes (default 150000) or raise max_bytes (default 1500000)",
                reads=[f"{path}.max_bytes"],
            )
        if queue.priority not in lossless:
            c.add(
                f"{path}.priority",
                f"{queue.priority} is not a lossless priority {lossless}; mark the lossless "
                "queue, e.g. pfc_priority",
                reads=["fabric.roce.lossless_priorities"],
            )
        elif queue.priority in seen:
            c.add(f"{path}.priority", f"{queue.priority} already has an ECN queue; keep one")
        seen.add(queue.priority)
    if roce.ecn:
        for prio in lossless:
            if prio not in seen and in_range(prio, PFC_PRIORITY_RANGE):
                c.add(
                    "fabric.roce.ecn_queues",
                    f"lossless priority {prio} has no ECN marking (ecn is on); add "
                    f"{{priority: {prio}}}",
                    reads=["fabric.roce.ecn", "fabric.roce.lossless_priorities"],
                )
    dog = roce.pfc_watchdog
    if not dog.enabled:
        c.add(
            "fabric.roce.pfc_watchdog.enabled",
            "PFC without a watchdog lets one stuck receiver pause the fabric (pause storm); "
            "set enabled: true",
        )
    elif dog.detection_ms > dog.restore_ms:
        c.add(
            "fabric.roce.pfc_watchdog.detection_ms",
            f"{dog.detection_ms} ms is longer than restore_ms {dog.restore_ms}; a queue would "
            f"rejoin PFC before a storm could be seen again: set restore_ms >= {dog.detection_ms}",
            reads=["fabric.roce.pfc_watchdog.restore_ms"],
        )
    headroom = roce.buffer.headroom_bytes
    if headroom is not None and c.known("fabric.mtu") and headroom < 2 * c.spec.fabric.mtu:
        c.add(
            "fabric.roce.buffer.headroom_bytes",
            f"{headroom} holds less than two {c.spec.fabric.mtu}-byte frames; set at least "
            f"{2 * c.spec.fabric.mtu} or leave it unset",
            reads=["fabric.mtu"],
        )


def check_switches_managed(c: Checker) -> None:
    """A managed switch has an OS railyard configures, on a RoCE fabric; its ports are unique
    and name hosts of the spec."""
    for index, switch in enumerate(c.spec.fabric.switches):
        path = f"fabric.switches[{index}]"
        if switch.manage and switch.os == "unmanaged":
            c.add(f"{path}.os", "manage: true needs the switch's os: sonic, cumulus or linux")
        if switch.manage and c.spec.fabric.kind != "roce":
            c.add(
                f"{path}.manage",
                f"switch_qos configures RoCE switches; kind is {c.spec.fabric.kind!r}: set "
                "manage: false",
                reads=["fabric.kind"],
            )
        names: set[str] = set()
        for pindex, port in enumerate(switch.ports):
            ppath = f"{path}.ports[{pindex}]"
            if port.name in names:
                c.add(f"{ppath}.name", f"{port.name!r} is listed twice on {switch.name!r}")
            names.add(port.name)
            if port.host is not None:
                c.check_host(f"{ppath}.host", port.host)


# --- Slurm ---------------------------------------------------------------------------------


def check_slurm(c: Checker) -> None:
    """Slurm names a declared controller; a block size for the block plugin, none for tree."""
    slurm = c.spec.slurm
    if slurm.controller is not None:
        c.check_host("slurm.controller", slurm.controller)
    plugin = ["slurm.topology_plugin"]
    if slurm.topology_plugin == "block" and slurm.block_size is None:
        c.add(
            "slurm.block_size",
            "topology_plugin block needs block_size (nodes per block), e.g. 16",
            reads=plugin,
        )
    if slurm.topology_plugin == "tree" and slurm.block_size is not None:
        c.add(
            "slurm.block_size",
            "block_size applies only to topology_plugin block, not 'tree' (yaml takes it too)",
            reads=plugin,
        )
    elif slurm.block_size is not None:
        check_block_size(c, slurm.block_size)


def check_block_size(c: Checker, size: int) -> None:
    """A block is a leaf's hosts (fabric.topology.slurm): Slurm needs every block to hold at
    least the block size, so it can be no more than the compute hosts, nor a leaf's hosts."""
    compute = sum(1 for _, group in c.host_groups() if group.role == "compute")
    tree = c.spec.fabric.topology
    if compute and size > compute:
        c.add(
            "slurm.block_size",
            f"{size} is more than the {compute} compute hosts; a block holds at least "
            f"block_size hosts: use {compute} or less",
            reads=[HOST_NAMES, "slurm.block_size"],
        )
    elif tree is not None and size > tree.nodes_per_leaf:
        c.add(
            "slurm.block_size",
            f"{size} is more than fabric.topology.nodes_per_leaf ({tree.nodes_per_leaf}); a "
            f"block is one leaf's hosts: use {tree.nodes_per_leaf} or less",
            reads=["fabric.topology.nodes_per_leaf", "slurm.block_size"],
        )


def check_slurm_partitions(c: Checker) -> None:
    """Slurm partitions name declared hosts, have distinct names and at most one default."""
    names: dict[str, int] = {}
    defaults: list[int] = []
    for index, part in enumerate(c.spec.slurm.partitions):
        path = f"slurm.partitions[{index}]"
        c.check_host_list(f"{path}.nodes", part.nodes)
        if not SLURM_TIME_PATTERN.match(part.max_time):
            c.add(
                f"{path}.max_time",
                f"{part.max_time!r} is not a Slurm time; write INFINITE, minutes (60),"
                " hours:minutes:seconds (12:00:00) or days-hours (2-00)",
            )
        if part.name in names:
            c.add(
                f"{path}.name",
                f"{part.name!r} is already partitions[{names[part.name]}]; rename one (Slurm"
                " refuses a partition twice), or merge their nodes into one",
            )
        names.setdefault(part.name, index)
        if part.default:
            defaults.append(index)
    for index in defaults[1:]:
        c.add(
            f"slurm.partitions[{index}].default",
            f"partitions[{defaults[0]}] is already the default",
        )


# --- networks ------------------------------------------------------------------------------


def check_management(c: Checker) -> None:
    """The gateway and fixed addresses fit the management subnet and name declared hosts."""
    mgmt = c.spec.management
    subnet = ["management.subnet"]
    if mgmt.gateway is not None and mgmt.gateway not in mgmt.subnet:
        c.add(
            "management.gateway",
            f"{mgmt.gateway} is outside management.subnet {mgmt.subnet}; use an address in"
            f" {mgmt.subnet} (usually its first, {_first_host(mgmt.subnet)}), or widen the subnet",
            reads=subnet,
        )
    usable = max(mgmt.subnet.num_addresses - 3, 0)  # network, broadcast, gateway
    if line_of(c.spec.target).one_machine and len(c.hosts) > usable and c.all_hosts_known:
        c.add(
            "management.subnet",
            f"{mgmt.subnet} has {usable} host addresses for {len(c.hosts)} hosts",
            reads=["target", HOST_NAMES],
        )
    owners: dict[ipaddress.IPv4Address, str] = {}
    for host, address in mgmt.addresses.items():
        path = f"management.addresses.{host}"
        c.check_host(path, host)
        if address not in mgmt.subnet:
            c.add(
                path,
                f"{address} is outside management.subnet {mgmt.subnet}; use an address in"
                f" {mgmt.subnet}, or widen the subnet",
                reads=subnet,
            )
        if address in owners:
            c.add(
                path,
                f"{address} is already the address of {owners[address]!r}; give each host its"
                " own address",
            )
        owners.setdefault(address, host)


def check_cabling(c: Checker) -> None:
    """Cable ends name declared switches and hosts' HCAs, and each port carries one cable."""
    switches = {sw.name for sw in c.spec.fabric.switches}
    # Each group's devices, looked up through the host's group: a set of every host's
    # (host, device) pairs was 131,072 tuples at 16,384 hosts, built even with no cabling.
    devices = [{hca.device for hca in group.hcas} for group in c.spec.nodes]
    used: dict[tuple[str, ...], int] = {}
    for index, cable in enumerate(c.spec.fabric.cabling):
        for side, end in (("a", cable.a), ("b", cable.b)):
            path = f"fabric.cabling[{index}].{side}"
            if end.switch is not None and end.switch not in switches:
                c.add(f"{path}.switch", f"{end.switch!r} is not in fabric.switches; declare it")
            group = c.hosts.get(end.host) if end.host is not None else None
            declared = group is not None and end.hca in devices[group]
            if end.host is not None and not declared and c.all_hosts_known:
                c.add(
                    f"{path}.hca",
                    f"{end.host} {end.hca} is not a declared HCA; add it to that node's hcas",
                    reads=[HOST_NAMES, "nodes[*].hcas[*].device"],
                )
            key = (end.switch or end.host or end.guid or "", end.hca or "", str(end.port))
            if key in used:
                c.add(f"{path}.port", f"port {end.port} already has fabric.cabling[{used[key]}]")
            used.setdefault(key, index)


def check_rdma_stack(c: Checker) -> None:
    """A vendor stack names its release, a mirror or ISO (with its checksum) and a signing
    key; the distro's takes none of those."""
    stack = c.spec.rdma_stack
    path = "rdma_stack"
    if stack.source == "distro":
        for name in ("repo_url", "iso_url", "checksum", "gpg_key_url", "gpg_key_checksum"):
            if getattr(stack, name) is not None:
                c.add(
                    f"{path}.{name}", "applies to source doca or mlnx_ofed, not distro; remove it"
                )
        return
    if stack.version is None:
        c.add(f"{path}.version", f"source {stack.source} needs a version, e.g. 24.10-1.1.4.0")
    if (stack.repo_url is None) == (stack.iso_url is None):
        c.add(f"{path}.repo_url", f"source {stack.source} needs repo_url or iso_url (one)")
    if stack.iso_url is not None and stack.checksum is None:
        c.add(f"{path}.checksum", "iso_url needs its checksum: sha256:<hex>")
    if stack.gpg_key_url is None or stack.gpg_key_checksum is None:
        c.add(
            f"{path}.gpg_key_url",
            "a vendor stack needs gpg_key_url and gpg_key_checksum (sha256:<hex>): packages are "
            "verified against that key",
        )


#: The general rules, in the order their problems are reported.
GENERAL_RULES: tuple[Rule, ...] = (
    check_host_names,
    check_hca_devices,
    check_link_rates,
    check_roce_netdevs,
    check_gpus,
    check_target_kind,
    check_target_blocks,
    check_mtu,
    check_fabric_blocks,
    check_hca_link_layers,
    check_topology,
    check_cabling,
    check_rdma_stack,
    check_subnet_managers,
    check_infiniband_sm_features,
    check_partitions,
    check_roce,
    check_roce_classes,
    check_roce_congestion,
    check_switches_managed,
    check_slurm,
    check_slurm_partitions,
    *KUBERNETES_RULES,
    *STORAGE_RULES,
    check_management,
    *NETWORK_RULES,
    *CONSISTENCY_RULES,
)

#: Every rule ``validate`` and the components run: the general rules, then the target rules.
RULES: tuple[Rule, ...] = GENERAL_RULES + target_rules()


def cross_field_problems(spec: ClusterSpec, unknown: Collection[str] = ()) -> list[Problem]:
    """Every broken cross-field and target rule of ``spec``, in spec order.

    ``unknown`` lists paths holding placeholders for fields that failed validation;
    findings in or reading them are left out.
    """
    checker = Checker(spec, unknown=frozenset(map(path_parts, unknown)))
    for rule in RULES:
        rule(checker)
    return checker.problems


def provision_problems(spec: ClusterSpec, target: Target) -> list[Problem]:
    """Why a component that provisions ``target`` refuses ``spec``, before creating anything.

    The spec's own rules (the target rules included, as ``validate`` runs them), and a
    spec written for another target.
    """
    problems = cross_field_problems(spec)
    if spec.target != target:
        problems.append(Problem("target", f"{spec.target!r}: this component provisions {target}"))
    return problems
