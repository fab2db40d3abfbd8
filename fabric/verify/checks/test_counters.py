"""Error counters per declared cable: both ends read twice, the rises judged against thresholds.

Every declared InfiniBand HCA port and the switch port at the other end of its cable are read
with ``perfquery`` (extended counters where the port's PMA reports error counters in them,
the plain PortCounters otherwise), all ports once, then again ``health.sample_seconds`` later;
``fabric.verify.counters`` judges each rise against the spec's thresholds (defaults per link
rate). A failure names the cable by both ends.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from fabric.parsers import ibdiagnet
from fabric.parsers.common import ParseError
from fabric.verify import counters
from fabric.verify.facts import Facts
from fabric.verify.harness import HarnessError
from fabric.verify.plan import CheckPlan, HcaPort

pytestmark = pytest.mark.family("counters")

#: The shell's bound on one perfquery call (s).
CALL_TIMEOUT_S = 10
#: The bound on one ibdiagnet PHY/BER scan of the whole fabric (s), and where it writes.
IBDIAGNET_TIMEOUT_S = 900
IBDIAGNET_DIR = "/var/tmp/railyard-ibdiagnet"

End = tuple[str, str]  # (label, perfquery address arguments)


def cable_label(port: HcaPort) -> str:
    """``leaf01 port 3 ↔ gpu03 mlx5_0 port 1``."""
    return counters.cable_label(
        str(port.switch), port.switch_port or 0, port.host, port.device, port.port
    )


def _ends(facts: Facts, port: HcaPort) -> list[End] | str:
    """The cable's two ends as perfquery addresses, or why they cannot be read."""
    found = facts.port(port)
    if found is None:
        return f"{port.device} port {port.port} not found in ibstat"
    device = found[0]
    neighbour = facts.neighbour_link(port)
    if neighbour is None:
        return f"no active link from {port.device} port {port.port} to a switch"
    _, link = neighbour
    local = f"-C {device} -P {port.port}"
    return [
        (f"{port.switch} p{port.switch_port}", f"{local} {link.lid} {link.port}"),
        (f"{port.host} {port.device}/{port.port}", local),
    ]


def read_end(facts: Facts, host: str, address: str) -> dict[str, int]:
    """One port's counters (perfquery names -> value), each call bounded by the shell."""
    try:
        return counters.read_port(
            lambda cmd: facts.output(host, f"timeout {CALL_TIMEOUT_S} {cmd}"), host, address
        )
    except counters.CounterReadError as err:
        raise HarnessError(str(err)) from err


class Readings:
    """Every counter port's two ends read once, then again after the sample window."""

    def __init__(
        self, facts: Facts, plan: CheckPlan, between: Callable[[], None] | None = None
    ) -> None:
        """Read every port, wait out the window (``between`` runs in it), read again."""
        self.facts, self.seconds = facts, plan.spec.health.sample_seconds
        self.ends: dict[str, list[End] | str] = {}
        self.first: dict[tuple[str, str], dict[str, int] | HarnessError] = {}
        self.second: dict[tuple[str, str], dict[str, int] | HarnessError] = {}
        self.window = 0.0
        for port in plan.counter_ports:
            self.ends[port.id] = _ends(facts, port)
        start = time.monotonic()
        self._read(plan, self.first)
        if between is not None:
            between()
        time.sleep(max(0.0, self.seconds - (time.monotonic() - start)))
        self._read(plan, self.second)
        self.window = time.monotonic() - start

    def _read(self, plan: CheckPlan, into: dict[tuple[str, str], Any]) -> None:
        for port in plan.counter_ports:
            ends = self.ends[port.id]
            for label, address in ends if isinstance(ends, list) else []:
                try:
                    into[(port.id, label)] = read_end(self.facts, port.host, address)
                except HarnessError as err:
                    into[(port.id, label)] = err


@pytest.fixture(scope="session")
def readings(facts: Facts, plan: CheckPlan) -> Readings:
    """Both readings of every counter port (taken once per session)."""
    return Readings(facts, plan)


def test_port_error_counters(
    host, readings: Readings, plan: CheckPlan, counter_port: HcaPort
) -> None:  # type: ignore[no-untyped-def]
    """No error counter at either end of the cable rose above its threshold."""
    cable = cable_label(counter_port)
    ends = readings.ends[counter_port.id]
    assert isinstance(ends, list), f"cable {cable}: {ends}"
    limits = counters.thresholds(
        counter_port.rate_gbps, plan.spec.health.counters.model_dump(exclude_none=True)
    )
    bad, congestion = [], []
    for label, _ in ends:
        first, second = (
            readings.first[(counter_port.id, label)],
            readings.second[(counter_port.id, label)],
        )
        for reading in (first, second):
            if isinstance(reading, HarnessError):
                raise reading
        assert isinstance(first, dict) and isinstance(second, dict)
        for breach in counters.judge(first, second, readings.window, limits):
            (bad if breach.failing else congestion).append(f"{label} {breach.text()}")
    note = f"; congestion: {', '.join(congestion)}" if congestion else ""
    assert not bad, f"cable {cable}: errors rising: {'; '.join(bad)}{note}"


@pytest.mark.family("phy")
def test_ibdiagnet_phy(host, facts: Facts, phy_host: str) -> None:  # type: ignore[no-untyped-def]
    """Where ibdiagnet is installed, its PHY/BER scan (``--get_phy_info``: BER against the
    firmware's thresholds on every EDR/HDR/NDR port) reports no errors in any stage."""
    if host.run("command -v ibdiagnet").rc != 0:
        pytest.skip(f"{phy_host}: ibdiagnet is not installed (ibutils2, from DOCA/MLNX_OFED)")
    rc, text = facts.output(
        phy_host,
        f"timeout {IBDIAGNET_TIMEOUT_S} ibdiagnet --get_phy_info -o {IBDIAGNET_DIR} 2>&1",
    )
    try:
        report = ibdiagnet.parse(ibdiagnet.console_summary(text))
    except ParseError as err:
        raise HarnessError(f"{phy_host}: ibdiagnet (exit {rc}) printed no summary: {err}") from err
    if not report.stages:
        raise HarnessError(f"{phy_host}: ibdiagnet (exit {rc}) printed no stage table")
    failing = [
        f"{stage.stage}: {stage.errors} errors" + (f" ({stage.comment})" if stage.comment else "")
        for stage in report.stages
        if stage.errors
    ]
    assert not failing, (
        f"ibdiagnet on {phy_host}: {'; '.join(failing)}; per-port detail in "
        f"{IBDIAGNET_DIR}/ibdiagnet2.log and ibdiagnet2.db_csv"
    )
