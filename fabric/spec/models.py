"""The cluster spec's pydantic models: one model for every target, each target's own section
(``aws:``, ``gcp:``) added from its folder's ``section.py``.

The spec is the single source of truth. It is read from the Pulumi stack config
(key ``railyard:cluster``) or from a plain YAML file, validated here, and flows
one way: spec -> Pulumi resources -> inventory -> roles -> checks -> report.

Field names are part of the public interface: stack files, the JSON Schema
(``python -m fabric schema``) and every later stage use them.

This module holds the models. pydantic checks each field (types, ranges, unknown
keys); once every field parses, ClusterSpec's validator runs the rules that span
fields (fabric.spec.rules: unique hosts, switch ports, MTU per fabric kind, QoS ranges,
host references; fabric.spec.targets: each target's rules from fabric/targets/<name>/rules.py,
what each target needs) and raises one SpecError. fabric.spec.load reports both kinds together
as problems, running the rules on a best-effort spec when some fields fail.

Imports go one way: the rules import these models; the validator imports the rules
when it runs.
"""

from __future__ import annotations

import ipaddress
import re
from functools import cached_property
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    Field,
    ValidationInfo,
    create_model,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from fabric.hostlist import MAX_HOSTS, HostlistError, expand
from fabric.hostlist import count as count_hosts
from fabric.spec.blocks import EgressSpec, Model
from fabric.spec.constants import (
    DSCP_RANGE,
    PFC_PRIORITY_RANGE,
    SKIP_RULES,
    SM_PRIORITY_RANGE,
    LinkLayer,
)
from fabric.spec.problems import SpecError
from fabric.spec.sm import OPENSM_ROUTING_ENGINES, routing_chain
from fabric.spec.storage import StorageSpec
from fabric.targets import TARGETS, hooks, line_of

__all__ = [
    "AccessSpec",
    "Bastion",
    "Cable",
    "CableEnd",
    "BmcNetwork",
    "ClusterSpec",
    "EgressSpec",
    "ExistingSpec",
    "FabricKind",
    "FabricSpec",
    "FatTree",
    "HcaSpec",
    "InfinibandSpec",
    "CongestionControl",
    "IpamSpec",
    "KubernetesLabels",
    "KubernetesSpec",
    "LabSpec",
    "LinkWidth",
    "ManagementNetwork",
    "Model",
    "NodeGroup",
    "NodeRole",
    "NetworkOperatorSpec",
    "Orchestrator",
    "Partition",
    "RdmaStack",
    "RedfishEndpoint",
    "RoceSpec",
    "PfcWatchdog",
    "EcnQueue",
    "Dcqcn",
    "DcqcnRp",
    "DcqcnNp",
    "PortBuffer",
    "SwitchPort",
    "SecondaryNetwork",
    "SecretRef",
    "SlurmPartition",
    "SlurmSpec",
    "SmMode",
    "SubnetManager",
    "Switch",
    "Target",
]

#: The spec's ``target:`` values: exactly the registered targets (fabric/targets/__init__.py).
Target = Literal[tuple(TARGETS)]  # type: ignore[valid-type]
NodeRole = Literal["compute", "controller", "login", "sm"]
FabricKind = Literal["infiniband", "roce", "efa", "gcp-gpudirect"]
LinkWidth = Literal["1x", "2x", "4x", "8x", "12x"]
Orchestrator = Literal["slurm", "kubernetes", "both"]
LinkSpeed = Literal["SDR", "DDR", "QDR", "FDR10", "FDR", "EDR", "HDR", "NDR", "XDR"]


#: Upper bounds of the counts nothing else bounds (issue 44: ``gpus: 10**30`` reached the check
#: plan). GPUs per node: the largest servers hold 8-16 (HGX, MI300X OAM); 64 leaves room. CPUs:
#: Linux's largest NR_CPUS (8,192). Memory: 64 TiB, past any one server. Port and link rates:
#: XDR 4x (800 Gb/s) is the fastest InfiniBand port; twice it.
MAX_GPUS_PER_NODE = 64
MAX_CPUS_PER_NODE = 8192
MAX_MEMORY_MB = 64 << 20
MAX_RATE_GBPS = 1600


def _range_schema(bounds: tuple[int, int]) -> dict[str, int]:
    """JSON Schema bounds for a field whose range is checked by ClusterSpec's rules."""
    return {"minimum": bounds[0], "maximum": bounds[1]}


class SecretRef(Model):
    """A secret held outside the spec: the name of a Pulumi config secret.

    ``{"config": "bmcPassword"}`` means ``pulumi config set --secret bmcPassword ...``.
    """

    config: str = Field(min_length=1, description="Pulumi config key holding the secret")


class HcaSpec(Model):
    """One host channel adapter (a ConnectX or EFA device) of a node."""

    device: str = Field(description="RDMA device name, e.g. mlx5_0")
    ports: int = Field(strict=True, default=1, ge=1, le=2, description="ports used on this HCA")
    link_layer: LinkLayer = "InfiniBand"
    rate_gbps: int = Field(
        strict=True,
        default=400,
        gt=0,
        le=MAX_RATE_GBPS,
        description="expected port rate, e.g. 400 for 4xNDR",
    )
    width: LinkWidth = "4x"
    rail: int = Field(
        strict=True, default=0, ge=0, description="rail index: which leaf of a rail-optimized unit"
    )
    netdev: str | None = Field(default=None, description="Ethernet netdev for RoCE, e.g. ens1f0np0")
    min_firmware: str | None = Field(
        default=None,
        pattern=r"^\d+(\.\d+)*$",
        description="least HCA firmware (fw_ver), e.g. 28.39.1002: the hca_firmware check",
    )


