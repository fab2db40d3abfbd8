"""The cluster spec: one pydantic model for every target (lab, bare metal, AWS, GCP).

The spec is the single source of truth. It is read from the Pulumi stack config
(key ``railyard:cluster``) or from a plain YAML file, validated here, and flows
one way: spec -> Pulumi resources -> inventory -> roles -> checks -> report.

Field names are part of the public interface: stack files, the JSON Schema
(``python -m fabric schema``) and every later stage use them.

Validation runs in two passes. pydantic checks each field (types, ranges, unknown
keys); once every field parses, ClusterSpec's rules (end of this module) check what
spans fields - unique hosts, switch ports, MTU per fabric kind, QoS ranges, host
references, target blocks, cloud machine types - and raise one SpecProblems listing
every broken rule. fabric.specload turns both into ``(path, message)`` pairs.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from fabric.catalog import aws_efa_types, aws_instance, gcp_gpu_machine_types, gcp_machine
from fabric.hostlist import HostlistError, compress, expand

Target = Literal["lab", "baremetal", "aws", "gcp"]
NodeRole = Literal["compute", "controller", "login", "sm"]
FabricKind = Literal["infiniband", "roce", "efa", "gcp-gpudirect"]
LinkLayer = Literal["InfiniBand", "Ethernet"]
LinkWidth = Literal["1x", "2x", "4x", "8x", "12x"]

#: InfiniBand MTUs the IBTA defines (bytes).
IB_MTUS = (256, 512, 1024, 2048, 4096)
#: Ethernet MTU range accepted for RoCE and cloud fabrics (bytes).
ETH_MTU_RANGE = (1500, 9216)
#: Largest MTU each cloud's VPC carries (bytes): AWS jumbo frames, GCP VPC maximum.
CLOUD_MAX_MTU = {"aws": 9001, "gcp": 8896}
#: OpenSM sm_priority range.
SM_PRIORITY_RANGE = (0, 15)
#: 802.1Qbb PFC priority range.
PFC_PRIORITY_RANGE = (0, 7)
#: DSCP range (6 bits).
DSCP_RANGE = (0, 63)
#: The fabric kind each cloud target supports, and the target each cloud kind needs.
CLOUD_FABRIC = {"aws": "efa", "gcp": "gcp-gpudirect"}
#: The HCA link layer each fabric kind needs (EFA devices report neither; not checked).
FABRIC_LINK_LAYER: dict[str, LinkLayer] = {
    "infiniband": "InfiniBand",
    "roce": "Ethernet",
    "gcp-gpudirect": "Ethernet",
}
#: A host name: one RFC 1123 label (letters, digits, inner hyphens, at most 63 long).
HOSTNAME_PATTERN = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$")


def _range_schema(bounds: tuple[int, int]) -> dict[str, int]:
    """JSON Schema bounds for a field whose range is checked by ClusterSpec's rules."""
    return {"minimum": bounds[0], "maximum": bounds[1]}


