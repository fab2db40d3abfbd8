"""The HCA port families a host reads itself: ``ports`` (``ibstat``), ``ib`` (the active IB
MTU) and ``ib_links`` (width and far end, ``iblinkinfo``); cables the fabric sweep judges are
left to it (``fabric.verify.families.sweep``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fabric.model.ports import HcaPort
from fabric.verify.families.base import Family, Source, port_fixture

if TYPE_CHECKING:
    from fabric.verify.plan import CheckPlan

#: Where ``check --plan`` lists these families.
ORDER = 10


def _swept_ports(plan: CheckPlan) -> set[str]:
    """The ids (``host/device/port``) of the HCA ports the fabric sweep judges."""
    return {c.port for c in plan.swept_cables}


def _host_ports(plan: CheckPlan) -> list[HcaPort]:
    """RDMA ports judged on their host (``ibstat`` over SSH): those the fabric sweep does
    not judge (RoCE ports; InfiniBand ports without a declared cable or a sweep)."""
    swept = plan.swept_ports
    return [p for p in plan.rdma_ports if p.id not in swept]


def _host_ib_ports(plan: CheckPlan) -> list[HcaPort]:
    """InfiniBand ports whose width and far end are read on their host (``iblinkinfo``
    over SSH): those the fabric sweep does not judge."""
    swept = plan.swept_ports
    return [p for p in plan.ib_ports if p.id not in swept]


def _swept(plan: CheckPlan) -> str:
    return f"the fabric sweep from {plan.observer} judges every declared cable (sweep)"


def _no_ib(plan: CheckPlan) -> str | None:
    return None if plan.ib_ports else "no InfiniBand HCA port declared on the selected hosts"


def _ports_why(plan: CheckPlan) -> str | None:
    if not plan.rdma_ports:
        return (
            "target lab: RoCE HCAs are veth netdevs without an RDMA device for ibstat; "
            "netdev_mtu, path_mtu and roce_consistency cover them"
            if plan.hca_ports
            else "no HCA port declared on the selected hosts"
        )
    return None if plan.host_ports else _swept(plan)


def _links_why(plan: CheckPlan) -> str | None:
    return _no_ib(plan) or (None if plan.host_ib_ports else _swept(plan))


SOURCES: dict[str, Source] = {
    "swept_ports": _swept_ports,
    "host_ports": _host_ports,
    "host_ib_ports": _host_ib_ports,
}

#: Cable-level questions (state, physical state, rate, width, far end, error counters) are
#: the ``sweep`` family's: one vantage host judges every declared cable, under the checks'
#: own names; ``ports`` and ``ib_links`` ask them on a host only of a port the sweep does not
#: judge (RoCE, or InfiniBand without declared cabling).
FAMILIES = (
    Family(
        "ports",
        (
            "test_port_present",
            "test_port_state_active",
            "test_port_physical_state_linkup",
            "test_port_rate",
            "test_port_link_layer",
        ),
        "host_ports",
        _ports_why,
        fixtures=(port_fixture("hca_port", "host_ports"),),
    ),
    Family(
        "ib",
        ("test_ib_active_mtu",),
        "ib_ports",
        _no_ib,
        fixtures=(port_fixture("ib_port", "ib_ports"),),
    ),
    Family(
        "ib_links",
        ("test_port_width", "test_port_cabled_to_declared_switch_port"),
        "host_ib_ports",
        _links_why,
        fixtures=(port_fixture("link_port", "host_ib_ports"),),
    ),
)