class NodeGroup(Model):
    """Nodes that share a shape; ``names`` is a Slurm host list such as ``gpu[001-016]``."""

    names: str = Field(description="host list, e.g. gpu[001-016]")
    role: NodeRole = "compute"
    gpus: int = Field(
        strict=True,
        default=0,
        ge=0,
        le=MAX_GPUS_PER_NODE,
        description="GPUs per node, 0-64 (the largest servers hold 8-16)",
    )
    gpu_type: str | None = Field(default=None, description="GRES type, e.g. h100")
    cpus: int | None = Field(strict=True, default=None, ge=1, le=MAX_CPUS_PER_NODE)
    memory_mb: int | None = Field(strict=True, default=None, ge=1, le=MAX_MEMORY_MB)
    hcas: list[HcaSpec] = Field(default_factory=list)
    instance_type: str | None = Field(default=None, description="cloud machine type")

    @cached_property
    def hosts(self) -> list[str]:
        """The expanded host names of this group."""
        return expand(self.names)


class FatTree(Model):
    """A fat tree: leaves and spines, and for a three-level tree ``pods`` of them joined by
    ``super_spines`` (fabric/topology/from_spec.py gives the cabling)."""

    kind: Literal["fat-tree"] = "fat-tree"
    leaves: int = Field(strict=True, ge=1)
    spines: int = Field(strict=True, default=0, ge=0)
    ports_per_switch: int = Field(strict=True, default=64, ge=2, le=255)
    nodes_per_leaf: int = Field(
        strict=True, ge=1, description="host ports per leaf (per rail when rail-optimized)"
    )
    uplinks_per_leaf: int = Field(
        strict=True, default=0, ge=0, description="links from each leaf to the spines"
    )
    pods: int = Field(
        strict=True,
        default=1,
        ge=1,
        description="leaves and spines split evenly into pods; a leaf's uplinks go to its pod's spines",
    )
    super_spines: int = Field(
        strict=True, default=0, ge=0, description="third tier above the spines, joining the pods"
    )
    uplinks_per_spine: int = Field(
        strict=True, default=0, ge=0, description="links from each spine to the super-spines"
    )
    rail_optimized: bool = Field(
        default=False, description="HCA k of every node of a scalable unit goes to leaf k"
    )
    link_rate_gbps: int = Field(
        strict=True, default=400, gt=0, le=MAX_RATE_GBPS, description="switch-to-switch link rate"
    )
    link_width: LinkWidth = "4x"


SmMode = Literal["managed", "external", "switch"]


class SubnetManager(Model):
    """A subnet manager of the fabric, in one of three modes:

    * ``managed`` (the default): railyard installs and runs OpenSM on ``host``;
    * ``external``: a host SM railyard does not run (NVIDIA UFM, another team's OpenSM), known
      by the ``node_description`` and/or port ``guid`` its port answers with;
    * ``switch``: the SM inside the managed ``switch``; ``configure: true`` has railyard enable
      it (in the lab: an OpenSM bound to that ibsim switch's port 0).

    The expected master is the entry with ``role: master``, else the highest priority.
    """

    mode: SmMode = Field(
        default="managed",
        description="managed (railyard runs OpenSM on host), external (UFM, another team's "
        "OpenSM) or switch (the SM inside a managed switch)",
    )
    host: str | None = Field(default=None, description="managed: the host railyard runs OpenSM on")
    switch: str | None = Field(default=None, description="switch: the switch whose SM this is")
    node_description: str | None = Field(
        default=None,
        max_length=64,
        description="external/switch: the NodeDescription of the SM's node (smpquery nodedesc)",
    )
    guid: str | None = Field(
        default=None,
        pattern=r"^0x[0-9a-f]{16}$",
        description="external/switch: the SM's port GUID (sminfo's sm guid), or its node GUID",
    )
    priority: int = Field(
        strict=True,
        default=0,
        description="sm_priority, 0-15",
        json_schema_extra=_range_schema(SM_PRIORITY_RANGE),
    )
    role: Literal["master", "standby"] | None = Field(
        default=None,
        description="the expected role; unset: the highest priority is the master",
    )
    configure: bool = Field(
        default=False, description="switch: railyard enables the switch's SM (lab only)"
    )

    @property
    def id(self) -> str:
        """How checks and messages name it: the host, ``switch:<name>`` or
        ``external:<description or guid>``."""
        if self.mode == "managed":
            return self.host or "managed:?"
        if self.mode == "switch":
            return f"switch:{self.switch}"
        return f"external:{self.node_description or self.guid}"


class Partition(Model):
    """An InfiniBand partition (partitions.conf)."""

    name: str
    pkey: str = Field(description="partition key, e.g. 0x7fff")
    members: str = Field(default="ALL", description="ALL, ALL_CAS, ALL_SWITCHES or SELF")
    membership: Literal["full", "limited", "both"] = "full"
    ipoib: bool = True


