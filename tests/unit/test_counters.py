"""Error counters (fabric.verify.counters) on real perfquery output, the cause they give, the
picture's colour, and the spec's thresholds.

The readings are real: ``perfquery__ibsimparse__1`` (a port with no errors) and
``perfquery__ibsimparse__2`` (the same fabric after ibsim's console ``PerformanceSet`` raised
SymbolErrorCounter to 37, LinkDownedCounter to 2, PortRcvErrors to 5), see
tests/fixtures/SOURCES.md.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from fabric.parsers.perfquery import parse
from fabric.spec import load_spec
from fabric.state import REPO_ROOT
from fabric.topology.from_spec import graph_from_spec
from fabric.verify import counters
from fabric.verify.causes import diagnose
from fabric.verify.plan import FAMILIES, CheckPlan
from fabric.verify.report import ORANGE, RED, fabric_dot
from fabric.verify.results import CheckResult

FIXTURES = REPO_ROOT / "tests" / "fixtures"
CLEAN = (FIXTURES / "perfquery__ibsimparse__1.txt").read_text()
ERRORS = (FIXTURES / "perfquery__ibsimparse__2.txt").read_text()


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("perfquery__*.txt")), ids=lambda p: p.stem)
def test_node_reader_agrees_with_the_parser(path: Path) -> None:
    """The health program's stdlib reader reads what fabric.parsers.perfquery reads."""
    report = parse(path.read_text())
    want: dict[str, int] = {}
    for block in report.blocks:
        if not block.extended:
            want |= block.counters
    for block in report.blocks:
        if block.extended:
            want |= block.counters
    assert counters.perfquery_values(path.read_text()) == want


@pytest.mark.parametrize(
    ("rate", "limit"), [(10.0, 1), (40.0, 3), (56.0, 4), (100.0, 6), (200.0, 12), (400.0, 24)]
)
def test_symbol_error_default_follows_the_link_rate(rate: float, limit: int) -> None:
    assert counters.thresholds(rate)["symbol_errors"] == limit


def test_defaults_and_overrides() -> None:
    limits = counters.thresholds(200.0, {"link_downed": 3, "port_xmit_wait": 1000})
    assert limits["link_downed"] == 3 and limits["port_xmit_wait"] == 1000
    assert counters.thresholds(200.0)["port_xmit_wait"] is None
    assert counters.thresholds(200.0)["port_rcv_errors"] == 0
    with pytest.raises(ValueError, match="unknown counter 'bogus'"):
        counters.thresholds(200.0, {"bogus": 1})


def test_judge_names_every_rising_error_counter() -> None:
    before, after = counters.perfquery_values(CLEAN), counters.perfquery_values(ERRORS)
    breaches = counters.judge(before, after, 5.0, counters.thresholds(200.0))
    texts = [b.text() for b in counters.failing(breaches)]
    assert texts == [
        "SymbolErrorCounter +37 in 5s (allowed 12)",
        "LinkDownedCounter +2 in 5s (allowed 0)",
        "PortRcvErrors +5 in 5s (allowed 0)",
    ]


def test_no_rise_no_breach_and_within_budget() -> None:
    values = counters.perfquery_values(ERRORS)
    assert counters.judge(values, values, 5.0, counters.thresholds(200.0)) == []
    limits = counters.thresholds(
        200.0, {"symbol_errors": 40, "link_downed": 2, "port_rcv_errors": 5}
    )
    clean = counters.perfquery_values(CLEAN)
    assert counters.failing(counters.judge(clean, values, 5.0, limits)) == []


def test_cleared_counter_counts_its_new_value_and_saturation_fails() -> None:
    after = counters.perfquery_values(ERRORS)
    before = after | {"SymbolErrorCounter": 60000}
    found = counters.judge(before, after, 60.0, counters.thresholds(200.0))
    assert "SymbolErrorCounter +37 in 60s (allowed 12)" in [b.text() for b in found]
    stuck = after | {"SymbolErrorCounter": 65535}
    (breach,) = [b for b in counters.judge(stuck, stuck, 60.0, {}) if b.counter.startswith("Sym")]
    assert breach.failing and "saturated" in breach.text()


def test_congestion_is_reported_not_failed() -> None:
    before = counters.perfquery_values(CLEAN)
    after = before | {"PortXmitWait": before["PortXmitWait"] + 5000}
    (breach,) = counters.judge(before, after, 5.0, counters.thresholds(200.0))
    assert not breach.failing and breach.text() == "PortXmitWait +5000 in 5s (not judged)"
    judged = counters.judge(before, after, 5.0, counters.thresholds(200.0, {"port_xmit_wait": 10}))
    assert counters.failing(judged)


def _lab_plan() -> CheckPlan:
    spec = load_spec(REPO_ROOT / "Pulumi.lab.yaml")
    return CheckPlan(spec=spec, hosts=list(spec.hosts))