class Model(BaseModel):
    """Base for spec models: unknown keys are errors, so typos are caught."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class SecretRef(Model):
    """A secret held outside the spec: the name of a Pulumi config secret.

    ``{"config": "bmcPassword"}`` means ``pulumi config set --secret bmcPassword ...``.
    """

    config: str = Field(min_length=1, description="Pulumi config key holding the secret")


class HcaSpec(Model):
    """One host channel adapter (a ConnectX or EFA device) of a node."""

    device: str = Field(description="RDMA device name, e.g. mlx5_0")
    ports: int = Field(default=1, ge=1, le=2, description="ports used on this HCA")
    link_layer: LinkLayer = "InfiniBand"
    rate_gbps: int = Field(default=400, gt=0, description="expected port rate, e.g. 400 for 4xNDR")
    width: LinkWidth = "4x"
    rail: int = Field(
        default=0, ge=0, description="rail index: which leaf of a rail-optimized unit"
    )
    netdev: str | None = Field(default=None, description="Ethernet netdev for RoCE, e.g. ens1f0np0")


class NodeGroup(Model):
    """Nodes that share a shape; ``names`` is a Slurm host list such as ``gpu[001-016]``."""

    names: str = Field(description="host list, e.g. gpu[001-016]")
    role: NodeRole = "compute"
    gpus: int = Field(default=0, ge=0)
    gpu_type: str | None = Field(default=None, description="GRES type, e.g. h100")
    cpus: int | None = Field(default=None, ge=1)
    memory_mb: int | None = Field(default=None, ge=1)
    hcas: list[HcaSpec] = Field(default_factory=list)
    instance_type: str | None = Field(default=None, description="cloud machine type")

    @cached_property
    def hosts(self) -> list[str]:
        """The expanded host names of this group."""
        return expand(self.names)


class FatTree(Model):
    """A two-level fat tree (leaves and spines)."""

    kind: Literal["fat-tree"] = "fat-tree"
    leaves: int = Field(ge=1)
    spines: int = Field(default=0, ge=0)
    ports_per_switch: int = Field(default=64, ge=2, le=255)
    nodes_per_leaf: int = Field(
        ge=1, description="host ports per leaf (per rail when rail-optimized)"
    )
    uplinks_per_leaf: int = Field(default=0, ge=0, description="links from each leaf to the spines")
    rail_optimized: bool = Field(
        default=False, description="HCA k of every node of a scalable unit goes to leaf k"
    )
    link_rate_gbps: int = Field(default=400, gt=0, description="switch-to-switch link rate")
    link_width: LinkWidth = "4x"


class SubnetManager(Model):
    """An OpenSM instance: the host it runs on and its priority (highest wins master)."""

    host: str
    priority: int = Field(
        default=0,
        description="sm_priority, 0-15",
        json_schema_extra=_range_schema(SM_PRIORITY_RANGE),
    )


class Partition(Model):
    """An InfiniBand partition (partitions.conf)."""

    name: str
    pkey: str = Field(description="partition key, e.g. 0x7fff")
    members: str = Field(default="ALL", description="ALL, or a host list")
    membership: Literal["full", "limited", "both"] = "full"
    ipoib: bool = True


class InfinibandSpec(Model):
    """InfiniBand-only settings."""

    subnet_managers: list[SubnetManager] = Field(default_factory=list)
    routing_engine: Literal[
        "ftree", "updn", "minhop", "dor", "lash", "dfsssp", "sssp", "nue", "torus-2QoS"
    ] = "ftree"
    lmc: int = Field(default=0, ge=0, le=7)
    sweep_interval: int = Field(default=10, ge=0, description="OpenSM sweep interval, seconds")
    partitions: list[Partition] = Field(default_factory=list)


class RoceSpec(Model):
    """RoCEv2 lossless-Ethernet settings (ConnectX defaults used by NVIDIA)."""

    trust: Literal["dscp", "pcp"] = "dscp"
    rdma_dscp: int = Field(
        default=26,
        description="DSCP of RDMA traffic, 0-63",
        json_schema_extra=_range_schema(DSCP_RANGE),
    )
    pfc_priority: int = Field(
        default=3,
        description="lossless priority, 0-7",
        json_schema_extra=_range_schema(PFC_PRIORITY_RANGE),
    )
    ecn: bool = True
    cnp_dscp: int = Field(
        default=48,
        description="DSCP of congestion notification packets, 0-63",
        json_schema_extra=_range_schema(DSCP_RANGE),
    )
    roce_tos: int = Field(
        default=106, ge=0, le=255, description="RoCE ToS for rdma_cm (DSCP<<2|ECN)"
    )


class Switch(Model):
    """A fabric or management switch with a management address (bare metal)."""

    name: str
    os: Literal["sonic", "cumulus", "onyx", "unmanaged"] = "unmanaged"
    address: str | None = None
    role: Literal["leaf", "spine", "management"] = "leaf"


class FabricSpec(Model):
    """The RDMA fabric."""

    kind: FabricKind
    mtu: int = Field(description="IB: 256-4096; Ethernet: 1500-9216")
    topology: FatTree | None = None
    infiniband: InfinibandSpec | None = None
    roce: RoceSpec | None = None
    switches: list[Switch] = Field(default_factory=list)


class ManagementNetwork(Model):
    """The SSH / management network."""

    subnet: ipaddress.IPv4Network
    gateway: ipaddress.IPv4Address | None = None
    addresses: dict[str, ipaddress.IPv4Address] = Field(
        default_factory=dict, description="fixed node addresses (bare metal); others are assigned"
    )
    ssh_user: str = "root"


class RedfishEndpoint(Model):
    """A node's BMC: the Redfish service root and the system to drive."""

    url: str = Field(description="https://BMC[:port] of the Redfish service")
    system_id: str | None = Field(default=None, description="Systems/<id>; the first one if unset")