class CaCongestion(Model):
    """One SL's CA congestion setting (OpenSM ``cc_ca_cong_setting_*``, one line per SL)."""

    sl: int = Field(strict=True, ge=0, le=15, description="service level these values apply to")
    ccti_timer: int = Field(
        strict=True, default=0, ge=0, le=65535, description="CCTI decrement timer"
    )
    ccti_increase: int = Field(
        strict=True, default=0, ge=0, le=255, description="CCTI added per BECN"
    )
    trigger_threshold: int = Field(
        strict=True, default=0, ge=0, le=255, description="CCTI that logs an event"
    )
    ccti_min: int = Field(
        strict=True, default=0, ge=0, le=255, description="lowest CCTI (a rate floor)"
    )


class SwitchCongestion(Model):
    """Every switch's SwitchCongestionSetting (OpenSM ``cc_sw_cong_setting_*``). Masks are
    256-bit hex (bit N: port N); the return delay is a CCT entry ``shift:multiplier``."""

    control_map: int = Field(
        strict=True, default=0, ge=0, le=0x1F, description="which fields are valid"
    )
    victim_mask: str = Field(default="0x0", pattern=r"^0x[0-9a-fA-F]{1,64}$")
    credit_mask: str = Field(default="0x0", pattern=r"^0x[0-9a-fA-F]{1,64}$")
    threshold: int = Field(
        strict=True, default=0, ge=0, le=15, description="marking aggressiveness"
    )
    packet_size: int = Field(
        strict=True, default=0, ge=0, le=255, description="credits; smaller unmarked"
    )
    credit_starvation_threshold: int = Field(strict=True, default=0, ge=0, le=15)
    credit_starvation_return_delay: str = Field(default="0:0", pattern=r"^[0-3]:\d{1,5}$")
    marking_rate: int = Field(
        strict=True, default=0, ge=0, le=65535, description="packets between marks"
    )


class CongestionControl(Model):
    """InfiniBand congestion control (IBA class 0x21) as OpenSM configures it in ``managed``
    mode: its ``congestion_control``, ``cc_key``, ``cc_max_outstanding_mads``, switch and CA
    congestion settings and the CCT. Checked with ``ibccquery`` where the fabric answers
    congestion-control MADs (ibsim does not)."""

    enabled: bool = Field(default=False, description="OpenSM congestion_control")
    cc_key: str = Field(
        default="0x0000000000000000",
        pattern=r"^0x[0-9a-fA-F]{16}$",
        description="CC_Key OpenSM uses (it does not set a new one)",
    )
    max_outstanding_mads: int = Field(strict=True, default=500, ge=1, le=65535)
    switch: SwitchCongestion = Field(default_factory=SwitchCongestion)
    ca_port_control: int = Field(
        strict=True, default=0, ge=0, le=1, description="0: per QP, 1: per SL/port"
    )
    ca: list[CaCongestion] = Field(default_factory=list, description="per-SL CA settings")
    cct: list[str] = Field(
        default_factory=list,
        max_length=128,
        description="Congestion Control Table entries, shift:multiplier (at most 128)",
    )

    @field_validator("cct")
    @classmethod
    def _cct_entries(cls, value: list[str]) -> list[str]:
        for index, entry in enumerate(value):
            match = re.fullmatch(r"([0-3]):(\d{1,5})", entry)
            if match is None or int(match[2]) > 16383:
                raise PydanticCustomError(
                    "cct_entry",
                    "cct[{index}] '{entry}': write shift:multiplier, shift 0-3, multiplier "
                    "0-16383 (IBA CCT entry)",
                    {"index": index, "entry": entry},
                )
        return value

    @property
    def ca_control_map(self) -> int:
        """The SLs the CA settings configure, as OpenSM's 16-bit control map."""
        return sum(1 << entry.sl for entry in self.ca)


class InfinibandSpec(Model):
    """InfiniBand-only settings."""

    subnet_managers: list[SubnetManager] = Field(default_factory=list)
    routing_engine: Annotated[str, AfterValidator(routing_chain)] = Field(
        default="ftree",
        description="OpenSM's routing engine, or a chain tried in order (ftree,updn); "
        "one of " + ", ".join(OPENSM_ROUTING_ENGINES),
    )
    lmc: int = Field(strict=True, default=0, ge=0, le=7)
    sweep_interval: int = Field(
        strict=True, default=10, ge=0, description="OpenSM sweep interval, seconds"
    )
    partitions: list[Partition] = Field(default_factory=list)
    # -- routing checks, congestion control and adaptive routing (issue 26 items 4 and 5) --
    routing_imbalance: float = Field(
        default=1.5,
        ge=1.0,
        le=16.0,
        description="the routing check fails a switch port carrying more host-pair routes "
        "than this times the mean of the ports of its switch facing the same way",
    )
    congestion_control: CongestionControl = Field(default_factory=CongestionControl)
    adaptive_routing: bool = Field(
        default=False,
        description="adaptive routing: only an SM that has it (NVIDIA's SM in UFM or a "
        "managed switch); upstream OpenSM has none",
    )


class PfcWatchdog(Model):
    """PFC watchdog (pause-storm protection): a queue paused longer than ``detection_ms`` is
    taken out of PFC (``action``) until it has been quiet for ``restore_ms``. Defaults: SONiC's
    ``pfcwd`` (200 ms / 200 ms, drop)."""

    enabled: bool = True
    detection_ms: int = Field(
        strict=True, default=200, ge=1, le=5000, description="stall detection time, ms"
    )
    restore_ms: int = Field(
        strict=True, default=200, ge=1, le=60000, description="restoration time, ms"
    )
    action: Literal["drop", "forward", "alert"] = "drop"


