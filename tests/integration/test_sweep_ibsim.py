"""The fabric sweep against a real ibsim + OpenSM: a 16-host fat tree swept healthy (nothing
fails), then with three faults injected (a pulled cable, a link at 1x, a counter rise), each
named by the causes-first diagnosis as its own cause on its own cable. Bounded: ibsim, OpenSM and
every tool run have timeouts, and the whole test stays well under 60 s."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import testinfra

from fabric.lab.simfabric import Faults, SimFabric, fat_tree
from fabric.topology.ibsim import ibsim_limits, render_net, sim_host, simulated
from fabric.verify.causes import diagnose, summary
from fabric.verify.facts import keep_255
from fabric.verify.sweep import SweepConfig, local_runner, shell_runner, sweep

pytestmark = pytest.mark.integration

HOSTS = 16
BUDGET_S = 60.0


def test_sweep_names_each_injected_fault(tmp_path: Path) -> None:
    began = time.monotonic()
    graph = fat_tree(HOSTS)
    declared = simulated(graph)
    first = next(iter(graph.cas.values()))
    vantage = sim_host(first.host or "", first.device or "")
    config = SweepConfig(cache=str(tmp_path / "sweep.cache"), tool_timeout_s=20.0)
    with SimFabric(render_net(graph), tmp_path, vantage, ibsim_limits(graph)) as fabric:
        run = local_runner(fabric.env(vantage))
        healthy = sweep(declared, run, config)
        assert [r for r in healthy.results if r.failed] == []
        assert (
            len([r for r in healthy.results if r.outcome == "passed"])
            == 3 * len(declared.links) + 1
        )

        faults = Faults.pick(declared, first.host or "")
        fabric.inject(faults, vantage)
        faulted = sweep(declared, run, config, before=healthy.capture)

    found = diagnose(faulted.results, declared)
    got = {(c.what, c.subject) for c in found.causes}
    want = {
        (
            "cable down",
            f"{faults.pulled.switch.name} p{faults.pulled.switch_port} ↔ {faults.pulled.host} mlx5_0/1",
        ),
        (
            "port degraded",
            f"{faults.narrow.switch.name} p{faults.narrow.switch_port} ↔ {faults.narrow.host} mlx5_0/1",
        ),
        (
            "cable with errors",
            f"{faults.counter.switch.name} p{faults.counter.switch_port} ↔ {faults.counter.host} mlx5_0/1",
        ),
    }
    report = summary(faulted.results, found.causes)
    assert got == want, report
    assert (found.unexplained, found.errors) == ([], []), report
    assert faulted.capture.harness == []
    assert time.monotonic() - began < BUDGET_S


def test_the_checks_runner_sweeps_through_testinfra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The runner the check suite uses (``timeout``, exit 255 kept apart, argv quoted) through a
    real testinfra host (the local backend, with umad2sim's environment), on a real fabric."""
    graph = fat_tree(8)
    first = next(iter(graph.cas.values()))
    vantage = sim_host(first.host or "", first.device or "")
    with SimFabric(render_net(graph), tmp_path, vantage, ibsim_limits(graph)) as fabric:
        for name, value in fabric.env(vantage).items():
            monkeypatch.setenv(name, value)
        local = testinfra.get_host("local://")

        def shell(command: str) -> tuple[int, str, str]:  # as the check's SSH connection runs it
            result = local.run(keep_255(command))
            return result.rc, result.stdout, result.stderr

        run = shell_runner(shell)
        config = SweepConfig(cache=str(tmp_path / "sweep c.cache"), tool_timeout_s=20.0)
        outcome = sweep(simulated(graph), run, config, window_s=0.5)
        assert [r for r in outcome.results if r.outcome != "passed"] == []
        assert len(outcome.results) == 4 * len(graph.links) + 1  # counters read twice: judged
        missing = run(["perfquery", "-t", "50", "999", "1"], 20.0)
    assert missing.rc == 254  # perfquery's own exit 255, told apart from an SSH failure