class BmcNetwork(Model):
    """The out-of-band (BMC) network and Redfish credentials."""

    subnet: ipaddress.IPv4Network | None = None
    username: str = "admin"
    password: SecretRef | None = None
    verify_tls: bool = True
    endpoints: dict[str, RedfishEndpoint] = Field(
        default_factory=dict, description="node name -> Redfish endpoint (bare metal)"
    )


class SlurmPartition(Model):
    """A Slurm partition."""

    name: str
    nodes: str = Field(description="host list, or ALL")
    default: bool = False
    max_time: str = "INFINITE"


class SlurmSpec(Model):
    """Slurm settings."""

    cluster_name: str | None = None
    controller: str | None = Field(default=None, description="host running slurmctld")
    partitions: list[SlurmPartition] = Field(default_factory=list)
    topology_plugin: Literal["tree", "block"] = "tree"
    block_size: int | None = Field(default=None, ge=1)


class LabSpec(Model):
    """Settings for the one-machine lab (target ``lab``)."""

    image: str = Field(default="localhost/railyard-node", description="node image name")
    bmc_port: int = Field(default=8000, ge=1024, le=65535, description="Redfish emulator port")
    ibsim_port: int = Field(default=7070, ge=1024, le=65535, description="ibsim remote port")


class AwsSpec(Model):
    """AWS target: EFA instances in a cluster placement group."""

    region: str
    availability_zone: str | None = None
    vpc_id: str | None = Field(default=None, description="existing VPC; a new one if unset")
    vpc_cidr: ipaddress.IPv4Network = ipaddress.IPv4Network("10.0.0.0/16")
    subnet_id: str | None = None
    subnet_cidr: ipaddress.IPv4Network = ipaddress.IPv4Network("10.0.0.0/20")
    placement_group: str | None = Field(default=None, description="cluster placement group name")
    placement_strategy: Literal["cluster", "spread", "partition"] = "cluster"
    ami: str
    key_name: str
    efa: bool = True
    gpudirect_rdma: bool = True
    capacity_reservation_id: str | None = None
    capacity_block: bool = False
    head_instance_type: str = "c6i.2xlarge"


class GcpSpec(Model):
    """GCP target: A3 / A3 Mega with GPUDirect-TCPX(O)."""

    project: str
    region: str
    zone: str
    image: str = Field(description="boot image, e.g. a COS or Debian image for A3")
    network_prefix: str = "railyard"
    gpu_nic_mtu: int = 8244
    gpu_subnet_cidrs: list[ipaddress.IPv4Network] = Field(default_factory=list)
    system_subnet_cidr: ipaddress.IPv4Network = ipaddress.IPv4Network("10.128.0.0/20")
    compact_placement: bool = True


class ClusterSpec(Model):
    """A whole cluster: nodes, fabric, networks, Slurm, and the target they land on."""

    name: Annotated[str, Field(pattern=r"^[a-z][a-z0-9-]{0,39}$", description="cluster name")]
    target: Target
    nodes: list[NodeGroup] = Field(min_length=1)
    fabric: FabricSpec
    management: ManagementNetwork
    bmc: BmcNetwork | None = None
    slurm: SlurmSpec = Field(default_factory=SlurmSpec)
    lab: LabSpec | None = None
    aws: AwsSpec | None = None
    gcp: GcpSpec | None = None

    @cached_property
    def hosts(self) -> dict[str, NodeGroup]:
        """Every host name mapped to its node group, in declaration order."""
        return {host: group for group in self.nodes for host in group.hosts}

    def hosts_with_role(self, role: NodeRole) -> list[str]:
        """Host names of every node with ``role``."""
        return [host for host, group in self.hosts.items() if group.role == role]

    @model_validator(mode="after")
    def _check_cross_field_rules(self) -> ClusterSpec:
        """Check every rule spanning several fields; report all broken ones at once."""
        problems = cross_field_problems(self)
        if problems:
            raise SpecProblems(problems)
        return self


# --- Cross-field rules ---------------------------------------------------------------------
# Each rule reads the whole spec and adds (path, message) problems; ClusterSpec's validator
# runs them all and raises one SpecProblems, so a user sees every mistake in one pass.
# Paths are written as users read them: ``fabric.infiniband.subnet_managers[1].priority``.


