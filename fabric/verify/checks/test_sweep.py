"""The fabric sweep: every declared InfiniBand cable judged with MADs from one vantage host.

``fabric.verify.sweep`` runs rdma-core's tools on the observer host (over this check's SSH
connection, each run bounded by ``timeout``), reads the error counters twice
``health.sample_seconds`` apart, and judges every cable: discovered as declared (far end,
width, speed), both ports Active/LinkUp, counter rises within the thresholds. This family runs
beside the per-host cable checks for now; a failure lists each failing cable's own check, and
records each cable's subject, so the report marks the cables it names.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from fabric.verify.facts import Facts, keep_255
from fabric.verify.harness import HarnessError
from fabric.verify.plan import CheckPlan
from fabric.verify.sweep import SweepConfig, shell_runner, sweep

pytestmark = pytest.mark.family("sweep")

#: Failing cables listed in one failure message (the rest are counted).
SHOWN = 20


def _shell(facts: Facts, host: str) -> Callable[[str], tuple[int, str, str]]:
    """A command on ``host`` over the check's SSH connection (a tool's exit 255 kept apart
    from an SSH failure)."""

    def run(command: str) -> tuple[int, str, str]:
        result = facts.connect(host).run(keep_255(command))
        return result.rc, result.stdout, result.stderr

    return run


def test_fabric_sweep(
    host,
    facts: Facts,
    plan: CheckPlan,
    sweep_host: str,
    record_property: Callable[[str, object], None],
) -> None:
    """Every declared cable passes the sweep's judging; tools that could not look are errors."""
    declared = plan.expected_graph
    assert declared is not None  # the plan generates this family only with a declared graph
    spec = plan.spec
    overrides = spec.health.counters.model_dump()
    outcome = sweep(
        declared,
        shell_runner(_shell(facts, sweep_host)),
        SweepConfig(cache="/tmp/railyard-sweep.cache"),
        window_s=spec.health.sample_seconds,
        overrides=overrides,
    )
    failed = [r for r in outcome.results if r.outcome == "failed"]
    errors = [r for r in outcome.results if r.outcome == "error"]
    for r in failed:
        for subject in r.subjects:
            record_property("subject", subject)
    lines = [f"{r.name}[{r.param}]: {r.message}" for r in failed[:SHOWN]]
    more = f"; and {len(failed) - SHOWN} more" if len(failed) > SHOWN else ""
    assert not failed, (
        f"{len(failed)} of {len(outcome.results)} sweep checks failed: " + "; ".join(lines) + more
    )
    if errors:
        shown = "; ".join(f"{r.name}[{r.param}]: {r.message}" for r in errors[:SHOWN])
        raise HarnessError(f"the sweep could not judge {len(errors)} checks: {shown}")
