"""The sweep's judging (``fabric.verify.sweep_judge``) and its retries (``fabric.verify.sweep``),
on real tool output: an 8-host ibsim fat tree captured healthy and with three faults
(``tests/fixtures/sweep``, ``bench/sweep/capture_fixtures.py``), the ibsim captures of
``tests/fixtures/ibsimparse/net.hdr`` and a real Quantum switch's iblinkinfo."""

from __future__ import annotations

from pathlib import Path

import pytest

from fabric.graph import FabricGraph
from fabric.parsers.iblinkinfo import parse as parse_iblinkinfo
from fabric.parsers.ibnetdiscover import parse as parse_ibnetdiscover
from fabric.parsers.ibqueryerrors import parse as parse_ibqueryerrors
from fabric.verify.causes import diagnose
from fabric.verify.results import CheckResult
from fabric.verify.sweep import Completed, SweepConfig, sweep
from fabric.verify.sweep_judge import (
    COUNTER_CHECK,
    LINK_CHECK,
    CounterRead,
    counter_reading,
    judge,
    port_views,
)

FIXTURES = Path(__file__).parents[1] / "fixtures"
SWEEP = FIXTURES / "sweep"


def text(stage: str, tool: str) -> str:
    return (SWEEP / f"{stage}_{tool}.txt").read_text()


def captured(stage: str) -> tuple[FabricGraph, dict, CounterRead]:
    discovered = parse_ibnetdiscover(text(stage, "ibnetdiscover"))
    views = port_views(parse_iblinkinfo(text(stage, "iblinkinfo")), discovered)
    reading = counter_reading(parse_ibqueryerrors(text(stage, "ibqueryerrors")), views, discovered)
    return discovered, views, reading


@pytest.fixture(scope="module")
def declared() -> FabricGraph:
    """The imported cabling: what the healthy fabric's discovery found."""
    return parse_ibnetdiscover(text("healthy", "ibnetdiscover"))


def failing(results: list[CheckResult]) -> list[str]:
    return sorted(f"{r.name}[{r.param}]" for r in results if r.failed)


def test_healthy_fabric_every_cable_passes(declared: FabricGraph) -> None:
    discovered, views, reading = captured("healthy")
    results = judge(declared, discovered, views, reading, reading, 5.0)
    assert failing(results) == []
    assert len(declared.links) == 16
    assert sorted(r.param for r in results if r.name == LINK_CHECK) == sorted(
        f"{declared.node_name(x.a_guid)}/{x.a_port}-{declared.node_name(x.b_guid)}/{x.b_port}"
        for x in declared.links
    )
    assert {r.outcome for r in results} == {"passed"}


def test_each_fault_is_one_cause_naming_its_cable(declared: FabricGraph) -> None:
    _, _, before = captured("healthy")
    discovered, views, after = captured("faulted")
    results = judge(declared, discovered, views, after, before, 5.0)
    found = diagnose(results, declared)
    assert [(c.what, c.subject) for c in found.causes] == [
        ("cable down", "leaf02 p4 ↔ gpu8 mlx5_0/1"),
        ("cable with errors", "leaf01 p3 ↔ gpu3 mlx5_0/1"),
        ("port degraded", "leaf02 p1 ↔ gpu5 mlx5_0/1"),
    ]
    down, errors, narrow = found.causes
    assert sorted(down.checks) == [
        "test_declared_link_discovered[leaf02/4-gpu8/mlx5_0/1]",
        "test_port_physical_state_linkup[gpu8/mlx5_0/1]",
        "test_port_state_active[gpu8/mlx5_0/1]",
    ]
    assert "state Down, expected Active" in " ".join(r.message for r in results)
    assert errors.evidence == (
        "leaf01 port 3 ↔ gpu3 mlx5_0 port 1: leaf01 port 3 SymbolErrorCounter +500 in 5s "
        "(allowed 12)"
    )
    assert narrow.evidence.startswith(
        "wrong width: gpu5 mlx5_0 port 1 <-> leaf02 port 1 runs 1xHDR"
    )
    assert (found.unexplained, found.errors) == ([], [])
    pulled = next(r for r in results if r.name == COUNTER_CHECK and r.param == "gpu8/mlx5_0/1")
    assert pulled.outcome == "passed"  # its switch end was read, and rose by nothing