class SpecProblems(ValueError):
    """Every cross-field problem of a cluster spec, as ``(path, message)`` pairs."""

    def __init__(self, problems: list[tuple[str, str]]) -> None:
        super().__init__(problems)
        self.problems = problems

    def __str__(self) -> str:
        count = len(self.problems)
        lines = [f"{count} problem{'s' if count != 1 else ''} in the cluster spec:"]
        lines += [f"  {path}: {message}" for path, message in self.problems]
        return "\n".join(lines)


@dataclass
class _Checker:
    """The spec under check, its declared hosts, and the problems found so far."""

    spec: ClusterSpec
    hosts: dict[str, int] = field(default_factory=dict)
    problems: list[tuple[str, str]] = field(default_factory=list)
    #: False when some node group's host list could not be expanded: references to
    #: hosts are then not reported as undeclared, as they may be in that group.
    all_hosts_known: bool = True

    def add(self, path: str, message: str) -> None:
        """Record one problem at ``path``."""
        self.problems.append((path, message))

    def host_groups(self) -> list[tuple[str, NodeGroup]]:
        """Each declared host with its node group, in declaration order."""
        return [(host, self.spec.nodes[index]) for host, index in self.hosts.items()]

    def declared(self) -> str:
        """The declared hosts as a compact host list, for messages."""
        return compress(self.hosts) or "(none)"

    def check_host(self, path: str, host: str) -> None:
        """Record a problem if ``host`` is not a declared node."""
        if host not in self.hosts and self.all_hosts_known:
            self.add(path, f"{host!r} is not a declared host; declared hosts: {self.declared()}")

    def check_host_list(self, path: str, expr: str) -> None:
        """Record a problem if host list ``expr`` is malformed or names undeclared hosts."""
        if expr == "ALL":
            return
        try:
            names = expand(expr)
        except HostlistError as error:
            self.add(path, f"{error}")
            return
        unknown = [name for name in names if name not in self.hosts]
        if not names:
            self.add(path, f"host list {expr!r} names no hosts; use ALL or e.g. gpu[01-04]")
        elif unknown and self.all_hosts_known:
            self.add(
                path,
                f"{compress(unknown)!r} in {expr!r} are not declared hosts;"
                f" declared hosts: {self.declared()}",
            )


def _in_range(value: int, bounds: tuple[int, int]) -> bool:
    return bounds[0] <= value <= bounds[1]


def _check_nodes(c: _Checker) -> None:
    """Host lists expand, host names are valid and unique, HCA devices are unique per node."""
    groups_of: dict[str, int] = {}
    for index, group in enumerate(c.spec.nodes):
        path = f"nodes[{index}].names"
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
            if name in groups_of:
                first = groups_of[name]
                where = "earlier in this group" if first == index else f"in nodes[{first}]"
                c.add(
                    path,
                    f"host {name!r} is declared twice (also {where}); host names must be unique",
                )
            else:
                groups_of[name] = index
        devices: dict[str, int] = {}
        for hca_index, hca in enumerate(group.hcas):
            if hca.device in devices:
                c.add(
                    f"nodes[{index}].hcas[{hca_index}].device",
                    f"device {hca.device!r} is listed twice (also hcas[{devices[hca.device]}])",
                )
            devices.setdefault(hca.device, hca_index)
    c.hosts = groups_of


def _check_target(c: _Checker) -> None:
    """The fabric kind suits the target, and the target's settings block is present."""
    spec = c.spec
    kind, target = spec.fabric.kind, spec.target
    if target in CLOUD_FABRIC and kind != CLOUD_FABRIC[target]:
        c.add(
            "fabric.kind",
            f"target {target} supports only kind {CLOUD_FABRIC[target]}, not {kind!r}",
        )
    for cloud, cloud_kind in CLOUD_FABRIC.items():
        if kind == cloud_kind and target != cloud:
            c.add("fabric.kind", f"kind {kind} needs target {cloud}, not {target!r}")
    blocks = {"aws": spec.aws, "gcp": spec.gcp, "lab": spec.lab}
    for name, block in blocks.items():
        if target == name and block is None and name != "lab":
            c.add(name, f"target {target} needs the {name} block; see python -m fabric schema")
        if block is not None and target != name:
            c.add(name, f"the {name} block applies only to target {name}; target is {target!r}")


