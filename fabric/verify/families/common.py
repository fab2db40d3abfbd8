"""The facts several families share, each a named value of the plan (``plan.observer``):
the selected hosts' HCA ports and netdevs, the declared subnet managers, the hosts the
fabric-wide checks run from, the Slurm controller."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fabric.model.ports import HcaPort, hca_ports
from fabric.spec.sm import expected_master
from fabric.verify.families.base import Source
from fabric.verify.families.params import SubnetManagerExpect

if TYPE_CHECKING:
    from fabric.spec import ClusterSpec
    from fabric.verify.plan import CheckPlan


def no_declared_fabric(spec: ClusterSpec, what: str, usual: str) -> str:
    """Why no declared fabric judges ``what`` (the cables, the routes): ``usual`` unless the
    spec lists its cables (``fabric.cabling`` set, as ``railyard import`` writes it) and
    that list is empty: then what the capture lacks."""
    fabric = spec.fabric
    if fabric.topology is not None or "cabling" not in fabric.model_fields_set:
        return usual
    if fabric.switches:
        return (
            f"no declared fat tree and fabric.cabling lists no cable: the capture holds "
            f"{len(fabric.switches)} switches but no cable to judge {what} against"
        )
    return (
        "no declared fat tree and fabric.cabling lists no cable: the capture holds no switch "
        f"and no cable (an isolated HCA) to judge {what} against"
    )


def _fabric_hosts(plan: CheckPlan) -> list[str]:
    """Selected hosts with HCAs, in declaration order."""
    selected = set(plan.hosts)
    return [h for h, g in plan.spec.hosts.items() if g.hcas and h in selected]


def _hca_ports(plan: CheckPlan) -> list[HcaPort]:
    """Every declared HCA port of the selected hosts (rate/width as the target reports them)."""
    return hca_ports(plan.spec, plan.hosts, plan.expected_graph)


def _rdma_ports(plan: CheckPlan) -> list[HcaPort]:
    """HCA ports with an RDMA device to read (``ibstat``): in the lab, RoCE HCAs are veth
    netdevs with none, so only their netdev, path-MTU and switch checks run."""
    if not plan.simulated:
        return plan.hca_ports
    return [p for p in plan.hca_ports if p.link_layer != "Ethernet"]


def _ib_ports(plan: CheckPlan) -> list[HcaPort]:
    """HCA ports whose link layer is InfiniBand."""
    return [p for p in plan.hca_ports if p.link_layer == "InfiniBand"]


def _counter_ports(plan: CheckPlan) -> list[HcaPort]:
    """InfiniBand HCA ports with a declared cable: their error counters and the switch
    port's at the other end are judged (``fabric.verify.counters``)."""
    return [p for p in plan.ib_ports if p.switch is not None]


def _netdevs(plan: CheckPlan) -> list[tuple[str, str]]:
    """(host, netdev) of every HCA with a declared netdev (RoCE, IPoIB)."""
    seen: list[tuple[str, str]] = []
    for p in plan.hca_ports:
        if p.netdev and (p.host, p.netdev) not in seen:
            seen.append((p.host, p.netdev))
    return seen


def _declared_sms(plan: CheckPlan) -> list[SubnetManagerExpect]:
    """Every declared subnet manager, in any mode, selected or not: what the fabric-wide
    SM checks compare the SMs found against."""
    ib = plan.spec.fabric.infiniband
    if plan.spec.fabric.kind != "infiniband" or ib is None:
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


def _sm_hosts(plan: CheckPlan) -> set[str]:
    """Hosts railyard runs an OpenSM on (managed SMs)."""
    return {s.host for s in plan.declared_sms if s.mode == "managed" and s.host}


def _observer(plan: CheckPlan) -> str | None:
    """The fabric host fabric-wide MAD checks run from (an SM host first: it has the SM)."""
    for host in sorted(plan.sm_hosts) + plan.fabric_hosts:
        if host in plan.hosts and plan.spec.hosts.get(host) and plan.spec.hosts[host].hcas:
            return host
    return None


def _discovery_host(plan: CheckPlan) -> str | None:
    """The host ibnetdiscover runs on: the first selected managed SM host; with no managed SM
    (the SMs are external or a switch's), the observer."""
    if not plan.sm_hosts:
        return plan.observer
    return next(
        (s.host for s in plan.declared_sms if s.mode == "managed" and s.host in plan.hosts),
        None,
    )


def _slurm_controller(plan: CheckPlan) -> str | None:
    """The host running slurmctld, if selected."""
    spec = plan.spec
    ctl = spec.slurm.controller or next(iter(spec.hosts_with_role("controller")), None)
    return ctl if ctl in plan.hosts else None


SOURCES: dict[str, Source] = {
    "fabric_hosts": _fabric_hosts,
    "hca_ports": _hca_ports,
    "rdma_ports": _rdma_ports,
    "ib_ports": _ib_ports,
    "counter_ports": _counter_ports,
    "netdevs": _netdevs,
    "declared_sms": _declared_sms,
    "sm_hosts": _sm_hosts,
    "observer": _observer,
    "discovery_host": _discovery_host,
    "slurm_controller": _slurm_controller,
}