def test_counter_rise_within_threshold_passes(declared: FabricGraph) -> None:
    """500 symbol errors in a window of 1,000 minutes on a 200 Gb/s link is within 12/minute."""
    _, _, before = captured("healthy")
    discovered, views, after = captured("faulted")
    results = judge(declared, discovered, views, after, before, 60_000.0)
    assert not [r for r in results if r.name == COUNTER_CHECK and r.failed]


def test_without_an_earlier_reading_counters_are_not_judged(declared: FabricGraph) -> None:
    discovered, views, after = captured("faulted")
    results = judge(declared, discovered, views, after)
    counters = [r for r in results if r.name == COUNTER_CHECK]
    assert {r.outcome for r in counters} == {"skipped"} and len(counters) == 16


def test_incomplete_discovery_reports_missing_cables_as_errors(declared: FabricGraph) -> None:
    """Discovery that reported MAD errors did not prove the cable gone: an error, no cause."""
    _, _, before = captured("healthy")
    discovered, views, after = captured("faulted")
    why = "ibnetdiscover reported MAD errors 3 times: umad_recv failed"
    results = judge(declared, discovered, views, after, before, 5.0, incomplete=why)
    link = next(r for r in results if r.param == "leaf02/4-gpu8/mlx5_0/1")
    assert (link.outcome, link.message.endswith(f"(not confirmed: {why})")) == ("error", True)


def test_unread_counters_are_a_harness_error(declared: FabricGraph) -> None:
    """Both ends of gpu2's cable unread (their PMA failed): an error, not a cable with errors."""
    _, _, before = captured("healthy")
    discovered, views, after = captured("faulted")
    ends = [("leaf01", 2), ("gpu2/mlx5_0", 1)]
    values = {end: v for end, v in after.values.items() if end not in ends}
    unread = dict.fromkeys(ends, "classportinfo query failed on gpu2 mlx5_0, lid 5 port 1")
    results = judge(declared, discovered, views, CounterRead(values, unread), before, 5.0)
    result = next(r for r in results if r.name == COUNTER_CHECK and r.param == "gpu2/mlx5_0/1")
    assert result.outcome == "error"
    assert "counters not read: classportinfo query failed on gpu2 mlx5_0" in result.message
    assert "cable with errors" not in [c.what for c in diagnose([result], declared).causes]


def test_counter_reading_from_ibsim_with_a_pma_failure() -> None:
    """net.hdr captures: the zeros of every port read, the values printed, gpu02 unread."""
    views = port_views(
        parse_iblinkinfo((FIXTURES / "iblinkinfo__ibsimparse__1.txt").read_text()), FabricGraph()
    )
    report = parse_ibqueryerrors((FIXTURES / "ibqueryerrors__ibsimparse__1.txt").read_text())
    reading = counter_reading(report, views, FabricGraph())
    assert reading.unread == {("gpu02", 1): "classportinfo query failed on gpu02, lid 4 port 1"}
    assert reading.values[("leaf01", 4)]["SymbolErrorCounter"] == 37
    assert reading.values[("leaf01", 2)]["PortXmitDiscards"] == 6
    assert reading.values[("gpu03", 1)]["PortRcvErrors"] == 5
    assert set(reading.values[("gpu01", 1)].values()) == {0}


def test_port_views_of_a_real_switch() -> None:
    """A Quantum switch (iblinkinfo -S): down ports Down/Polling, HCA links at 4X EDR."""
    report = parse_iblinkinfo((FIXTURES / "iblinkinfo__magnate3__1.txt").read_text())
    views = port_views(report, FabricGraph())
    states = {(v.state, v.physical_state) for v in views.values()}
    assert states == {("Down", "Polling"), ("Active", "LinkUp")}
    active = [v for v in views.values() if v.state == "Active"]
    assert {(v.width, v.speed) for v in active} >= {("4x", "EDR"), ("4x", "HDR")}


