"""The RoCE families: ``roce_qos`` (a ConnectX netdev's trust mode, PFC and DSCP map,
``mlnx_qos``), ``roce_consistency`` (each host-switch hop's QoS against the managed Linux
switch's) and ``roce_bandwidth`` (``ib_write_bw -R`` with the declared ToS)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fabric.verify.families.base import Family, Fixture, Run, Source
from fabric.verify.families.mtu import NETDEV_PAIR
from fabric.verify.families.params import SwitchHop

if TYPE_CHECKING:
    from fabric.verify.plan import CheckPlan

#: Where ``check --plan`` lists these families.
ORDER = 60
#: PCI vendor id of Mellanox/NVIDIA ConnectX adapters.
CONNECTX_VENDOR = "0x15b3"


def _roce_hops(plan: CheckPlan) -> list[SwitchHop]:
    """Every declared host-switch hop of a RoCE fabric whose switch railyard manages as a
    Linux switch (it reads that switch's live QoS back) and whose host is selected."""
    if plan.spec.fabric.kind != "roce":
        return []
    netdevs = dict(plan.netdevs)
    selected = set(plan.hosts)
    return [
        SwitchHop(
            host=port.host,
            netdev=port.netdev or netdevs[port.host],
            switch=switch.name,
            port=port.name,
        )
        for switch in plan.spec.fabric.switches
        if switch.manage and switch.os == "linux"
        for port in switch.ports
        if port.host in selected and (port.netdev or port.host in netdevs)
    ]


def _connectx(run: Run, netdev: Any) -> str | None:
    """None when the netdev is backed by a ConnectX, else why it is not checked."""
    host, dev = netdev
    vendor = run(f"cat /sys/class/net/{dev}/device/vendor").strip() or "none"
    return None if vendor == CONNECTX_VENDOR else f"{host} {dev}: no ConnectX (PCI vendor {vendor})"


def _qos_why(plan: CheckPlan) -> str | None:
    kind = plan.spec.fabric.kind
    if kind != "roce":
        return f"fabric.kind is {kind}: RoCE QoS (mlnx_qos) applies to roce with a ConnectX"
    return None


def _consistency_why(plan: CheckPlan) -> str | None:
    kind = plan.spec.fabric.kind
    if kind != "roce":
        return f"fabric.kind is {kind}: host/switch QoS applies to roce"
    if plan.roce_hops:
        return None
    others = [s.name for s in plan.spec.fabric.switches if s.manage and s.os != "linux"]
    return (
        f"switches {others} are SONiC/Cumulus: switch_qos re-reads them when it applies; "
        "the live comparison reads Linux switches only"
        if others
        else "no managed Linux switch declares ports facing the selected hosts "
        "(fabric.switches[].ports)"
    )


def _bandwidth_why(plan: CheckPlan) -> str | None:
    kind = plan.spec.fabric.kind
    if plan.simulated:
        return (
            "target lab: no RDMA device (veth), so ib_write_bw -R cannot run; the switch's "
            "per-class counters prove DSCP classification instead"
        )
    if kind != "roce":
        return f"fabric.kind is {kind}: ib_write_bw -R with a ToS is RoCE"
    return None


SOURCES: dict[str, Source] = {"roce_hops": _roce_hops}
FAMILIES = (
    Family(
        "roce_qos",
        ("test_trust_mode", "test_pfc_on_rdma_priority", "test_rdma_dscp_maps_to_pfc_priority"),
        "netdevs",
        _qos_why,
        fixtures=(
            Fixture(
                "connectx_netdev",
                lambda plan: plan.netdevs,
                ident=lambda n: f"{n[0]}/{n[1]}",
                on=lambda _, n: n[0],
                subject=lambda _, n: f"host:{n[0]}",
                probe=_connectx,
            ),
        ),
    ),
    Family(
        "roce_consistency",
        (
            "test_hop_mtu",
            "test_hop_dscp_map",
            "test_hop_lossless_class",
            "test_hop_ecn",
            "test_hop_pfc_watchdog",
        ),
        "roce_hops",
        _consistency_why,
        fixtures=(
            Fixture(
                "roce_hop",
                lambda plan: plan.roce_hops,
                ident=lambda h: h.id,
                on=lambda _, h: h.host,
                subject=lambda _, h: f"hop:{h.id}",
            ),
        ),
    ),
    Family(
        "roce_bandwidth",
        ("test_roce_write_bandwidth",),
        "netdev_pairs",
        _bandwidth_why,
        fixtures=(NETDEV_PAIR,),
    ),
)
