"""The cluster spec's cross-field rules: what no single field can check on its own.

Each rule reads a ClusterSpec through a :class:`~fabric.spec.checker.Checker` and records
problems; :func:`cross_field_problems` runs them all (these general rules, then the
target rules of fabric.spec.targets), so a user sees every mistake in one pass. Paths
are written as users read them: ``fabric.infiniband.subnet_managers[1].priority``.

A spec whose fields failed validation can still be checked: fabric.spec.load passes the
paths of the failed fields as ``unknown`` and findings in or reading them are dropped.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Collection

from fabric.hostlist import HostlistError, expand
from fabric.spec.checker import HOST_NAMES, Checker, Rule, in_range, path_parts
from fabric.spec.constants import (
    CLOUD_FABRIC,
    CLOUD_MAX_MTU,
    DSCP_RANGE,
    ETH_MTU_RANGE,
    FABRIC_LINK_LAYER,
    HOSTNAME_PATTERN,
    IB_MTUS,
    PFC_PRIORITY_RANGE,
    SM_PRIORITY_RANGE,
)
from fabric.spec.models import ClusterSpec, FatTree, NodeGroup, Target
from fabric.spec.problems import Problem
from fabric.spec.targets import TARGET_RULES

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


# --- target and fabric kind ----------------------------------------------------------------


def check_target_kind(c: Checker) -> None:
    """The fabric kind suits the target: cloud targets and cloud kinds go together."""
    if not c.known("target", "fabric.kind"):
        return
    kind, target = c.spec.fabric.kind, c.spec.target
    if target in CLOUD_FABRIC and kind != CLOUD_FABRIC[target]:
        c.add(
            "fabric.kind",
            f"target {target} supports only kind {CLOUD_FABRIC[target]}, not {kind!r}",
        )
    for cloud, cloud_kind in CLOUD_FABRIC.items():
        if kind == cloud_kind and target != cloud:
            c.add("fabric.kind", f"kind {kind} needs target {cloud}, not {target!r}")


def check_target_blocks(c: Checker) -> None:
    """The target's settings block is present, and no other target's block is."""
    if not c.known("target"):
        return
    spec, target = c.spec, c.spec.target
    blocks = {"aws": spec.aws, "gcp": spec.gcp, "lab": spec.lab}
    for name, block in blocks.items():
        if target == name and block is None and name != "lab":
            c.add(name, f"target {target} needs the {name} block; see python -m fabric schema")
        if block is not None and target != name:
            c.add(name, f"the {name} block applies only to target {name}; target is {target!r}")


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
    cap = CLOUD_MAX_MTU.get(c.spec.target)
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
    if fabric.topology is not None and fabric.kind in CLOUD_FABRIC.values():
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
    rails = 1 + max((h.rail for _, g in fabric_nodes for h in g.hcas), default=0)
    node_reads = [HOST_NAMES, "nodes[*].hcas[*].rail"]
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


def check_leaf_ports(c: Checker, tree: FatTree, fabric_nodes: list[tuple[str, NodeGroup]]) -> None:
    """Host ports plus uplinks of one leaf fit in ``ports_per_switch``."""
    per_node = 1
    for _, group in fabric_nodes:
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
    spine_ports = tree.spines * tree.ports_per_switch
    if tree.spines > 0 and tree.leaves * tree.uplinks_per_leaf > spine_ports:
        c.add(
            f"{path}.spines",
            f"{tree.leaves} leaves x {tree.uplinks_per_leaf} uplinks = "
            f"{tree.leaves * tree.uplinks_per_leaf} spine ports needed, but {tree.spines} spines"
            f" x {tree.ports_per_switch} ports = {spine_ports}",
        )


# --- InfiniBand ----------------------------------------------------------------------------


def check_subnet_managers(c: Checker) -> None:
    """An InfiniBand fabric has subnet managers, with valid priorities, on declared IB hosts."""
    fabric = c.spec.fabric
    if fabric.kind != "infiniband" or not c.known("fabric.kind"):
        return
    ib = fabric.infiniband
    if ib is None or not ib.subnet_managers:
        path = "fabric.infiniband" if ib is None else "fabric.infiniband.subnet_managers"
        c.add(path, "an infiniband fabric needs at least one subnet manager, e.g. - {host: sm1}")
        return
    seen: set[str] = set()
    for index, sm in enumerate(ib.subnet_managers):
        path = f"fabric.infiniband.subnet_managers[{index}]"
        if not in_range(sm.priority, SM_PRIORITY_RANGE):
            low, high = SM_PRIORITY_RANGE
            c.add(
                f"{path}.priority",
                f"{sm.priority} is outside the sm_priority range {low}-{high}",
            )
        c.check_host(f"{path}.host", sm.host)
        if sm.host in seen:
            c.add(f"{path}.host", f"{sm.host!r} runs a subnet manager already; list each host once")
        seen.add(sm.host)
        group = c.hosts.get(sm.host)
        if group is not None and not c.spec.nodes[group].hcas:
            c.add(
                f"{path}.host",
                f"{sm.host!r} has no HCA, so OpenSM there cannot reach the fabric",
                reads=[f"nodes[{group}].hcas"],
            )


def check_partitions(c: Checker) -> None:
    """InfiniBand partitions name declared hosts and have distinct, valid partition keys."""
    ib = c.spec.fabric.infiniband
    if ib is None:
        return
    pkeys: dict[int, int] = {}
    for index, part in enumerate(ib.partitions):
        path = f"fabric.infiniband.partitions[{index}]"
        c.check_host_list(f"{path}.members", part.members)
        value = int(part.pkey, 16) if re.fullmatch(r"0x[0-9a-fA-F]{1,4}", part.pkey) else None
        if value is None or not 1 <= value <= 0x7FFF:
            c.add(f"{path}.pkey", f"{part.pkey!r} is not a partition key; use hex 0x0001-0x7fff")
        elif value in pkeys:
            c.add(f"{path}.pkey", f"{part.pkey} is already used by partitions[{pkeys[value]}]")
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


# --- Slurm ---------------------------------------------------------------------------------


def check_slurm(c: Checker) -> None:
    """Slurm names a declared controller and has a block size exactly for the block plugin."""
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
    if slurm.topology_plugin != "block" and slurm.block_size is not None:
        c.add(
            "slurm.block_size",
            f"block_size applies only to topology_plugin block, not {slurm.topology_plugin!r}",
            reads=plugin,
        )


def check_slurm_partitions(c: Checker) -> None:
    """Slurm partitions name declared hosts, have distinct names and at most one default."""
    names: dict[str, int] = {}
    defaults: list[int] = []
    for index, part in enumerate(c.spec.slurm.partitions):
        path = f"slurm.partitions[{index}]"
        c.check_host_list(f"{path}.nodes", part.nodes)
        if part.name in names:
            c.add(f"{path}.name", f"{part.name!r} is already partitions[{names[part.name]}]")
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
            f"{mgmt.gateway} is outside management.subnet {mgmt.subnet}",
            reads=subnet,
        )
    usable = max(mgmt.subnet.num_addresses - 3, 0)  # network, broadcast, gateway
    if c.spec.target == "lab" and len(c.hosts) > usable and c.all_hosts_known:
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
            c.add(path, f"{address} is outside management.subnet {mgmt.subnet}", reads=subnet)
        if address in owners:
            c.add(path, f"{address} is already the address of {owners[address]!r}")
        owners.setdefault(address, host)


def check_bmc(c: Checker) -> None:
    """BMC endpoints belong to declared hosts and are Redfish URLs."""
    if c.spec.bmc is None:
        return
    for host, endpoint in c.spec.bmc.endpoints.items():
        path = f"bmc.endpoints.{host}"
        c.check_host(path, host)
        if not endpoint.url.startswith(("https://", "http://")):
            c.add(f"{path}.url", f"{endpoint.url!r} is not a Redfish URL; write https://BMC[:port]")


#: The general rules, in the order their problems are reported.
GENERAL_RULES: tuple[Rule, ...] = (
    check_host_names,
    check_hca_devices,
    check_target_kind,
    check_target_blocks,
    check_mtu,
    check_fabric_blocks,
    check_hca_link_layers,
    check_topology,
    check_subnet_managers,
    check_partitions,
    check_roce,
    check_slurm,
    check_slurm_partitions,
    check_management,
    check_bmc,
)

#: Every rule ``validate`` and the components run: the general rules, then the target rules.
RULES: tuple[Rule, ...] = GENERAL_RULES + TARGET_RULES


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