class Replay:
    """Runs nothing: answers each tool with a real capture, a listed number of times failing
    first with a real failure of that tool (the harness's trouble, not the fabric's)."""

    def __init__(self, stage: str, failures: dict[str, list[Completed]]) -> None:
        self.stage, self.failures = stage, failures
        self.calls: list[str] = []

    def __call__(self, argv: list[str], timeout: float) -> Completed:
        tool = argv[0]
        self.calls.append(tool)
        if self.failures.get(tool):
            return self.failures[tool].pop(0)
        out = text(self.stage, tool)
        return Completed(1 if tool == "ibqueryerrors" and "Errors for" in out else 0, out, "")


NO_SM = Completed(0, (FIXTURES / "ibqueryerrors__ibsimparse__2.txt").read_text(), "")


def test_a_tool_failure_is_retried_then_judged_as_usual(declared: FabricGraph) -> None:
    healthy = sweep(declared, Replay("healthy", {}), SweepConfig())
    run = Replay("faulted", {"ibqueryerrors": [NO_SM]})
    outcome = sweep(declared, run, SweepConfig(), before=healthy.capture)
    assert run.calls.count("ibqueryerrors") == 2
    assert outcome.capture.harness == [
        "ibqueryerrors: Query SA failed: Connection timed out; sa call path_query failed"
    ]
    causes = diagnose(outcome.results, declared).causes
    assert [c.what for c in causes] == ["cable down", "cable with errors", "port degraded"]


def test_a_tool_that_keeps_failing_is_a_harness_error_never_a_port(declared: FabricGraph) -> None:
    healthy = sweep(declared, Replay("healthy", {}), SweepConfig())
    run = Replay("faulted", {"ibqueryerrors": [NO_SM] * 3})
    outcome = sweep(declared, run, SweepConfig(attempts=3), before=healthy.capture)
    assert run.calls.count("ibqueryerrors") == 3
    counters = [r for r in outcome.results if r.name == COUNTER_CHECK]
    assert {r.outcome for r in counters} == {"error", "skipped"}
    assert "Query SA failed" in next(r.message for r in counters if r.outcome == "error")
    found = diagnose(outcome.results, declared)
    assert [c.what for c in found.causes] == ["cable down", "port degraded"]
    assert len(found.errors) == 15


def test_discovery_that_never_runs_is_one_harness_error(declared: FabricGraph) -> None:
    panic = (FIXTURES / "ibstat__ibsimparse__5.txt").read_text()
    run = Replay("healthy", {"ibnetdiscover": [Completed(255, "", panic)] * 2})
    outcome = sweep(declared, run, SweepConfig(attempts=2))
    assert run.calls == ["ibnetdiscover", "ibnetdiscover"]
    assert [(r.name, r.outcome) for r in outcome.results] == [("test_fabric_sweep", "error")]
    assert outcome.results[0].message.startswith("ibnetdiscover failed 2 times: exit 255: ")


def test_a_switch_to_switch_cable_with_errors_is_named_by_both_switch_ends(
    declared: FabricGraph,
) -> None:
    """The healthy reading with spine01 port 5's LinkDownedCounter up by 2 (the real zeros and
    the real port, one value changed): one cause naming the leaf-spine cable."""
    discovered, views, before = captured("healthy")
    values = {end: dict(v) for end, v in before.values.items()}
    values[("spine01", 5)]["LinkDownedCounter"] += 2
    results = judge(declared, discovered, views, CounterRead(values, {}), before, 5.0)
    found = diagnose(results, declared)
    assert [(c.what, c.subject) for c in found.causes] == [
        ("cable with errors", "leaf02 p5 ↔ spine01 p5")
    ]
    assert found.causes[0].evidence.endswith(
        "spine01 port 5 LinkDownedCounter +2 in 5s (allowed 0)"
    )


def test_a_saturated_counter_fails_even_when_it_did_not_move(declared: FabricGraph) -> None:
    """A counter stuck at its largest value hides every new error: judged as counters.judge
    judges it (saturated), though both readings are equal."""
    discovered, views, before = captured("healthy")
    values = {end: dict(v) for end, v in before.values.items()}
    values[("leaf01", 2)]["SymbolErrorCounter"] = 0xFFFF
    stuck = CounterRead(values, {})
    results = judge(declared, discovered, views, stuck, stuck, 5.0)
    assert failing(results) == ["test_port_error_counters[gpu2/mlx5_0/1]"]
    message = next(r.message for r in results if r.failed)
    assert message.endswith("saturated: clear it with perfquery -R)")