class EcnQueue(Model):
    """ECN (WRED) marking of one lossless queue: no marking below ``min_bytes``, marking
    probability rising to ``probability_percent`` at ``max_bytes``. Defaults: NVIDIA's RoCE
    lossless mode (Cumulus ``nv set qos roce``, Onyx ``roce``: 150 KB / 1.5 MB)."""

    priority: int = Field(
        strict=True,
        description="the lossless priority this queue carries, 0-7",
        json_schema_extra=_range_schema(PFC_PRIORITY_RANGE),
    )
    min_bytes: int = Field(
        strict=True, default=150000, ge=1000, le=12480000, description="ECN min threshold"
    )
    max_bytes: int = Field(
        strict=True, default=1500000, ge=1000, le=12480000, description="ECN max threshold"
    )
    probability_percent: int = Field(
        strict=True, default=100, ge=1, le=100, description="at max_bytes, %"
    )


class DcqcnRp(Model):
    """DCQCN reaction point (the sender's rate limiter), ConnectX ``/sys/class/net/<if>/ecn/
    roce_rp/<name>`` and mlxconfig ``ROCE_CC_*``. Defaults: NVIDIA's DCQCN parameter table."""

    rpg_time_reset: int = Field(
        strict=True, default=300, ge=1, description="rate-increase timer, us"
    )
    rpg_byte_reset: int = Field(
        strict=True, default=32767, ge=1, description="rate-increase byte counter"
    )
    rpg_threshold: int = Field(
        strict=True, default=1, ge=1, le=31, description="fast-recovery stages"
    )
    rpg_ai_rate: int = Field(strict=True, default=5, ge=1, description="additive increase, Mb/s")
    rpg_hai_rate: int = Field(strict=True, default=50, ge=1, description="hyper increase, Mb/s")
    rpg_gd: int = Field(
        strict=True, default=11, ge=1, le=15, description="alpha to rate-decrease factor"
    )
    rpg_min_dec_fac: int = Field(
        strict=True, default=50, ge=1, le=100, description="largest decrease, %"
    )
    rpg_min_rate: int = Field(strict=True, default=1, ge=1, description="floor rate of a QP, Mb/s")
    rate_to_set_on_first_cnp: int = Field(
        strict=True, default=0, ge=0, description="Mb/s; 0: no change"
    )
    dce_tcp_g: int = Field(
        strict=True, default=1019, ge=0, le=1023, description="alpha update gain /1024"
    )
    dce_tcp_rtt: int = Field(
        strict=True, default=1, ge=1, le=131071, description="alpha update period, us"
    )
    initial_alpha_value: int = Field(strict=True, default=1023, ge=0, le=1023, description="/1024")
    rate_reduce_monitor_period: int = Field(
        strict=True, default=4, ge=1, description="between cuts, us"
    )


class DcqcnNp(Model):
    """DCQCN notification point (the receiver that sends CNPs), ``ecn/roce_np/<name>``."""

    min_time_between_cnps: int = Field(strict=True, default=4, ge=0, description="per QP, us")


class Dcqcn(Model):
    """DCQCN congestion control of the ConnectX hosts (on the lossless priority)."""

    rp: DcqcnRp = Field(default_factory=DcqcnRp)
    np: DcqcnNp = Field(default_factory=DcqcnNp)


class PortBuffer(Model):
    """Per-port buffer of the lossless priority: headroom absorbs what is in flight after a
    pause is sent (the cable's round trip plus a frame each way)."""

    cable_length_m: int = Field(
        strict=True, default=5, ge=1, le=10000, description="host-switch cable, m"
    )
    headroom_bytes: int | None = Field(
        strict=True,
        default=None,
        ge=1,
        description="lossless headroom; unset: the device computes it",
    )


class RoceSpec(Model):
    """RoCEv2 lossless-Ethernet settings. Defaults follow NVIDIA's published RoCE configuration
    (docs/roce.md names the sources): RDMA on DSCP 26 / priority 3 (lossless, ETS 50 %), CNPs on
    DSCP 48 / priority 6 (strict), ECN 150 KB-1.5 MB, DCQCN firmware defaults."""

    trust: Literal["dscp", "pcp"] = "dscp"
    rdma_dscp: int = Field(
        strict=True,
        default=26,
        description="DSCP of RDMA traffic, 0-63",
        json_schema_extra=_range_schema(DSCP_RANGE),
    )
    pfc_priority: int = Field(
        strict=True,
        default=3,
        description="lossless priority, 0-7",
        json_schema_extra=_range_schema(PFC_PRIORITY_RANGE),
    )
    ecn: bool = True
    cnp_dscp: int = Field(
        strict=True,
        default=48,
        description="DSCP of congestion notification packets, 0-63",
        json_schema_extra=_range_schema(DSCP_RANGE),
    )
    cnp_priority: int = Field(
        strict=True,
        default=6,
        description="priority / traffic class of CNPs (strict), 0-7",
        json_schema_extra=_range_schema(PFC_PRIORITY_RANGE),
    )
    roce_tos: int = Field(
        strict=True, default=106, ge=0, le=255, description="RoCE ToS for rdma_cm (DSCP<<2|ECN)"
    )
    lossless_priorities: list[int] | None = Field(
        default=None,
        description="lossless traffic classes (PFC on); only RDMA's pfc_priority belongs here "
        "(unset: [pfc_priority])",
    )
    rdma_bandwidth_percent: int = Field(
        strict=True,
        default=50,
        ge=1,
        le=99,
        description="ETS share of the RDMA class; the rest to class 0",
    )
    pfc_watchdog: PfcWatchdog = Field(default_factory=PfcWatchdog)
    ecn_queues: list[EcnQueue] | None = Field(
        default=None,
        description="ECN/WRED marking per lossless queue (unset: the defaults on pfc_priority)",
    )
    dcqcn: Dcqcn = Field(default_factory=Dcqcn)
    buffer: PortBuffer = Field(default_factory=PortBuffer)

    @property
    def lossless(self) -> list[int]:
        """The lossless priorities: as declared, else RDMA's ``pfc_priority`` alone."""
        return list(self.lossless_priorities or [self.pfc_priority])

    @property
    def ecn_marking(self) -> list[EcnQueue]:
        """ECN marking per lossless queue: as declared, else the defaults on ``pfc_priority``."""
        if self.ecn_queues is not None:
            return list(self.ecn_queues)
        return [EcnQueue(priority=self.pfc_priority)]