def test_plan_judges_every_cabled_ib_port() -> None:
    """The sweep reads the counters of every cabled InfiniBand port (both ends)."""
    plan = _lab_plan()
    assert plan.counter_ports == [p for p in plan.ib_ports if p.switch]
    assert len(plan.counter_ports) == len(plan.ib_ports) > 0
    assert {c.port for c in plan.swept_cables if c.host} == {p.id for p in plan.counter_ports}
    assert "sweep" not in plan.not_generated()
    checks, source = FAMILIES["sweep"]
    assert "test_port_error_counters" in checks and source == "swept_cables"


def _counter_failure(plan: CheckPlan, host: str) -> CheckResult:
    port = next(p for p in plan.counter_ports if p.host == host)
    breaches = counters.judge(
        counters.perfquery_values(CLEAN),
        counters.perfquery_values(ERRORS),
        5.0,
        counters.thresholds(port.rate_gbps),
    )
    bad = "; ".join(f"{port.switch} p{port.switch_port} {b.text()}" for b in breaches)
    label = counters.cable_label(
        str(port.switch), port.switch_port or 0, port.host, port.device, port.port
    )
    return CheckResult(
        name="test_port_error_counters",
        param=port.id,
        outcome="failed",
        message=f"cable {label}: errors rising: {bad}",
        subjects=[f"counters:{port.id}"],
    )


def test_a_cable_with_errors_is_its_own_cause_and_names_the_cable() -> None:
    plan = _lab_plan()
    graph = graph_from_spec(plan.spec)
    failure = _counter_failure(plan, "gpu03")
    passed = [
        CheckResult(name="test_port_error_counters", param=p.id, outcome="passed")
        for p in plan.counter_ports
        if p.host != "gpu03"
    ]
    diagnosis = diagnose([failure, *passed], graph)
    (cause,) = diagnosis.causes
    assert cause.what == "cable with errors" and cause.kind == "cable"
    assert cause.subject.startswith("leaf01 p") and "gpu03" in cause.subject
    assert diagnosis.headlines() == [
        f"1 cable with errors ({cause.subject}) explains 1 failing check"
    ]
    assert "SymbolErrorCounter +37" in cause.evidence
    assert diagnosis.unexplained == [] and diagnosis.errors == []


def test_picture_draws_a_cable_with_errors_in_its_own_colour() -> None:
    plan = _lab_plan()
    graph = graph_from_spec(plan.spec)
    dot = fabric_dot(graph, [_counter_failure(plan, "gpu03")])
    erring = [line for line in dot.splitlines() if ORANGE in line]
    assert len(erring) == 1 and "gpu03" in erring[0]
    assert RED not in "".join(line for line in dot.splitlines() if " -- " in line)


def test_spec_health_defaults() -> None:
    """Defaults of the spec's health section (bad values: tests/unit/specs/invalid.yaml)."""
    health = load_spec(REPO_ROOT / "Pulumi.lab.yaml").health
    assert health.interval == 60 and health.node_state == ["ANY"]
    assert health.counters.model_dump(exclude_none=True) == {}


def test_phy_scan_runs_from_the_discovery_host_off_the_lab() -> None:
    """ibdiagnet's PHY/BER scan: not generated in the lab (ibsim has no PHY registers), run
    once from the discovery host on a real fabric."""
    lab = _lab_plan()
    assert "ibsim" in lab.not_generated()["phy"]
    spec = load_spec(REPO_ROOT / "Pulumi.baremetal-ib.example.yaml")
    plan = CheckPlan(spec=spec, hosts=list(spec.hosts))
    assert "phy" not in plan.not_generated()
    assert plan.phy_hosts == [plan.discovery_host] and plan.discovery_host
    assert FAMILIES["phy"] == (("test_ibdiagnet_phy",), "phy_hosts")


def _runner(*answers: tuple[int, str]) -> tuple[list[str], object]:
    """``run`` for ``counters.read_port``: the given (exit code, output) in turn, commands kept."""
    ran: list[str] = []
    queue = list(answers)

    def run(command: str) -> tuple[int, str]:
        ran.append(command)
        return queue.pop(0)

    return ran, run


CRASH = (139, (FIXTURES / "perfquery_crash__bench32__1.txt").read_text())
EXTENDED = (0, (FIXTURES / "perfquery__ibsimparse__3.txt").read_text())
PLAIN = (0, (FIXTURES / "perfquery__ibsimparse__2.txt").read_text())


def test_read_port_runs_a_crashed_perfquery_once_more() -> None:
    ran, run = _runner(CRASH, EXTENDED, PLAIN)
    values = counters.read_port(run, "gpu08", "2 4")  # type: ignore[arg-type]
    assert ran[:2] == ["perfquery -x -t 1000 2 4"] * 2
    assert values["PortXmitData"] == 576 and values["SymbolErrorCounter"] == 37


def test_read_port_names_a_tool_that_keeps_crashing_as_a_read_error() -> None:
    ran, run = _runner(CRASH, CRASH, CRASH, CRASH)
    with pytest.raises(
        counters.CounterReadError,
        match=r"gpu08: perfquery 2 4 failed: exit 139: "
        r"bash: line 1:  1450 Segmentation fault",
    ):
        counters.read_port(run, "gpu08", "2 4")  # type: ignore[arg-type]
    assert len(ran) == 4  # each of -x and plain, run twice
