"""Error counters and the Slurm health program against real ibsim + OpenSM (no containers).

The lab spec's fabric runs in a private ibsim (its own abstract socket, no network, so no
subnet or port range is taken) swept by a real OpenSM; ibsim's console (``PerformanceSet``,
``Unlink``, ``Link``, read from its stdin) injects the faults. The tools are the real ones on
this machine, preloaded with umad2sim as each host's HCA; only SSH is left out: the sweep's
tools run on this machine as the vantage host's HCA (``SIM_HOST``).

1. The counter check (the fabric sweep's, ``fabric/verify/checks/test_sweep.py``, from one
   vantage host): after one cable's switch port gets symbol errors between two sweeps, it
   names that cable and no other.
2. The health program (``fabric/verify/health.py``), as slurmd would run it on gpu03 (with
   ``--check``: no Slurm here): healthy, then a pulled cable named with its switch port,
   then rising symbol errors named; its run time is recorded (not judged).
"""

from __future__ import annotations

import importlib
import json
import os
import shutil
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from fabric.handoff.health import health_config
from fabric.lab import umadshim
from fabric.spec import ClusterSpec
from fabric.state import REPO_ROOT
from fabric.topology.from_spec import graph_from_spec
from fabric.topology.ibsim import ibsim_limits, render_net, sim_host
from fabric.verify.plan import CheckPlan
from fabric.verify.sweep import local_runner

pytestmark = pytest.mark.integration

UMAD2SIM = "/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so"
HEALTH = REPO_ROOT / "fabric" / "verify" / "health.py"
#: A libibumad client that attaches to ibsim and holds its slot until stdin closes.
HOLDER = REPO_ROOT / "tests" / "unit" / "umad_client.py"


@dataclass
class Sim:
    """A private ibsim with the lab fabric, its console on stdin, swept by OpenSM."""

    proc: subprocess.Popen[str]
    workdir: Path
    env: dict[str, str]
    plan: CheckPlan

    def console(self, command: str) -> str:
        """Send one console command; return what ibsim logged after it."""
        log = self.workdir / "ibsim.log"
        before = log.stat().st_size
        assert self.proc.stdin is not None
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            text = log.read_text()[before:]
            if "sim>" in text:
                return text
            time.sleep(0.05)
        raise AssertionError(f"ibsim gave no prompt after {command!r}")

    def wait_active(self, host: str, timeout: float = 20.0) -> None:
        """Wait until OpenSM's next sweep brought ``host``'s port back to Active."""
        env = dict(self.env, SIM_HOST=sim_host(host, "mlx5_0"))
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            out = subprocess.run(
                ["ibstat"], env=env, capture_output=True, text=True, timeout=10, check=False
            )
            if "State: Active" in out.stdout:
                return
            time.sleep(0.5)
        raise AssertionError(f"{host}'s port is not Active {timeout:.0f}s after re-linking")