def _check_fabric_settings(c: _Checker) -> None:
    """MTU per fabric kind, and only the settings block the fabric kind uses."""
    fabric = c.spec.fabric
    if fabric.kind == "infiniband":
        if fabric.mtu not in IB_MTUS:
            allowed = ", ".join(map(str, IB_MTUS))
            c.add("fabric.mtu", f"{fabric.mtu} is not an InfiniBand MTU; use one of {allowed}")
    else:
        low, high = ETH_MTU_RANGE
        cap = CLOUD_MAX_MTU.get(c.spec.target)
        if not _in_range(fabric.mtu, ETH_MTU_RANGE):
            c.add("fabric.mtu", f"{fabric.mtu} is outside the Ethernet MTU range {low}-{high}")
        elif cap is not None and fabric.mtu > cap:
            c.add("fabric.mtu", f"{fabric.mtu} is above the {c.spec.target} maximum MTU {cap}")
    if fabric.infiniband is not None and fabric.kind != "infiniband":
        c.add("fabric.infiniband", f"InfiniBand settings do not apply to kind {fabric.kind!r}")
    if fabric.roce is not None and fabric.kind != "roce":
        c.add("fabric.roce", f"RoCE settings do not apply to kind {fabric.kind!r}")
    if fabric.topology is not None and fabric.kind in CLOUD_FABRIC.values():
        c.add("fabric.topology", f"the {fabric.kind} fabric is the cloud's; remove topology")


def _check_hca_link_layers(c: _Checker) -> None:
    """Every HCA's link layer is the one the fabric kind runs on."""
    wanted = FABRIC_LINK_LAYER.get(c.spec.fabric.kind)
    if wanted is None:
        return
    for index, group in enumerate(c.spec.nodes):
        for hca_index, hca in enumerate(group.hcas):
            if hca.link_layer != wanted:
                c.add(
                    f"nodes[{index}].hcas[{hca_index}].link_layer",
                    f"{hca.link_layer} HCA {hca.device!r} on a {c.spec.fabric.kind} fabric;"
                    f" set link_layer: {wanted}",
                )


def _check_topology(c: _Checker) -> None:
    """Leaves have enough host ports for the fabric nodes, and leaf and spine ports add up.

    Layout as in fabric/topology/from_spec.py: fabric nodes fill leaves ``nodes_per_leaf``
    at a time; rail-optimized, each ``nodes_per_leaf`` nodes form a scalable unit taking
    one leaf per rail, with HCA rail k on leaf k of the unit.
    """
    tree = c.spec.fabric.topology
    if tree is None:
        return
    path = "fabric.topology"
    fabric_nodes = [(host, g) for host, g in c.host_groups() if g.hcas]
    rails = 1 + max((h.rail for _, g in fabric_nodes for h in g.hcas), default=0)
    if tree.rail_optimized:
        units = tree.leaves // rails
        ports = units * tree.nodes_per_leaf
        if len(fabric_nodes) > ports:
            needed = -(-len(fabric_nodes) // tree.nodes_per_leaf)
            c.add(
                f"{path}.leaves",
                f"{tree.leaves} leaves hold {units} scalable unit(s) of {rails} rails ="
                f" {ports} nodes, but {len(fabric_nodes)} HCA-bearing nodes need {needed}"
                f" units = {needed * rails} leaves; raise leaves or nodes_per_leaf",
            )
    else:
        ports = tree.leaves * tree.nodes_per_leaf
        if len(fabric_nodes) > ports:
            c.add(
                f"{path}.nodes_per_leaf",
                f"{len(fabric_nodes)} HCA-bearing nodes but {tree.leaves} leaves x"
                f" {tree.nodes_per_leaf} nodes_per_leaf = {ports} host ports;"
                " raise leaves or nodes_per_leaf",
            )
    _check_leaf_ports(c, tree, fabric_nodes)
    _check_spines(c, tree)


def _check_leaf_ports(
    c: _Checker, tree: FatTree, fabric_nodes: list[tuple[str, NodeGroup]]
) -> None:
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
        )


def _check_spines(c: _Checker, tree: FatTree) -> None:
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