class SwitchPort(Model):
    """A switch port facing a host's fabric netdev (what the RoCE consistency checks pair)."""

    name: str = Field(min_length=1, description="switch port, e.g. swp1, Ethernet0, eth1")
    host: str | None = Field(default=None, description="the host on its other end")
    netdev: str | None = Field(default=None, description="that host's fabric netdev")


class Switch(Model):
    """A fabric or management switch; ``manage: true`` has switch_qos configure it."""

    name: str
    os: Literal["sonic", "cumulus", "linux", "unmanaged"] = Field(
        default="unmanaged",
        description="sonic (Dell Enterprise SONiC), cumulus (NVUE), linux (switchdev, "
        "iproute2) or unmanaged; NVIDIA Onyx is not supported",
    )
    address: str | None = None
    role: Literal["leaf", "spine", "management"] = "leaf"
    manage: bool = Field(default=False, description="apply the RoCE QoS with switch_qos")
    ssh_user: str = Field(default="admin", min_length=1, description="login of Ansible")
    ports: list[SwitchPort] = Field(default_factory=list, description="ports facing hosts")


class CableEnd(Model):
    """One end of a cable: a switch port, a host's HCA port, or a CA known only by its GUID
    (a node description never set, a SHARP aggregation node)."""

    switch: str | None = None
    host: str | None = None
    hca: str | None = Field(default=None, description="the host's RDMA device, e.g. mlx5_0")
    guid: str | None = Field(default=None, pattern=r"^0x[0-9a-f]{16}$")
    port: int = Field(strict=True, ge=0, le=255)

    @model_validator(mode="after")
    def _one_kind(self) -> CableEnd:
        kinds = [self.switch is not None, self.host is not None, self.guid is not None]
        if sum(kinds) != 1 or (self.host is None) != (self.hca is None):
            raise ValueError("name one of: switch, host with hca, or guid")
        return self


class Cable(Model):
    """A cable as discovered (``python -m fabric import`` writes them): its two ends, width
    and speed. When ``fabric.cabling`` is set it is the declared fabric, not the fat tree."""

    a: CableEnd
    b: CableEnd
    width: LinkWidth = "4x"
    speed: LinkSpeed = "NDR"


class FabricSpec(Model):
    """The RDMA fabric."""

    kind: FabricKind
    mtu: int = Field(strict=True, description="IB: 256-4096; Ethernet: 1500-9216")
    topology: FatTree | None = None
    infiniband: InfinibandSpec | None = None
    roce: RoceSpec | None = None
    switches: list[Switch] = Field(default_factory=list)
    cabling: list[Cable] = Field(
        default_factory=list,
        description="every cable, as imported from ibnetdiscover; set, it replaces the "
        "fat tree's layout in the declared fabric",
    )


class ManagementNetwork(Model):
    """The SSH / management network."""

    subnet: ipaddress.IPv4Network
    gateway: ipaddress.IPv4Address | None = None
    addresses: dict[str, ipaddress.IPv4Address] = Field(
        default_factory=dict, description="fixed node addresses (bare metal); others are assigned"
    )
    ssh_user: str = "root"


class Bastion(Model):
    """The SSH jump host every node is reached through (OpenSSH ``-W``, as ProxyJump does)."""

    host: str = Field(
        min_length=1,
        description="address or DNS name of the jump host, or a non-compute node of this spec "
        "(reached at its public address, the others through it)",
    )
    user: str = Field(default="root", min_length=1, description="login on the jump host")
    port: int = Field(strict=True, default=22, ge=1, le=65535)


class AccessSpec(Model):
    """How the controller reaches the nodes over SSH."""

    bastion: Bastion | None = Field(default=None, description="jump host; none: direct SSH")


class RedfishEndpoint(Model):
    """A node's BMC: the Redfish service root and the system to drive."""

    url: str = Field(description="https://BMC[:port] of the Redfish service")
    system_id: str | None = Field(default=None, description="Systems/<id>; the first one if unset")
    boot_once: str | None = Field(
        default=None,
        description="one-time boot device to set before powering on (Pxe, Hdd, ...); unset: "
        "none is set, the node boots as it is configured",
    )
    host_keys: list[str] = Field(
        default_factory=list,
        description="the node's SSH host keys (known_hosts key parts: 'ssh-ed25519 AAAA...'); "
        "unset: recorded at first contact",
    )
    replaced: str | None = Field(
        default=None,
        description="set or change it (e.g. the new serial or a date) when the hardware was "
        "replaced under the same name: its new host key is accepted once at the next pulumi up",
    )


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