def lab_plan() -> CheckPlan:
    data = yaml.safe_load((REPO_ROOT / "Pulumi.lab.yaml").read_text())
    spec = ClusterSpec.model_validate(data["config"]["railyard:cluster"])
    spec = spec.model_copy(
        update={"health": spec.health.model_copy(update={"sample_seconds": 1.0})}
    )
    return CheckPlan(spec=spec, hosts=list(spec.hosts))


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sim]:
    for tool in ("ibsim", "opensm", "perfquery", "smpquery", "sminfo"):
        if not shutil.which(tool):
            pytest.skip(
                f"{tool} is not installed (apt-get install ibsim-utils opensm infiniband-diags)"
            )
    workdir = tmp_path_factory.mktemp("ibsim")
    plan = lab_plan()
    graph = graph_from_spec(plan.spec)
    (workdir / "lab.net").write_text(render_net(graph))
    env = dict(
        os.environ,
        IBSIM_SOCKNAME=f"railyard-{uuid.uuid4().hex[:12]}",
        LD_PRELOAD=UMAD2SIM,
        OSM_CACHE_DIR=str(workdir),
    )
    sim_env = {k: v for k, v in env.items() if k != "LD_PRELOAD"}
    log = open(workdir / "ibsim.log", "w")
    proc = subprocess.Popen(
        ["ibsim", *ibsim_limits(graph), "-s", str(workdir / "lab.net")],
        env=sim_env,
        stdin=subprocess.PIPE,
        stdout=log,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 10
        while "Network simulator ready" not in (workdir / "ibsim.log").read_text():
            assert proc.poll() is None, (workdir / "ibsim.log").read_text()
            assert time.monotonic() < deadline, "ibsim did not start within 10 s"
            time.sleep(0.1)
        # A running OpenSM (as in the lab), sweeping every 2 s: sminfo must find a master.
        osm_log = workdir / "opensm.log"
        opensm = subprocess.Popen(
            ["opensm", "-s", "2", "-f", str(osm_log)],
            env=dict(env, SIM_HOST=sim_host("sm1", "mlx5_0")),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            deadline = time.monotonic() + 60
            ask = dict(env, SIM_HOST=sim_host("gpu01", "mlx5_0"))
            while True:  # the log is not flushed while OpenSM runs: ask for the master
                assert opensm.poll() is None, "OpenSM exited"
                found = subprocess.run(
                    ["sminfo"], env=ask, capture_output=True, text=True, timeout=10, check=False
                )
                if "SMINFO_MASTER" in found.stdout:
                    break
                assert time.monotonic() < deadline, f"no master SM in 60 s: {found.stdout}"
                time.sleep(0.5)
            yield Sim(proc=proc, workdir=workdir, env=env, plan=plan)
        finally:
            opensm.terminate()
            opensm.wait(timeout=10)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        log.close()


@pytest.fixture(scope="module")
def sweep_checks(request: pytest.FixtureRequest) -> Any:
    """The shipped check module (its ``family`` marker registered, as its conftest does)."""
    request.config.addinivalue_line("markers", "family(name): the check family")
    return importlib.import_module("fabric.verify.checks.test_sweep")


def _counter_failures(
    sim: Sim, sweep_checks: Any, between: Callable[[], None] | None = None
) -> dict[str, str]:
    """Sweep the fabric from the plan's vantage host, run ``between``, sweep again; run the
    counter check over every declared cable; cable id -> its failure message."""
    observer = sim.plan.sweep_hosts[0]
    run = local_runner(dict(sim.env, SIM_HOST=sim_host(observer, "mlx5_0")))
    cache = str(sim.workdir / "sweep.cache")
    first = sweep_checks.run_sweep(sim.plan, run, counters=False, cache=cache)
    if between is not None:
        between()
    swept = sweep_checks.Swept.of(
        sweep_checks.run_sweep(sim.plan, run, before=first.capture, cache=cache)
    )
    failures = {}
    for cable in sim.plan.swept_cables:
        try:
            sweep_checks.test_port_error_counters(None, swept, cable, lambda *_: None)
        except AssertionError as err:
            failures[cable.port] = str(err)
    return failures


def test_counter_check_names_the_cable_with_symbol_errors_and_no_other(
    sim: Sim, sweep_checks: Any
) -> None:
    assert _counter_failures(sim, sweep_checks) == {}
    gpu03 = next(p for p in sim.plan.counter_ports if p.host == "gpu03")
    bump = f'PerformanceSet "{gpu03.switch}"[{gpu03.switch_port}] PortCounters.SymbolErrorCounter='
    try:  # between the sweep's two readings, as a failing cable would
        failures = _counter_failures(sim, sweep_checks, lambda: sim.console(bump + "400"))
    finally:
        sim.console(bump + "0")
    assert list(failures) == [gpu03.id], failures
    cable = f"{gpu03.switch} port {gpu03.switch_port} ↔ gpu03 mlx5_0 port 1"
    assert failures[gpu03.id].startswith(f"{cable}: ")
    assert "SymbolErrorCounter +400" in failures[gpu03.id]


def _health(
    sim: Sim, tmp: Path, host: str = "gpu03", preload: str = UMAD2SIM
) -> tuple[int, dict[str, Any], float]:
    config = health_config(sim.plan.spec, host, sim.plan.ib_ports, sim.plan.expected_graph)
    env_file = tmp / "environment"
    env_file.write_text(
        f"LD_PRELOAD={preload}\nIBSIM_SOCKNAME={sim.env['IBSIM_SOCKNAME']}\n"
        f"SIM_HOST={sim_host(host, 'mlx5_0')}\n"
    )
    config["env_file"] = str(env_file)
    (tmp / "health.json").write_text(json.dumps(config))
    start = time.monotonic()
    done = subprocess.run(
        [
            "python3",
            str(HEALTH),
            "--check",
            "--json",
            "--config",
            str(tmp / "health.json"),
            "--state",
            str(tmp / "state.json"),
        ],
        env={"PATH": "/usr/bin:/bin"},  # slurmd gives a health check next to no environment
        capture_output=True,
        text=True,
        timeout=30,
        cwd=HEALTH.parent,
        check=False,
    )
    took = time.monotonic() - start
    assert done.returncode in (0, 1, 3), done.stderr
    return done.returncode, json.loads(done.stdout), took


def test_health_program_passes_names_a_pulled_cable_and_rising_errors(
    sim: Sim, tmp_path: Path
) -> None:
    port = next(p for p in sim.plan.counter_ports if p.host == "gpu03")
    rc, healthy, took = _health(sim, tmp_path)
    assert (rc, healthy["failures"]) == (0, []), healthy
    times = [took]
    for _ in range(4):
        rc, again, took = _health(sim, tmp_path)
        assert rc == 0, again
        times.append(took)
    (sim.workdir.parent / "health_times.json").write_text(json.dumps(times))
    print(f"health program run times (s): {[round(t, 3) for t in times]}")  # recorded only

    sim.console(f'Unlink "{sim_host("gpu03", "mlx5_0")}"[1]')
    try:
        rc, down, _ = _health(sim, tmp_path)
        assert rc == 1
        assert down["failures"][0] == f"mlx5_0/1 Down ({port.switch} p{port.switch_port})"
    finally:
        sim.console(f'Link "{sim_host("gpu03", "mlx5_0")}"[1] "{port.switch}"[{port.switch_port}]')
        sim.wait_active("gpu03")
    rc, back, _ = _health(sim, tmp_path)
    assert (rc, back["failures"]) == (0, []), back

    sim.console(
        f'PerformanceSet "{port.switch}"[{port.switch_port}] PortCounters.SymbolErrorCounter=900'
    )
    try:
        rc, erring, _ = _health(sim, tmp_path)
    finally:
        sim.console(
            f'PerformanceSet "{port.switch}"[{port.switch_port}] PortCounters.SymbolErrorCounter=0'
        )
    assert rc == 1
    assert erring["failures"] == [
        f"{port.switch} p{port.switch_port} errors: SymbolErrorCounter +900 in "
        + erring["failures"][0].split(" in ", 1)[1]
    ]


def test_a_tool_that_cannot_finish_is_a_harness_error_not_a_fabric_failure(
    sim: Sim, tmp_path: Path
) -> None:
    """What drained 16 and 19 nodes of the 16- and 32-node bench labs: every ibsim client slot
    taken, the health program's smpquery waits for one (the lab's umad shim) past its 3 s and is
    killed. That says nothing about the fabric: exit 3, a harness error naming the port, no
    failure (slurmd's run would neither drain nor resume). Once a slot is free, it passes."""
    preload = f"{umadshim.build()}:{UMAD2SIM}"
    env = dict(sim.env, LD_PRELOAD=preload, RAILYARD_SIM_CONNECT_WAIT="0")
    holders: list[subprocess.Popen[str]] = []
    try:
        for i in range(12):  # ibsim serves 10; OpenSM holds one: fill the rest
            proc = subprocess.Popen(
                ["python3", str(HOLDER), "hold"],
                env=dict(env, SIM_HOST=sim_host(f"gpu0{1 + i % 4}", "mlx5_0")),
                cwd=sim.workdir,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            assert proc.stdout is not None
            if proc.stdout.readline().strip() != "ready":
                proc.communicate(timeout=10)
                break
            holders.append(proc)
        else:
            raise AssertionError("ibsim took 12 clients: no slot limit to fill")
        rc, out, took = _health(sim, tmp_path, preload=preload)
        assert rc == 3, out
        assert out["failures"] == []
        assert out["harness_errors"][0].startswith("mlx5_0/1 (leaf"), out
        assert "timed out after 3s" in out["harness_errors"][0], out
        assert took < 15, took
    finally:
        for proc in holders:  # a clean exit detaches from ibsim (a killed one keeps its slot)
            proc.communicate(input="", timeout=10)
    rc, healthy, _ = _health(sim, tmp_path, preload=preload)
    assert (rc, healthy["failures"], healthy["harness_errors"]) == (0, [], []), healthy