def _check_infiniband(c: _Checker) -> None:
    """An InfiniBand fabric has subnet managers on declared IB hosts, and valid partitions."""
    fabric = c.spec.fabric
    if fabric.kind != "infiniband":
        return
    ib = fabric.infiniband
    if ib is None or not ib.subnet_managers:
        path = "fabric.infiniband" if ib is None else "fabric.infiniband.subnet_managers"
        c.add(path, "an infiniband fabric needs at least one subnet manager, e.g. - {host: sm1}")
        return
    seen: set[str] = set()
    for index, sm in enumerate(ib.subnet_managers):
        path = f"fabric.infiniband.subnet_managers[{index}]"
        if not _in_range(sm.priority, SM_PRIORITY_RANGE):
            c.add(f"{path}.priority", f"{sm.priority} is outside the sm_priority range 0-15")
        c.check_host(f"{path}.host", sm.host)
        if sm.host in seen:
            c.add(f"{path}.host", f"{sm.host!r} runs a subnet manager already; list each host once")
        seen.add(sm.host)
        if sm.host in c.hosts and not c.spec.nodes[c.hosts[sm.host]].hcas:
            c.add(
                f"{path}.host",
                f"{sm.host!r} has no HCA, so OpenSM there cannot reach the fabric",
            )
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


def _check_roce(c: _Checker) -> None:
    """PFC priority and DSCP values are in range and consistent with the RoCE ToS."""
    roce = c.spec.fabric.roce
    if roce is None:
        return
    if not _in_range(roce.pfc_priority, PFC_PRIORITY_RANGE):
        c.add(
            "fabric.roce.pfc_priority",
            f"{roce.pfc_priority} is outside the PFC priority range 0-7",
        )
    for name in ("rdma_dscp", "cnp_dscp"):
        value = getattr(roce, name)
        if not _in_range(value, DSCP_RANGE):
            c.add(f"fabric.roce.{name}", f"{value} is outside the DSCP range 0-63")
    if roce.rdma_dscp == roce.cnp_dscp:
        c.add(
            "fabric.roce.cnp_dscp",
            f"{roce.cnp_dscp} equals rdma_dscp; CNPs need their own DSCP, e.g. 48",
        )
    if _in_range(roce.rdma_dscp, DSCP_RANGE) and roce.roce_tos >> 2 != roce.rdma_dscp:
        c.add(
            "fabric.roce.roce_tos",
            f"{roce.roce_tos} carries DSCP {roce.roce_tos >> 2} but rdma_dscp is {roce.rdma_dscp};"
            f" use {roce.rdma_dscp << 2 | 2} (rdma_dscp << 2 | ECT(0))",
        )


def _check_slurm(c: _Checker) -> None:
    """Slurm names declared hosts and has a block size for the block plugin."""
    slurm = c.spec.slurm
    if slurm.controller is not None:
        c.check_host("slurm.controller", slurm.controller)
    if slurm.topology_plugin == "block" and slurm.block_size is None:
        c.add(
            "slurm.block_size",
            "topology_plugin block needs block_size (nodes per block), e.g. 16",
        )
    if slurm.topology_plugin != "block" and slurm.block_size is not None:
        c.add(
            "slurm.block_size",
            f"block_size applies only to topology_plugin block, not {slurm.topology_plugin!r}",
        )
    names: dict[str, int] = {}
    defaults: list[int] = []
    for index, part in enumerate(slurm.partitions):
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


def _check_networks(c: _Checker) -> None:
    """Management addresses and BMC endpoints belong to declared hosts and fit their subnets."""
    mgmt = c.spec.management
    if mgmt.gateway is not None and mgmt.gateway not in mgmt.subnet:
        c.add("management.gateway", f"{mgmt.gateway} is outside management.subnet {mgmt.subnet}")
    usable = max(mgmt.subnet.num_addresses - 3, 0)  # network, broadcast, gateway
    if c.spec.target == "lab" and len(c.hosts) > usable:
        c.add(
            "management.subnet",
            f"{mgmt.subnet} has {usable} host addresses for {len(c.hosts)} hosts",
        )
    owners: dict[ipaddress.IPv4Address, str] = {}
    for host, address in mgmt.addresses.items():
        path = f"management.addresses.{host}"
        c.check_host(path, host)
        if address not in mgmt.subnet:
            c.add(path, f"{address} is outside management.subnet {mgmt.subnet}")
        if address in owners:
            c.add(path, f"{address} is already the address of {owners[address]!r}")
        owners.setdefault(address, host)
    if c.spec.bmc is None:
        return
    for host, endpoint in c.spec.bmc.endpoints.items():
        path = f"bmc.endpoints.{host}"
        c.check_host(path, host)
        if not endpoint.url.startswith(("https://", "http://")):
            c.add(f"{path}.url", f"{endpoint.url!r} is not a Redfish URL; write https://BMC[:port]")