#: The most names the partitions' host lists may hold together: each host in up to ten
#: partitions of a MAX_HOSTS-host spec (every list is expanded and checked against the hosts;
#: one host list aliased a thousand times was 100M names: issue 44).
MAX_PARTITION_NAMES = 10 * MAX_HOSTS


def _counted(partitions: list[SlurmPartition]) -> int:
    total = 0
    for part in partitions:
        try:
            total += 0 if part.nodes == "ALL" else count_hosts(part.nodes)
        except HostlistError:
            continue  # the partition's own rule names it
    return total


class SlurmSpec(Model):
    """Slurm settings."""

    cluster_name: str | None = None
    controller: str | None = Field(default=None, description="host running slurmctld")
    partitions: list[SlurmPartition] = Field(default_factory=list)

    @field_validator("partitions")
    @classmethod
    def _names_in_all(cls, partitions: list[SlurmPartition]) -> list[SlurmPartition]:
        """At most MAX_PARTITION_NAMES names over every partition, counted unexpanded."""
        if (total := _counted(partitions)) > MAX_PARTITION_NAMES:
            raise PydanticCustomError(
                "hosts_in_all",
                "the partitions name {total} hosts in all; at most {most} are allowed (each "
                "host in up to ten partitions): use ALL, or fewer and shorter host lists",
                {"total": total, "most": MAX_PARTITION_NAMES},
            )
        return partitions

    topology_plugin: Literal["tree", "block", "yaml"] = Field(
        default="tree",
        description="tree, block (topology.conf; block needs Slurm 23.11+) or yaml "
        "(topology.yaml with a tree and a block topology; Slurm 25.05+)",
    )
    block_size: int | None = Field(
        strict=True, default=None, ge=1, description="nodes per block (block and yaml)"
    )
    munge_key: SecretRef | None = Field(
        default=None,
        description="Pulumi config secret holding the munge key (>= 32 bytes); unset: the stack generates one",
    )
    nccl_container: str | None = Field(
        default=None,
        pattern=r"^\S+$",
        description="image the NCCL checks run in through pyxis/enroot (srun --container-image)",
    )


class IpamSpec(Model):
    """Addresses for a secondary network's pod interfaces (a CNI IPAM plugin)."""

    type: Literal["nv-ipam", "whereabouts", "host-local"] = Field(
        default="nv-ipam",
        description="nv-ipam (the Network Operator's), whereabouts (cluster-wide) or "
        "host-local (per node: only with one node per range)",
    )
    range: ipaddress.IPv4Network = Field(description="the pods' addresses, e.g. 198.18.64.0/20")
    gateway: ipaddress.IPv4Address | None = None
    exclude: list[ipaddress.IPv4Network] = Field(
        default_factory=list, description="addresses in the range never handed out"
    )


class SecondaryNetwork(Model):
    """A network pods attach to beside the cluster's own (Multus), on the fabric's netdevs."""

    name: str = Field(description="the network attachment's name (a DNS-1123 label)")
    kind: Literal["ipoib", "macvlan", "host-device"] = Field(
        description="ipoib (IPoIB child of an InfiniBand netdev), macvlan (over a RoCE "
        "netdev) or host-device (a whole SR-IOV VF moved into the pod)"
    )
    master: str | None = Field(
        default=None,
        description="ipoib/macvlan: the host netdev the pods' interfaces hang off, e.g. ib0",
    )
    ipam: IpamSpec


class NetworkOperatorSpec(Model):
    """The NVIDIA Network Operator's NicClusterPolicy: what makes the HCAs usable by pods."""

    namespace: str = Field(default="nvidia-network-operator", description="the operator's")
    repository: str | None = Field(
        default=None,
        description="where the operator's component images come from: NVIDIA's mellanox "
        "image repository or your mirror of it (REGISTRY/PATH)",
    )
    version: str = Field(
        default="network-operator-v26.4.1",
        description="the components' image tag (the Network Operator release's)",
    )
    driver_version: str | None = Field(
        default=None,
        description="driver container: the DOCA driver image's tag, e.g. doca3.4.1-26.04-1.1.0.0-1",
    )
    driver: Literal["host", "container"] = Field(
        default="host",
        description="host: the nodes' own RDMA stack (rdma_stack); container: the operator's "
        "DOCA-OFED driver container",
    )
    device_plugin: Literal["rdma-shared", "sriov"] = Field(
        default="rdma-shared",
        description="rdma-shared (pods share each HCA) or sriov (a VF per pod)",
    )
    resource_name: str = Field(
        default="rdma_shared_device_a",
        description="the extended resource pods request: rdma/<name> (rdma-shared) or "
        "nvidia.com/<name> (sriov)",
    )
    hca_max: int = Field(
        strict=True,
        default=63,
        ge=1,
        le=1000,
        description="rdma-shared: pods that may share one HCA",
    )
    secondary_networks: list[SecondaryNetwork] = Field(default_factory=list)


