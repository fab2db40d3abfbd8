"""RoCE QoS on ConnectX netdevs: trust mode and the lossless (PFC) priority, via mlnx_qos.

Generated only for netdevs backed by a ConnectX (PCI vendor 0x15b3, probed at collection);
other netdevs are listed as not generated with the vendor found.
"""

from __future__ import annotations

import pytest

from fabric.parsers import PARSERS
from fabric.verify.plan import CheckPlan

pytestmark = pytest.mark.family("roce_qos")


def _qos(host, netdev: tuple[str, str]):  # type: ignore[no-untyped-def]
    result = host.run(f"mlnx_qos -i {netdev[1]}")
    report = PARSERS["mlnx_qos"](result.stdout + result.stderr)
    assert report.ok, f"{netdev[0]} {netdev[1]}: mlnx_qos failed: {report.reason}"
    return report


def test_trust_mode(host, connectx_netdev: tuple[str, str], plan: CheckPlan) -> None:
    """The port trusts the declared field (dscp or pcp)."""
    want = plan.spec.fabric.roce.trust if plan.spec.fabric.roce else "dscp"
    report = _qos(host, connectx_netdev)
    assert report.trust == want, (
        f"{connectx_netdev[0]} {connectx_netdev[1]}: trust {report.trust}, expected {want}"
    )


def test_pfc_on_rdma_priority(host, connectx_netdev: tuple[str, str], plan: CheckPlan) -> None:
    """PFC is enabled on the declared lossless priority."""
    prio = plan.spec.fabric.roce.pfc_priority if plan.spec.fabric.roce else 3
    report = _qos(host, connectx_netdev)
    assert report.pfc_enabled.get(prio), (
        f"{connectx_netdev[0]} {connectx_netdev[1]}: PFC on priority {prio} is off; enabled: "
        f"{sorted(p for p, on in report.pfc_enabled.items() if on)}"
    )


def test_rdma_dscp_maps_to_pfc_priority(
    host, connectx_netdev: tuple[str, str], plan: CheckPlan
) -> None:
    """RDMA traffic's DSCP lands on the lossless priority."""
    roce = plan.spec.fabric.roce
    dscp, prio = (roce.rdma_dscp, roce.pfc_priority) if roce else (26, 3)
    report = _qos(host, connectx_netdev)
    assert dscp in report.dscp2prio.get(prio, []), (
        f"{connectx_netdev[0]} {connectx_netdev[1]}: DSCP {dscp} is not mapped to priority {prio}"
    )