def _check_lab(c: _Checker) -> None:
    lab = c.spec.lab
    if lab is not None and lab.bmc_port == lab.ibsim_port:
        c.add("lab.ibsim_port", f"{lab.ibsim_port} is also lab.bmc_port; use two different ports")


def _check_aws(c: _Checker) -> None:
    """EFA on EFA-capable types, GPUDirect RDMA over EFA, and a cluster placement group."""
    aws = c.spec.aws
    if aws is None or c.spec.target != "aws":
        return
    if c.spec.fabric.kind == "efa" and not aws.efa:
        c.add("aws.efa", "fabric kind efa needs aws.efa: true")
    if aws.gpudirect_rdma and not aws.efa:
        c.add(
            "aws.gpudirect_rdma",
            "GPUDirect RDMA runs over EFA; set aws.efa: true or gpudirect_rdma: false",
        )
    if aws.efa:
        if aws.placement_strategy != "cluster":
            c.add(
                "aws.placement_strategy",
                f"{aws.placement_strategy!r}: EFA clusters need placement_strategy: cluster",
            )
        if aws.placement_group is None:
            c.add(
                "aws.placement_group",
                "EFA clusters need a cluster placement group name, e.g. railyard-pg",
            )
    for index, group in enumerate(c.spec.nodes):
        if group.role != "compute":
            continue
        path = f"nodes[{index}]"
        if group.instance_type is None:
            c.add(
                f"{path}.instance_type",
                "target aws needs an instance type for compute nodes, e.g. p5.48xlarge",
            )
            continue
        known = aws_instance(group.instance_type)
        if known is None:
            if aws.efa:
                c.add(
                    f"{path}.instance_type",
                    f"{group.instance_type!r} is not in fabric/catalog.py; EFA types known:"
                    f" {', '.join(aws_efa_types())}",
                )
            continue
        if aws.efa and not known.efa:
            c.add(
                f"{path}.instance_type",
                f"{known.name} has no EFA; use one of {', '.join(aws_efa_types())}",
            )
        if group.gpus and group.gpus != known.gpus:
            c.add(f"{path}.gpus", f"{group.gpus} GPUs, but {known.name} has {known.gpus}")


def _check_gcp(c: _Checker) -> None:
    """Compute nodes use a known A3 machine type whose GPU NICs match the GPU subnets."""
    gcp = c.spec.gcp
    if gcp is None or c.spec.target != "gcp":
        return
    if gcp.gpu_nic_mtu != c.spec.fabric.mtu:
        c.add(
            "gcp.gpu_nic_mtu",
            f"{gcp.gpu_nic_mtu} differs from fabric.mtu {c.spec.fabric.mtu}; set them equal",
        )
    for index, group in enumerate(c.spec.nodes):
        if group.role != "compute":
            continue
        path = f"nodes[{index}]"
        known = gcp_machine(group.instance_type) if group.instance_type else None
        if known is None:
            c.add(
                f"{path}.instance_type",
                f"{group.instance_type!r} is not a known GPU machine type; use one of"
                f" {', '.join(gcp_gpu_machine_types())}",
            )
            continue
        if group.gpus and group.gpus != known.gpus:
            c.add(f"{path}.gpus", f"{group.gpus} GPUs, but {known.name} has {known.gpus}")
        subnets = len(gcp.gpu_subnet_cidrs)
        if subnets and subnets != known.gpu_nics and "gcp.gpu_subnet_cidrs" not in dict(c.problems):
            c.add(
                "gcp.gpu_subnet_cidrs",
                f"{subnets} subnets, but {known.name} has {known.gpu_nics} GPU NICs; list one each",
            )


#: The rules, in the order their problems are reported.
_RULES = (
    _check_nodes,
    _check_target,
    _check_fabric_settings,
    _check_hca_link_layers,
    _check_topology,
    _check_infiniband,
    _check_roce,
    _check_slurm,
    _check_networks,
    _check_lab,
    _check_aws,
    _check_gcp,
)


def cross_field_problems(spec: ClusterSpec) -> list[tuple[str, str]]:
    """Every broken cross-field rule of ``spec`` as ``(path, message)`` pairs, in spec order."""
    checker = _Checker(spec)
    for rule in _RULES:
        rule(checker)
    return checker.problems