class KubernetesLabels(Model):
    """The topology labels railyard writes on each Node and the Kueue Topology naming them."""

    scheme: Literal["topograph", "topograph-v0"] = Field(
        default="topograph",
        description="topograph: fabric.topograph.run/tier-N (tier 0 the leaf; topograph 1.0+); "
        "topograph-v0: network.topology.nvidia.com/leaf, spine, core (before 1.0)",
    )
    kueue_topology: str | None = Field(
        default=None,
        description="the Kueue Topology's name (default: the cluster's name)",
    )


class KubernetesSpec(Model):
    """The Kubernetes cluster railyard configures (``orchestrator: kubernetes`` or ``both``):
    its API server, the Network Operator's policy and the topology labels."""

    api_server: str = Field(description="the API server's URL, https://HOST[:PORT]")
    token: SecretRef | None = Field(
        default=None, description="Pulumi config secret holding a bearer token"
    )
    client_certificate: SecretRef | None = Field(
        default=None, description="Pulumi config secret holding a client certificate (PEM)"
    )
    client_key: SecretRef | None = Field(
        default=None, description="Pulumi config secret holding the client certificate's key"
    )
    ca_certificate: SecretRef | None = Field(
        default=None,
        description="Pulumi config secret holding the API server's CA (PEM); unset: the "
        "system's CAs",
    )
    network_operator: NetworkOperatorSpec = Field(default_factory=NetworkOperatorSpec)
    labels: KubernetesLabels = Field(default_factory=KubernetesLabels)


class LabSpec(Model):
    """Settings for the one-machine lab (target ``lab``)."""

    image: str = Field(default="localhost/railyard-node", description="node image name")
    bmc_port: int = Field(
        strict=True, default=8000, ge=1024, le=65535, description="Redfish emulator port"
    )
    ibsim_port: int = Field(
        strict=True,
        default=7070,
        ge=1024,
        le=65524,
        description="ibsim remote port; ibsim binds it and the 10 above it (one per client slot)",
    )
    roce_subnet: ipaddress.IPv4Network | None = Field(
        default=None,
        description="the RoCE/Ethernet fabric network of a roce lab (default 198.18.2.0/24)",
    )
    datacenter_stack: str | None = Field(
        default=None,
        description="target baremetal over a lab datacenter, or existing over a lab's nodes: "
        "the lab stack's name (the checks use its ibsim console)",
    )
    datacenter: bool = Field(
        default=False,
        description="target lab: provide only the datacenter (nodes powered off, their Redfish "
        "BMCs, ibsim, the networks), no hand-off or checks; a target baremetal stack over it "
        "with this lab block marks its nodes as the lab's simulated hardware",
    )
    hca_guids: dict[str, Annotated[str, Field(pattern=r"^0x[0-9a-f]{16}$")]] = Field(
        default_factory=dict,
        description="target lab: node -> the node GUID its simulated HCA reports (default: "
        "from the topology); a new value is a replaced HCA (ibsim restarts with it)",
    )


class ExistingSpec(Model):
    """A cluster that already runs (target ``existing``): how to reach each node over SSH.
    Nothing is provisioned; each node's host key is pinned (``known_hosts`` lines or their
    SSH CA, else at first contact) and checked at every ``pulumi up``. With a ``lab`` block
    (``datacenter_stack``) the nodes are a railyard lab's (simulated hardware)."""

    ssh: dict[str, str] = Field(
        description="node -> [user@]address[:port] (user: management.ssh_user, port: 22)"
    )
    known_hosts: list[str] = Field(
        default_factory=list,
        description="known_hosts lines for the nodes ('ADDRESS ssh-ed25519 AAAA...', as "
        "ssh-keyscan prints them, or '@cert-authority PATTERN KEY' for an SSH CA); a node none "
        "names is pinned at first contact",
    )


class RdmaStack(Model):
    """Where the RDMA stack (userspace and drivers) comes from, and which release.

    ``distro``: the distribution's rdma-core, pinned to ``version`` when given (the package
    version, e.g. ``44.0-2``; a new value up- or downgrades it). ``doca`` / ``mlnx_ofed``:
    NVIDIA's stack from your mirror (``repo_url``) or an ISO image (``iso_url`` with
    ``checksum``), packages signed by the key at ``gpg_key_url`` (``gpg_key_checksum``).
    """

    source: Literal["distro", "doca", "mlnx_ofed"] = "distro"
    version: str | None = Field(
        default=None,
        pattern=r"^[0-9][0-9A-Za-z.+~:-]*$",
        description="the release: a package version (distro) or e.g. 24.10-1.1.4.0 (doca)",
    )
    repo_url: str | None = Field(default=None, pattern=r"^(https?|file)://\S+$")
    iso_url: str | None = Field(default=None, pattern=r"^(https?|file)://\S+$")
    checksum: str | None = Field(
        default=None, pattern=r"^sha256:[0-9a-fA-F]{64}$", description="sha256:<hex> of the ISO"
    )
    gpg_key_url: str | None = Field(default=None, pattern=r"^(https?|file)://\S+$")
    gpg_key_checksum: str | None = Field(default=None, pattern=r"^sha256:[0-9a-fA-F]{64}$")


class CounterThresholds(Model):
    """Port error counter thresholds: the increase allowed per minute; unset keeps the
    default per link rate (``fabric/verify/counters.py`` gives each default and its source)."""

    symbol_errors: int | None = Field(strict=True, default=None, ge=0)
    link_error_recovery: int | None = Field(strict=True, default=None, ge=0)
    link_downed: int | None = Field(strict=True, default=None, ge=0)
    port_rcv_errors: int | None = Field(strict=True, default=None, ge=0)
    port_rcv_remote_physical_errors: int | None = Field(strict=True, default=None, ge=0)
    local_link_integrity_errors: int | None = Field(strict=True, default=None, ge=0)
    excessive_buffer_overrun_errors: int | None = Field(strict=True, default=None, ge=0)
    port_xmit_discards: int | None = Field(strict=True, default=None, ge=0)
    port_xmit_wait: int | None = Field(
        strict=True, default=None, ge=0, description="congestion: reported only unless set"
    )


