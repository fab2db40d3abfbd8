"""HCA ports judged on their host: present, Active, LinkUp, rate, width, link layer.

Only ports the fabric sweep does not judge run here (``plan.host_ports``, ``host_ib_ports``):
RoCE ports, and InfiniBand ports without declared cabling. Every declared InfiniBand cable is
the sweep's (``checks/test_sweep.py``), from one vantage host.
"""

from __future__ import annotations

import pytest

from fabric.verify.facts import Facts
from fabric.verify.plan import HcaPort

pytestmark = pytest.mark.family("ports")


def _port(facts: Facts, hca_port: HcaPort):  # type: ignore[no-untyped-def]
    found = facts.port(hca_port)
    assert found is not None, f"{hca_port.where}: not found in ibstat on {hca_port.host}"
    return found[1]


def test_port_present(host, facts: Facts, hca_port: HcaPort) -> None:
    """The declared HCA port exists (ibstat lists it)."""
    report = facts.ibstat(hca_port.host)
    assert report.ok, f"{hca_port.host}: ibstat failed: {report.reason}"
    assert facts.port(hca_port) is not None, (
        f"{hca_port.where}: ibstat on {hca_port.host} lists "
        f"{[d.name for d in report.devices] or 'no HCA'}"
    )


def test_port_state_active(host, facts: Facts, hca_port: HcaPort) -> None:
    """Logical port state is Active."""
    port = _port(facts, hca_port)
    assert port.state == "Active", f"{hca_port.where}: state {port.state}, expected Active"


def test_port_physical_state_linkup(host, facts: Facts, hca_port: HcaPort) -> None:
    """Physical port state is LinkUp."""
    port = _port(facts, hca_port)
    assert port.physical_state == "LinkUp", (
        f"{hca_port.where}: physical state {port.physical_state}, expected LinkUp"
    )


def test_port_rate(host, facts: Facts, hca_port: HcaPort, plan) -> None:  # type: ignore[no-untyped-def]
    """Port rate equals the declared rate (in the lab: the rate ibsim simulates for it).

    ibstat's rate comes from sysfs; in the lab umad2sim fakes sysfs and prints 104 for an
    HDR link, so there the rate is taken from PortInfo (active width x speed, iblinkinfo).
    """
    _port(facts, hca_port)
    rate, source = facts.port_rate(hca_port)
    note = " (declared rate as ibsim simulates it)" if plan.simulated else ""
    assert rate == hca_port.rate_gbps, (
        f"{hca_port.where}: rate {rate:g} Gb/s ({source}), expected {hca_port.rate_gbps:g}{note}"
    )


def test_port_link_layer(host, facts: Facts, hca_port: HcaPort) -> None:
    """Link layer is the declared one (InfiniBand or Ethernet)."""
    port = _port(facts, hca_port)
    assert port.link_layer == hca_port.link_layer, (
        f"{hca_port.where}: link layer {port.link_layer}, expected {hca_port.link_layer}"
    )


@pytest.mark.family("ib_links")
def test_port_width(host, facts: Facts, link_port: HcaPort) -> None:
    """Active link width (seen from the neighbouring switch port) is the declared width."""
    found = facts.neighbour_link(link_port)
    assert found is not None, (
        f"{link_port.where}: no active link to a switch (iblinkinfo -D 0,{link_port.port})"
    )
    switch, link = found
    assert (link.width or "").lower() == link_port.width.lower(), (
        f"{link_port.where}: width {link.width} on {switch} port {link.port}, expected {link_port.width}"
    )


@pytest.mark.family("ib_links")
def test_port_cabled_to_declared_switch_port(host, facts: Facts, link_port: HcaPort) -> None:
    """The HCA port's neighbour is the declared switch and switch port."""
    if link_port.switch is None:
        pytest.skip(f"{link_port.where}: no declared switch (no fabric topology)")
    found = facts.neighbour_link(link_port)
    assert found is not None, f"{link_port.where}: no active link to a switch"
    switch, link = found
    assert (switch, link.port) == (link_port.switch, link_port.switch_port), (
        f"{link_port.host} HCA {link_port.device} port {link_port.port}: cabled to {switch} port {link.port}, "
        f"expected {link_port.switch} port {link_port.switch_port}"
    )
