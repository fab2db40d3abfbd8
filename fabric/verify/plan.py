"""What to check, derived from the spec and the inventory alone (no SSH).

Each check family gets its parameters here (HCA ports, netdevs, subnet managers, host
pairs, declared links, Slurm switches; a target's own families, e.g. the EFA devices or A3 GPU
NICs its instance catalog says each instance must show, come from its ``checks`` part
``fabric/targets/<name>/checks.py``, found through the registry ``fabric.targets``), or a
reason why it is not generated for this spec/target; the check suite parametrises over these
and reports the reasons, and ``describe`` lists them (``python -m fabric check --plan``).
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

from pydantic import BaseModel, ConfigDict

from fabric.graph import FabricGraph
from fabric.model.cluster import ClusterModel
from fabric.model.gpus import (
    GpuRail,
    NcclRun,
    RailPair,
    gpu_hosts,
    gpu_rails,
    nccl_runs,
    rail_pairs,
)
from fabric.model.pairs import ring_pairs
from fabric.model.ports import (
    HcaPort,
    ca_links,
    expected_ib_mtu,
    hca_ports,
)
from fabric.spec import ClusterSpec
from fabric.spec.sm import expected_master
from fabric.targets import parts


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True)


class SubnetManagerExpect(_Model):
    """A declared subnet manager, in any mode (``fabric.spec.models.SubnetManager``): how it
    is recognised (a managed host's port, an external port's node description or GUID, a
    switch's name), its priority and whether it is the expected master."""

    mode: str = "managed"
    host: str | None = None
    switch: str | None = None
    node_description: str | None = None
    guid: str | None = None
    priority: int
    master: bool = False

    @property
    def id(self) -> str:
        """Test id and report subject: the host, ``switch:<name>`` or ``external:<what>``."""
        if self.mode == "managed":
            return self.host or "managed:?"
        if self.mode == "switch":
            return f"switch:{self.switch}"
        return f"external:{self.node_description or self.guid}"

    @property
    def role(self) -> str:
        """MASTER or STANDBY, as sminfo names the state it should answer with."""
        return "MASTER" if self.master else "STANDBY"


class Pair(_Model):
    """A sampled (source, target) host pair."""

    source: str
    target: str

    @property
    def id(self) -> str:
        """Test id: ``gpu01->gpu05``."""
        return f"{self.source}->{self.target}"


class SwitchHop(_Model):
    """One host-switch hop of a RoCE fabric: the host's fabric netdev and the switch port
    facing it (``fabric.switches[].ports``). A host->switch->host path is two hops."""

    host: str
    netdev: str
    switch: str
    port: str

    @property
    def id(self) -> str:
        """Test id: ``gpu01/eth1-leaf1/swp1``."""
        return f"{self.host}/{self.netdev}-{self.switch}/{self.port}"

    @property
    def where(self) -> str:
        """How messages name the hop."""
        return f"switch {self.switch} port {self.port} <-> host {self.host} {self.netdev}"


class DeclaredLink(_Model):
    """A declared cable, named by both ends."""

    a_name: str
    a_port: int
    b_name: str
    b_port: int
    width: str
    speed: str
    rate_gbps: float

    @property
    def id(self) -> str:
        """Test id: ``leaf01/1-gpu01/mlx5_0/1``."""
        return f"{self.a_name}/{self.a_port}-{self.b_name}/{self.b_port}"


class SweptCable(_Model):
    """A declared InfiniBand cable the fabric sweep judges (``fabric.verify.sweep_judge``):
    ``link`` names both ends (the discovery check's parameter), ``port`` the HCA port (or
    ``link`` between switches: the state and counter checks' parameter), ``host`` its host."""

    link: str
    port: str
    host: str | None = None

    @property
    def id(self) -> str:
        """Test id: the link, both ends."""
        return self.link


class ProviderTopology(_Model):
    """A cloud's placement of the Slurm compute nodes, read when the check runs
    (``fabric.verify.cloud_topology``) and compared with the topology Slurm loaded."""

    provider: str  # aws | gcp
    controller: str
    nodes: list[str]
    region: str

    @property
    def id(self) -> str:
        """Test id: the provider."""
        return self.provider


class CheckPlan(_Model):
    """Parameters of every check family for one spec and host selection."""

    spec: ClusterSpec
    hosts: list[str]
    groups: dict[str, list[str]] = {}

    @property
    def simulated(self) -> bool:
        """True in the lab: ibsim, not real HCAs, answers the MADs."""
        return self.spec.simulated

    @cached_property
    def model(self) -> ClusterModel:
        """The cluster model of the spec: the facts every step shares, computed once."""
        return ClusterModel(self.spec)

    @property
    def declared_graph(self) -> FabricGraph | None:
        """The declared fabric, or None when the spec has no topology (clouds)."""
        return self.model.declared_graph

    @property
    def expected_graph(self) -> FabricGraph | None:
        """The declared fabric as the target will report it (ibsim speeds in the lab)."""
        return self.model.expected_graph

    @cached_property
    def fabric_hosts(self) -> list[str]:
        """Selected hosts with HCAs, in declaration order."""
        return [h for h, g in self.spec.hosts.items() if g.hcas and h in self.hosts]

    @cached_property
    def hca_ports(self) -> list[HcaPort]:
        """Every declared HCA port of the selected hosts (rate/width as the target reports them)."""
        return hca_ports(self.spec, self.hosts, self.expected_graph)

    @cached_property
    def rdma_ports(self) -> list[HcaPort]:
        """HCA ports with an RDMA device to read (``ibstat``): in the lab, RoCE HCAs are veth
        netdevs with none, so only their netdev, path-MTU and switch checks run."""
        if not self.simulated:
            return self.hca_ports
        return [p for p in self.hca_ports if p.link_layer != "Ethernet"]

    @cached_property
    def host_ports(self) -> list[HcaPort]:
        """RDMA ports judged on their host (``ibstat`` over SSH): those the fabric sweep does
        not judge (RoCE ports; InfiniBand ports without a declared cable or a sweep)."""
        swept = {c.port for c in self.swept_cables}
        return [p for p in self.rdma_ports if p.id not in swept]

    @cached_property
    def ib_ports(self) -> list[HcaPort]:
        """HCA ports whose link layer is InfiniBand."""
        return [p for p in self.hca_ports if p.link_layer == "InfiniBand"]

    @cached_property
    def host_ib_ports(self) -> list[HcaPort]:
        """InfiniBand ports whose width and far end are read on their host (``iblinkinfo``
        over SSH): those the fabric sweep does not judge."""
        swept = {c.port for c in self.swept_cables}
        return [p for p in self.ib_ports if p.id not in swept]

    @cached_property
    def counter_ports(self) -> list[HcaPort]:
        """InfiniBand HCA ports with a declared cable: their error counters and the switch
        port's at the other end are judged (``fabric.verify.counters``)."""
        return [p for p in self.ib_ports if p.switch is not None]

    @cached_property
    def netdevs(self) -> list[tuple[str, str]]:
        """(host, netdev) of every HCA with a declared netdev (RoCE, IPoIB)."""
        seen: list[tuple[str, str]] = []
        for p in self.hca_ports:
            if p.netdev and (p.host, p.netdev) not in seen:
                seen.append((p.host, p.netdev))
        return seen

    @property
    def ib_mtu(self) -> int:
        """The active IB MTU every IB port must show."""
        return expected_ib_mtu(self.spec.fabric.mtu, self.simulated)

    @cached_property
    def declared_sms(self) -> list[SubnetManagerExpect]:
        """Every declared subnet manager, in any mode, selected or not: what the fabric-wide
        SM checks compare the SMs found against."""
        ib = self.spec.fabric.infiniband
        if self.spec.fabric.kind != "infiniband" or ib is None:
            return []
        sms = ib.subnet_managers
        master = expected_master(sms)
        return [
            SubnetManagerExpect(
                mode=s.mode,
                host=s.host,
                switch=s.switch,
                node_description=s.node_description,
                guid=s.guid,
                priority=s.priority,
                master=i == master,
            )
            for i, s in enumerate(sms)
        ]

    @cached_property
    def subnet_managers(self) -> list[SubnetManagerExpect]:
        """The declared subnet managers each checked on its own: external and switch SMs,
        and managed ones on selected hosts."""
        return [s for s in self.declared_sms if s.mode != "managed" or s.host in self.hosts]

    @cached_property
    def sm_hosts(self) -> set[str]:
        """Hosts railyard runs an OpenSM on (managed SMs)."""
        return {s.host for s in self.declared_sms if s.mode == "managed" and s.host}

    @cached_property
    def sm_free_hosts(self) -> list[str]:
        """Selected fabric hosts railyard runs no OpenSM on: none may run one."""
        return [h for h in self.fabric_hosts if h not in self.sm_hosts]

    @cached_property
    def ib_pairs(self) -> list[Pair]:
        """MAD reachability pairs; in the lab an SM host cannot serve ``ibping -S`` (see checks)."""
        hosts = [p.host for p in self.ib_ports]
        hosts = list(dict.fromkeys(hosts))
        responders = [h for h in hosts if h not in self.sm_hosts] if self.simulated else None
        return [Pair(source=s, target=t) for s, t in ring_pairs(hosts, responders)]

    @cached_property
    def netdev_pairs(self) -> list[Pair]:
        """Path-MTU pairs between hosts with a fabric netdev."""
        hosts = list(dict.fromkeys(h for h, _ in self.netdevs))
        return [Pair(source=s, target=t) for s, t in ring_pairs(hosts)]

    @cached_property
    def roce_hops(self) -> list[SwitchHop]:
        """Every declared host-switch hop of a RoCE fabric whose switch railyard manages as a
        Linux switch (it reads that switch's live QoS back) and whose host is selected."""
        if self.spec.fabric.kind != "roce":
            return []
        netdevs = dict(self.netdevs)
        return [
            SwitchHop(
                host=port.host,
                netdev=port.netdev or netdevs[port.host],
                switch=switch.name,
                port=port.name,
            )
            for switch in self.spec.fabric.switches
            if switch.manage and switch.os == "linux"
            for port in switch.ports
            if port.host in self.hosts and (port.netdev or port.host in netdevs)
        ]

    @cached_property
    def declared_links(self) -> list[DeclaredLink]:
        """Every declared cable (as the target reports it), for the discovered-vs-declared diff."""
        graph = self.expected_graph
        if graph is None:
            return []
        return [
            DeclaredLink(
                a_name=graph.node_name(link.a.guid),
                a_port=link.a.port,
                b_name=graph.node_name(link.b.guid),
                b_port=link.b.port,
                width=link.width,
                speed=link.speed,
                rate_gbps=link.rate_gbps,
            )
            for link in graph.links
        ]

    @cached_property
    def slurm_nodes(self) -> list[str]:
        """Nodes Slurm must report idle or allocated (members of a Slurm partition)."""
        from fabric.hostlist import expand

        names: list[str] = []
        for part in self.spec.slurm.partitions:
            members = list(self.spec.hosts) if part.nodes == "ALL" else expand(part.nodes)
            names += [n for n in members if n in self.hosts and n not in names]
        return names

    @cached_property
    def slurm_controller(self) -> str | None:
        """The host running slurmctld, if selected."""
        ctl = self.spec.slurm.controller or next(
            iter(self.spec.hosts_with_role("controller")), None
        )
        return ctl if ctl in self.hosts else None

    @cached_property
    def slurm_switches(self) -> dict[str, tuple[list[str], list[str]]]:
        """Switch name -> (nodes below it, child switches) ``scontrol show topology`` must show:
        the tree ``fabric.topology.slurm`` writes for the declared fabric and Slurm's nodes (the
        compute hosts, as the hand-off writes topology.conf, whether or not a partition lists
        them yet). The hand-off writes it from the discovered fabric, so a difference is a
        fabric that is not as declared, or a topology.conf that Slurm did not load."""
        graph = self.declared_graph
        if graph is None:
            return {}
        from fabric.topology.render import slurm_switch_view

        return slurm_switch_view(graph, self.spec.hosts_with_role("compute"))

    @cached_property
    def provider_topology(self) -> list[ProviderTopology]:
        """On AWS and GCP, with the controller and every compute node selected: the provider's
        placement of the compute nodes (DescribeInstanceTopology, GCE physical host topology)
        against ``scontrol show topology`` (``test_provider_topology``)."""
        spec = self.spec
        cloud = spec.aws if spec.target == "aws" else spec.gcp if spec.target == "gcp" else None
        nodes = spec.hosts_with_role("compute")
        if cloud is None or self.slurm_controller is None or not nodes:
            return []
        if any(n not in self.hosts for n in nodes):
            return []
        return [
            ProviderTopology(
                provider=spec.target,
                controller=self.slurm_controller,
                nodes=nodes,
                region=cloud.region,
            )
        ]

    def params(self, source: str) -> list[Any]:
        """The parameters of a source: the plan's own (``ib_pairs``), or a target's
        (``PARAMETERS`` of ``fabric/targets/<name>/checks.py``, e.g. ``efa_hosts``), computed
        once."""
        if source in self.target_parameters:
            return self.target_parameters[source]
        return list(getattr(self, source))

    @cached_property
    def target_parameters(self) -> dict[str, list[Any]]:
        return {
            source: compute(self.spec, self.hosts)
            for _, checks in parts("checks")
            for source, compute in checks.PARAMETERS.items()
        }

    def family_params(self, family: str) -> list[Any]:
        """The parameters a family runs over: its source's, or the part a target's ``SELECT``
        keeps (``efa_gpudirect``: the EFA hosts with GPUDirect RDMA)."""
        source = FAMILIES[family][1]
        keep = next((c.SELECT[family] for _, c in parts("checks") if family in c.SELECT), None)
        values = self.params(source)
        return [v for v in values if keep(v)] if keep else values

    @cached_property
    def gpu_hosts(self) -> list[str]:
        """Selected hosts with GPUs (declared, or from the instance catalog)."""
        return gpu_hosts(self.spec, self.hosts)

    @cached_property
    def gpu_rails(self) -> list[GpuRail]:
        """Every HCA of every selected GPU node and the GPU it serves (``gpu_nic_affinity``)."""
        return gpu_rails(self.spec, self.hosts)

    @cached_property
    def gpudirect_pairs(self) -> list[RailPair]:
        """Per rail, pairs of GPU nodes for ``ib_write_bw --use_cuda`` (``gpudirect``)."""
        return rail_pairs(self.gpu_rails)

    @cached_property
    def nccl_runs(self) -> list[NcclRun]:
        """nccl-tests all-reduce runs: each GPU node, each leaf group and across the spines
        (multi-node runs through Slurm: only with a Slurm controller selected)."""
        leaf_of = {(h, d): sw for (h, d, _), (_, _, sw, _) in ca_links(self.expected_graph).items()}
        return nccl_runs(self.spec, self.hosts, leaf_of, self.slurm_controller is not None)

    @cached_property
    def observer(self) -> str | None:
        """The fabric host fabric-wide MAD checks run from (an SM host first: it has the SM)."""
        for host in sorted(self.sm_hosts) + self.fabric_hosts:
            if host in self.hosts and self.spec.hosts.get(host) and self.spec.hosts[host].hcas:
                return host
        return None

    @cached_property
    def sweep_hosts(self) -> list[str]:
        """Where the fabric sweep (``fabric.verify.sweep``) runs from: the observer of an
        InfiniBand fabric with a declared graph (one vantage point judges every cable)."""
        if self.spec.fabric.kind != "infiniband" or self.expected_graph is None:
            return []
        return [self.observer] if self.observer else []

    @cached_property
    def routing_hosts(self) -> list[str]:
        """Where the ``routing`` family reads every switch's forwarding table and the fabric
        from: the discovery host (an SM host), else the observer, of an InfiniBand fabric with
        a declared fat tree."""
        if self.spec.fabric.kind != "infiniband" or self.expected_graph is None:
            return []
        host = self.discovery_host or self.observer
        return [host] if host else []

    @cached_property
    def sm_log_hosts(self) -> list[str]:
        """Hosts whose OpenSM log says which routing engine is in use: the declared subnet
        managers railyard runs (the MASTER's is read); empty where railyard runs no SM, and
        the engine is then judged from the forwarding tables alone."""
        ib = self.spec.fabric.infiniband
        if ib is None:
            return []
        return [
            s.host
            for s in ib.subnet_managers
            if s.host in self.hosts and getattr(s, "mode", "managed") == "managed"
        ]

    @cached_property
    def cc_hosts(self) -> list[str]:
        """Where ``ibccquery`` reads every switch's and HCA's congestion-control settings
        from: the routing host, when the spec enables congestion control."""
        ib = self.spec.fabric.infiniband
        if ib is None or not ib.congestion_control.enabled:
            return []
        return self.routing_hosts

    @cached_property
    def swept_cables(self) -> list[SweptCable]:
        """Every declared cable the sweep judges: those of the selected hosts' HCAs and every
        switch-to-switch cable (one sweep judges the whole fabric)."""
        if not self.sweep_hosts or self.expected_graph is None:
            return []
        from fabric.verify.sweep_judge import cable_ids

        return [
            SweptCable(link=c.link, port=c.port, host=c.host)
            for c in cable_ids(self.expected_graph)
            if c.host is None or c.host in self.hosts
        ]

    @cached_property
    def discovery_host(self) -> str | None:
        """The host ibnetdiscover runs on: the first selected managed SM host; with no
        managed SM (the SMs are external or a switch's), the observer."""
        if not self.sm_hosts:
            return self.observer
        return next(
            (s.host for s in self.declared_sms if s.mode == "managed" and s.host in self.hosts),
            None,
        )

    @cached_property
    def phy_hosts(self) -> list[str]:
        """Where ``ibdiagnet --get_phy_info`` scans the fabric from: the discovery host."""
        return [self.discovery_host] if self.discovery_host else []

    def not_generated(self) -> dict[str, str]:
        """Check family -> why it is not generated for this spec, target and selection."""
        spec, out = self.spec, {}
        kind = spec.fabric.kind
        swept = f"the fabric sweep from {self.observer} judges every declared cable (sweep)"
        if not self.rdma_ports:
            out["ports"] = (
                "target lab: RoCE HCAs are veth netdevs without an RDMA device for ibstat; "
                "netdev_mtu, path_mtu and roce_consistency cover them"
                if self.hca_ports
                else "no HCA port declared on the selected hosts"
            )
        elif not self.host_ports:
            out["ports"] = swept
        if not self.ib_ports:
            out["ib"] = "no InfiniBand HCA port declared on the selected hosts"
        if not self.ib_ports:
            out["ib_links"] = out["ib"]
        elif not self.host_ib_ports:
            out["ib_links"] = swept
        if not self.netdevs:
            out["netdev_mtu"] = (
                "no HCA declares a netdev (RoCE/IPoIB interface) on the selected hosts"
            )
        if not self.netdev_pairs:
            out["path_mtu"] = "fewer than two selected hosts with a fabric netdev"
        if not self.subnet_managers or self.observer is None:
            out["sm"] = (
                "no subnet manager declared (or none on the selected hosts)"
                if not self.subnet_managers
                else "no fabric host selected to query the subnet managers from"
            )
        if self.simulated:
            out["phy"] = (
                "target lab: ibsim models no PHY registers or BER, so ibdiagnet --get_phy_info "
                "has nothing to read"
            )
        elif not self.phy_hosts:
            out["phy"] = "no subnet manager host selected to run ibdiagnet from"
        if not self.ib_pairs:
            out["ib_pairs"] = "fewer than two selected InfiniBand hosts able to answer ibping"
        if self.simulated:
            out["verbs"] = (
                "target lab: verbs are not simulated (no RDMA kernel), so ibv_rc_pingpong/ib_write_bw cannot run"
            )
        elif kind not in ("infiniband", "roce"):
            out["verbs"] = f"fabric.kind is {kind}: verbs pair tests cover infiniband and roce"
        for _, checks in parts("checks"):
            out |= checks.not_generated(self.spec, self.params)
        if kind != "roce":
            out["roce_qos"] = (
                f"fabric.kind is {kind}: RoCE QoS (mlnx_qos) applies to roce with a ConnectX"
            )
        out |= self._roce_not_generated()
        out |= self._gpu_not_generated()
        if not self.slurm_nodes or self.slurm_controller is None:
            out["slurm"] = "no Slurm partition nodes or controller among the selected hosts"
        if not self.slurm_switches or self.slurm_controller is None:
            out["slurm_topology"] = (
                "no declared fat tree or no Slurm controller selected"
                if spec.target not in ("aws", "gcp")
                else f"target {spec.target}: no declared fabric; slurm_provider_topology "
                "compares Slurm's topology with the provider's placement"
            )
        if not self.provider_topology:
            out["slurm_provider_topology"] = (
                f"target {spec.target}: the provider's placement is read on aws and gcp"
                if spec.target not in ("aws", "gcp")
                else "needs the Slurm controller and every compute node selected"
            )
        if kind != "infiniband":
            out["sweep"] = f"fabric.kind is {kind}: the MAD sweep judges InfiniBand cables"
        elif self.expected_graph is None:
            out["sweep"] = "no declared fat tree or cabling to judge the cables against"
        elif not self.sweep_hosts:
            out["sweep"] = "no selected host with an HCA to sweep the fabric from"
        out |= self._routing_not_generated()
        return out

    def _routing_not_generated(self) -> dict[str, str]:
        """Why the ``routing`` and ``congestion_control`` families are not generated."""
        kind, out = self.spec.fabric.kind, {}
        if kind != "infiniband":
            out["routing"] = f"fabric.kind is {kind}: LFT routing is InfiniBand's"
        elif self.expected_graph is None:
            out["routing"] = "no declared fat tree to judge the routes against"
        elif not self.routing_hosts:
            out["routing"] = "no selected host with an HCA to read the forwarding tables from"
        ib = self.spec.fabric.infiniband
        if kind != "infiniband" or ib is None:
            out["congestion_control"] = f"fabric.kind is {kind}: IB congestion control (class 0x21)"
        elif not ib.congestion_control.enabled:
            out["congestion_control"] = (
                "fabric.infiniband.congestion_control.enabled is false: nothing declared to check"
            )
        elif self.simulated:
            out["congestion_control"] = (
                "target lab: the lab cannot prove congestion control. ibsim answers no "
                "congestion-control MADs (class 0x21): its sim_mad.c hands them to its SMP "
                "handlers (class & 0xf), so ibccquery reads SMP attributes, not CC settings. "
                "opensm.conf's cc_* keys are golden- and molecule-tested instead"
            )
        elif not self.cc_hosts:
            out["congestion_control"] = "no selected host with an HCA to run ibccquery from"
        return out

    def _gpu_not_generated(self) -> dict[str, str]:
        """Why the GPU families (``nccl``, ``gpudirect``, ``gpu_nic_affinity``) are not
        generated: no GPU first (the lab has none), then what each needs."""
        kind = self.spec.fabric.kind
        families = ("nccl", "gpudirect", "gpu_nic_affinity")
        if self.simulated:
            reason = (
                "no GPU: target lab (nccl-tests, ib_write_bw --use_cuda and nvidia-smi need one)"
            )
            return dict.fromkeys(families, reason)
        if not self.gpu_hosts:
            reason = "no GPU: no selected host declares gpus (nodes[].gpus or a GPU instance type)"
            return dict.fromkeys(families, reason)
        out = {}
        if not self.gpu_rails:
            out["gpu_nic_affinity"] = "no selected GPU host declares HCAs (rails)"
        if kind not in ("infiniband", "roce"):
            out["gpudirect"] = (
                f"fabric.kind is {kind}: ib_write_bw --use_cuda runs over ConnectX rails "
                "(efa_gpudirect covers EFA)"
            )
        elif not self.gpudirect_pairs:
            out["gpudirect"] = "fewer than two selected GPU hosts on a rail"
        return out

    def _roce_not_generated(self) -> dict[str, str]:
        """Why the host-against-switch RoCE families are not generated."""
        kind, out = self.spec.fabric.kind, {}
        if kind != "roce":
            out["roce_consistency"] = f"fabric.kind is {kind}: host/switch QoS applies to roce"
        elif not self.roce_hops:
            others = [s.name for s in self.spec.fabric.switches if s.manage and s.os != "linux"]
            out["roce_consistency"] = (
                f"switches {others} are SONiC/Cumulus: switch_qos re-reads them when it applies; "
                "the live comparison reads Linux switches only"
                if others
                else "no managed Linux switch declares ports facing the selected hosts "
                "(fabric.switches[].ports)"
            )
        if self.simulated:
            out["roce_bandwidth"] = (
                "target lab: no RDMA device (veth), so ib_write_bw -R cannot run; the switch's "
                "per-class counters prove DSCP classification instead"
            )
        elif kind != "roce":
            out["roce_bandwidth"] = f"fabric.kind is {kind}: ib_write_bw -R with a ToS is RoCE"
        return out


#: The general families before the targets' own (``FAMILIES`` of their ``checks`` part).
#: Cable-level questions (state, physical state, rate, width, far end, error counters) are
#: the ``sweep`` family's: one vantage host judges every declared cable, under the checks'
#: own names; ``ports`` and ``ib_links`` ask them on a host only of a port the sweep does not
#: judge (RoCE, or InfiniBand without declared cabling).
_GENERAL: dict[str, tuple[tuple[str, ...], str]] = {
    "ports": (
        (
            "test_port_present",
            "test_port_state_active",
            "test_port_physical_state_linkup",
            "test_port_rate",
            "test_port_link_layer",
        ),
        "host_ports",
    ),
    "ib": (("test_ib_active_mtu",), "ib_ports"),
    "ib_links": (("test_port_width", "test_port_cabled_to_declared_switch_port"), "host_ib_ports"),
    "phy": (("test_ibdiagnet_phy",), "phy_hosts"),
    "netdev_mtu": (("test_netdev_mtu",), "netdevs"),
    "path_mtu": (("test_path_mtu",), "netdev_pairs"),
    "sm": (
        (
            "test_sm_answers",
            "test_sm_priority",
            "test_single_master",
            "test_master_is_declared",
            "test_standbys_declared",
            "test_no_undeclared_sm",
            "test_no_unmanaged_opensm",
            "test_host_sees_master",
        ),
        "subnet_managers",
    ),
    "ib_pairs": (("test_ibping", "test_pma_reachable", "test_ibtracert_declared_path"), "ib_pairs"),
    "verbs": (("test_rc_pingpong", "test_write_bandwidth"), "ib_pairs"),
    "roce_qos": (
        ("test_trust_mode", "test_pfc_on_rdma_priority", "test_rdma_dscp_maps_to_pfc_priority"),
        "netdevs",
    ),
    "roce_consistency": (
        (
            "test_hop_mtu",
            "test_hop_dscp_map",
            "test_hop_lossless_class",
            "test_hop_ecn",
            "test_hop_pfc_watchdog",
        ),
        "roce_hops",
    ),
    "roce_bandwidth": (("test_roce_write_bandwidth",), "netdev_pairs"),
    "sweep": (
        (
            "test_declared_link_discovered",
            "test_no_undeclared_links",
            "test_port_state_active",
            "test_port_physical_state_linkup",
            "test_port_error_counters",
        ),
        "swept_cables",
    ),
    "routing": (
        ("test_routing_engine", "test_routes_minimal_updown", "test_routes_balanced"),
        "routing_hosts",
    ),
    "congestion_control": (("test_congestion_control",), "cc_hosts"),
    "slurm": (("test_node_idle_or_allocated",), "slurm_nodes"),
    "slurm_topology": (("test_topology_switch",), "slurm_switches"),
    "slurm_provider_topology": (("test_provider_topology",), "provider_topology"),
}
#: The GPU families, listed after the targets' own.
_GPU: dict[str, tuple[tuple[str, ...], str]] = {
    "nccl": (("test_nccl_allreduce",), "nccl_runs"),
    "gpudirect": (("test_gpudirect_write_bandwidth",), "gpudirect_pairs"),
    "gpu_nic_affinity": (("test_gpu_nic_affinity",), "gpu_rails"),
}
#: Check family -> (the checks it holds, the parameter source they run over): the general
#: families, every target's (found through the registry ``fabric.targets``), the GPU families.
#: What ``python -m fabric check --plan`` lists; a unit test keeps it equal to the check suite.
FAMILIES: dict[str, tuple[tuple[str, ...], str]] = {
    **_GENERAL,
    **{f: v for _, checks in parts("checks") for f, v in checks.FAMILIES.items()},
    **_GPU,
}


def _jsonable(value: object) -> object:
    """A plan parameter as JSON: models dumped, tuples as lists."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, tuple):
        return list(value)
    return value


def describe(plan: CheckPlan) -> dict[str, dict[str, object]]:
    """Every check family: the checks and parameters that would run, or why it is not
    generated. Built from the spec alone: nothing is probed (the RoCE QoS family's ConnectX
    netdevs are narrowed by a PCI vendor probe when the suite runs)."""
    reasons = plan.not_generated()
    out: dict[str, dict[str, object]] = {}
    for family, (checks, source) in FAMILIES.items():
        values = (
            sorted(plan.slurm_switches)
            if family == "slurm_topology"
            else plan.family_params(family)
        )
        reason = reasons.get(family)
        if reason is None and not values:
            reason = f"nothing to check: no {source.replace('_', ' ')} among the selected hosts"
        if reason is not None:
            out[family] = {"checks": list(checks), "not_generated": reason}
        else:
            out[family] = {"checks": list(checks), "parameters": [_jsonable(v) for v in values]}
    return out