class HealthSpec(Model):
    """Fabric health that stays on: the counter check's window and thresholds, and the Slurm
    HealthCheckProgram railyard installs on every compute node (roles/node_health)."""

    interval: int = Field(
        strict=True,
        default=60,
        ge=0,
        le=86400,
        description="Slurm HealthCheckInterval, seconds (0: off)",
    )
    node_state: list[Literal["ALLOC", "ANY", "CYCLE", "IDLE", "MIXED", "NONDRAINED_IDLE"]] = Field(
        default_factory=lambda: ["ANY"],
        min_length=1,
        description="Slurm HealthCheckNodeState flags, e.g. [ANY] or [IDLE, CYCLE]",
    )
    sample_seconds: float = Field(
        default=5.0, gt=0, le=300, description="gap between the counter check's two readings"
    )
    counters: CounterThresholds = Field(default_factory=CounterThresholds)


class ClusterSpecBase(Model):
    """A whole cluster: nodes, fabric, networks, Slurm, and the target they land on; each
    target's own section (``aws:``, ``gcp:``) is a field :data:`ClusterSpec` adds from the
    target's ``section.py``."""

    name: Annotated[str, Field(pattern=r"^[a-z][a-z0-9-]{0,39}$", description="cluster name")]
    target: Target
    nodes: list[NodeGroup] = Field(min_length=1)
    fabric: FabricSpec
    management: ManagementNetwork
    bmc: BmcNetwork | None = None
    access: AccessSpec = Field(default_factory=AccessSpec)
    orchestrator: Orchestrator = Field(
        default="slurm",
        description="what runs the jobs: slurm, kubernetes (the NVIDIA Network Operator, "
        "topology labels) or both",
    )
    slurm: SlurmSpec = Field(default_factory=SlurmSpec)
    kubernetes: KubernetesSpec | None = None
    rdma_stack: RdmaStack = Field(default_factory=RdmaStack)
    health: HealthSpec = Field(default_factory=HealthSpec)
    storage: StorageSpec | None = Field(
        default=None, description="shared file systems and local NVMe scratch"
    )
    lab: LabSpec | None = None
    existing: ExistingSpec | None = None

    @field_validator("nodes")
    @classmethod
    def _hosts_in_all(cls, nodes: list[NodeGroup]) -> list[NodeGroup]:
        """At most MAX_HOSTS hosts over every node group together, counted before any list
        is expanded (issue 44: 30 groups of 99,999 hosts each were expanded, 3M names)."""
        total = 0
        for group in nodes:
            try:
                total += count_hosts(group.names)
            except HostlistError:
                continue  # the group's own rule names it
        if total > MAX_HOSTS:
            raise PydanticCustomError(
                "hosts_in_all",  # its message says it all: fabric.spec.load shows no value
                "the node groups declare {total} hosts in all; at most {most} are allowed in "
                "one spec: split the cluster into several stacks",
                {"total": total, "most": MAX_HOSTS},
            )
        return nodes

    @cached_property
    def hosts(self) -> dict[str, NodeGroup]:
        """Every host name mapped to its node group, in declaration order."""
        return {host: group for group in self.nodes for host in group.hosts}

    @property
    def simulated(self) -> bool:
        """True when the nodes are the lab's containers on ibsim: target lab, or a bare-metal
        stack over a lab datacenter or an existing stack adopting lab nodes (a ``lab`` block)."""
        line = line_of(self.target)
        return line.one_machine or (line.lab_block and self.lab is not None)

    @property
    def section(self) -> Model | None:
        """The spec's block named as its target (``aws:`` for target aws), if it has one."""
        return getattr(self, self.target, None) if self.target in TARGETS else None

    def hosts_with_role(self, role: NodeRole) -> list[str]:
        """Host names of every node with ``role``."""
        return [host for host, group in self.hosts.items() if group.role == role]

    @model_validator(mode="after")
    def _check_cross_field_rules(self, info: ValidationInfo) -> ClusterSpecBase:
        """Check every rule spanning several fields; report all broken ones at once."""
        context: Any = info.context
        if isinstance(context, dict) and context.get(SKIP_RULES):
            return self
        from fabric.spec.rules import cross_field_problems  # the rules import these models

        problems = cross_field_problems(self)
        if problems:
            raise SpecError(problems)
        return self


def _with_sections() -> type[ClusterSpecBase]:
    """ClusterSpec: the shared fields, then one optional field per target section, named as
    the target (``MODEL`` of ``fabric/targets/<name>/section.py``)."""
    fields: dict[str, Any] = {
        name: (model | None, Field(default=None, description=model.__doc__))
        for name, model in hooks("section", "MODEL")
    }
    return create_model(  # type: ignore[call-overload,no-any-return]
        "ClusterSpec", __base__=ClusterSpecBase, __module__=__name__, **fields
    )


#: The whole spec model: :class:`ClusterSpecBase` plus every target's section.
ClusterSpec = _with_sections()
