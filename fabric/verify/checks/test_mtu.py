"""MTU: IB active MTU per port, fabric netdev MTU per host, path MTU between sampled peers."""

from __future__ import annotations

import pytest

from fabric.verify.facts import TOOL_ATTEMPTS, Facts
from fabric.verify.harness_error import HarnessError
from fabric.verify.mtu import df_ping_command, df_ping_payload, ib_mtu_bytes
from fabric.verify.plan import CheckPlan, HcaPort, Pair


@pytest.mark.family("ib")
def test_ib_active_mtu(host, facts: Facts, ib_port: HcaPort, plan: CheckPlan) -> None:
    """The port's active (neighbour) MTU from PortInfo equals the spec's fabric MTU.

    The query goes to the host's own port (direct route 0): it never crosses a cable, so a
    query that kept failing is the harness's, not the port's."""
    info = facts.portinfo(ib_port)
    if not info.ok:
        raise HarnessError(
            f"{ib_port.where}: smpquery portinfo of the local port failed "
            f"{TOOL_ATTEMPTS} times: {info.reason}"
        )
    assert info.neighbor_mtu, f"{ib_port.where}: smpquery portinfo shows no NeighborMTU"
    active = ib_mtu_bytes(info.neighbor_mtu)
    note = (
        f" (spec {plan.spec.fabric.mtu}, capped at ibsim's MTUCap 2048)" if plan.simulated else ""
    )
    assert active == plan.ib_mtu, (
        f"{ib_port.where}: active MTU {active}, expected {plan.ib_mtu}{note}"
    )


@pytest.mark.family("netdev_mtu")
def test_netdev_mtu(host, netdev: tuple[str, str], plan: CheckPlan) -> None:
    """The fabric netdev's MTU equals the spec's fabric MTU."""
    name, dev = netdev
    iface = host.interface(dev)
    assert iface.exists, f"{name}: fabric netdev {dev} does not exist"
    mtu = iface.link[0]["mtu"]  # ``ip --json link show DEV``; testinfra's Interface has no ``mtu``
    assert mtu == plan.spec.fabric.mtu, (
        f"{name}: netdev {dev} MTU {mtu}, expected {plan.spec.fabric.mtu}"
    )


@pytest.mark.family("path_mtu")
def test_path_mtu(host, facts: Facts, netdev_pair: Pair, plan: CheckPlan) -> None:
    """A don't-fragment ping of MTU-28 bytes crosses the fabric from source to target."""
    mtu = plan.spec.fabric.mtu
    src_dev = next(d for h, d in plan.netdevs if h == netdev_pair.source)
    dst_dev = next(d for h, d in plan.netdevs if h == netdev_pair.target)
    target = facts.connect(netdev_pair.target)
    addresses = target.interface(dst_dev).addresses if target.interface(dst_dev).exists else []
    ipv4 = [a for a in addresses if ":" not in a]
    assert ipv4, f"{netdev_pair.target}: netdev {dst_dev} has no IPv4 address to ping"
    result = host.run(df_ping_command(ipv4[0], mtu, src_dev))
    assert result.rc == 0, (
        f"{netdev_pair.source} {src_dev} -> {netdev_pair.target} {dst_dev} ({ipv4[0]}): don't-fragment ping of "
        f"{df_ping_payload(mtu)} bytes (MTU {mtu}) failed: {(result.stdout + result.stderr).strip()[-200:]}"
    )
