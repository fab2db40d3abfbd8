"""The Slurm health program (fabric.verify.health): PortInfo read from real smpquery output, its
configuration from the lab spec, the drain reason, slurm.conf's health settings from the hand-off,
and the program itself run here, where no HCA exists: it names the port, and a bad
configuration is one line with exit 2. Its run against ibsim is
tests/integration/test_counters_ibsim.py; in a lab with Slurm, tests/integration/test_health_lab.py.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fabric.handoff.health import health_configs
from fabric.handoff.vars import HEALTH_PROGRAM, role_vars_from_spec
from fabric.model.cluster import ClusterModel
from fabric.spec import load_spec
from fabric.state import REPO_ROOT
from fabric.verify import health
from fabric.verify.plan import CheckPlan

FIXTURES = REPO_ROOT / "tests" / "fixtures"
PROGRAM = REPO_ROOT / "fabric" / "verify" / "health.py"


def test_portinfo_fields_and_speed_from_real_smpquery() -> None:
    info = health.fields((FIXTURES / "smpquery__ibsim_lab__1.txt").read_text())
    assert info["LinkState"] == "Active" and info["LinkWidthActive"] == "4X"
    assert info["NeighborMTU"] == "2048" and info["SMLid"] == "1"
    assert health.speed_name(info) == "HDR"
    assert health.speed_name({"LinkSpeedActive": "10.0 Gbps"}) == "QDR"


def test_health_config_names_each_port_and_its_cable() -> None:
    spec = load_spec(REPO_ROOT / "Pulumi.lab.yaml")
    plan = CheckPlan(spec=spec, hosts=list(spec.hosts))
    config = health_configs(ClusterModel(spec))["gpu03"]
    (port,) = config["ports"]
    want = next(p for p in plan.ib_ports if p.host == "gpu03")
    assert port["cable"] == f"{want.switch} p{want.switch_port}"
    assert (port["ca"], port["device"], port["width"], port["speed"]) == (
        "ibsim0",
        "mlx5_0",
        "4X",
        "HDR",
    )
    assert port["mtu"] == plan.ib_mtu and config["env_file"] == "/etc/environment"


def test_reason_names_the_first_failure_and_counts_the_rest() -> None:
    assert health.reason_of(["mlx5_0/1 Down (leaf01 p3)"]) == "railyard: mlx5_0/1 Down (leaf01 p3)"
    assert health.reason_of(["a", "b", "c"]) == "railyard: a (+2 more)"


def test_handoff_sets_slurm_health_settings_from_the_spec() -> None:
    spec = load_spec(REPO_ROOT / "Pulumi.lab.yaml")
    out = role_vars_from_spec(spec)
    extra = out["slurm_extra_config"]
    assert extra["HealthCheckProgram"] == HEALTH_PROGRAM
    assert (extra["HealthCheckInterval"], extra["HealthCheckNodeState"]) == (60, "ANY")
    assert set(out["railyard_node_health"]) == set(spec.hosts_with_role("compute"))
    quiet = spec.model_copy(update={"health": spec.health.model_copy(update={"interval": 0})})
    assert "HealthCheckProgram" not in role_vars_from_spec(quiet).get("slurm_extra_config", {})


def _config(tmp_path: Path) -> Path:
    spec = load_spec(REPO_ROOT / "Pulumi.lab.yaml")
    config = health_configs(ClusterModel(spec))["gpu03"]
    del config["env_file"]
    path = tmp_path / "health.json"
    path.write_text(json.dumps(config))
    return path


@pytest.mark.skipif(shutil.which("smpquery") is None, reason="infiniband-diags not installed")
def test_program_without_an_hca_names_the_port(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(PROGRAM), "--check", "--json", "--config", str(_config(tmp_path))]
        + ["--state", str(tmp_path / "state.json")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=PROGRAM.parent,
        env={"PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 3, done.stderr  # a port that cannot be read: a harness error
    out = json.loads(done.stdout)
    assert out["failures"] == []
    assert out["harness_errors"][0].startswith("mlx5_0/1 not readable (leaf01 p3)")
    assert out["action"] == "checked only"


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (None, "cannot read it"),
        ("{", "not JSON"),
        ('{"node": "gpu03"}', "no 'ports' field"),
        ('{"node": "g", "ports": [{"ca": "x"}]}', "ports[0] has no 'device' field"),
    ],
)
def test_bad_configuration_is_one_line_and_exit_2(
    tmp_path: Path, content: str | None, says: str
) -> None:
    path = tmp_path / "health.json"
    if content is not None:
        path.write_text(content)
    done = subprocess.run(
        [sys.executable, str(PROGRAM), "--config", str(path)],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
        cwd=PROGRAM.parent,
    )
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and says in done.stderr, done.stderr


def _sleeper(on_term: str) -> list[str]:
    """A one-process tool that sleeps 30 s and does ``on_term`` (Python) on SIGTERM."""
    code = (
        "import signal, sys, time\n"
        f"signal.signal(signal.SIGTERM, lambda *_: ({on_term}))\n"
        "time.sleep(30)\n"
    )
    return [sys.executable, "-c", code]


def test_a_tool_that_overruns_gets_sigterm_first(tmp_path: Path) -> None:
    """It may clean up (in the lab: detach from ibsim) before it dies: exit 124."""
    mark = tmp_path / "terminated"
    argv = _sleeper(f"open({str(mark)!r}, 'w').write('term'), sys.exit(143)")
    rc, text = health.run(argv, timeout=0.5)
    assert (rc, text) == (124, f"{sys.executable} timed out after 0.5s")
    assert mark.read_text() == "term"


def test_a_tool_that_ignores_sigterm_is_killed_after_the_grace(tmp_path: Path) -> None:
    mark = tmp_path / "terminated"
    rc, text = health.run(_sleeper(f"open({str(mark)!r}, 'w').write('ignored')"), timeout=0.5)
    assert rc == 124, text
    assert mark.read_text() == "ignored"  # it got SIGTERM, stayed, and was killed


def test_a_tool_that_cannot_start_is_127() -> None:
    rc, text = health.run(["/nonexistent/railyard-tool"])
    assert rc == 127 and text.startswith("/nonexistent/railyard-tool: "), text


def test_failover_window_follows_the_subnet_managers_polling() -> None:
    """Polling timeout x retries + margin: the lab's short polling (fabric.handoff.vars), the
    role's defaults elsewhere (kept equal to roles/subnet_manager/defaults/main.yml)."""
    import yaml

    from fabric.handoff.health import (
        SM_POLLING_RETRIES,
        SM_POLLING_TIMEOUT_MS,
        sm_failover_seconds,
    )

    defaults = yaml.safe_load(
        (REPO_ROOT / "roles" / "subnet_manager" / "defaults" / "main.yml").read_text()
    )
    assert defaults["subnet_manager_sminfo_polling_timeout"] == SM_POLLING_TIMEOUT_MS
    assert defaults["subnet_manager_polling_retry_number"] == SM_POLLING_RETRIES
    lab = load_spec(REPO_ROOT / "Pulumi.lab.yaml")  # 2 s x 2 polls, sweep_interval 10
    assert sm_failover_seconds(lab) == 2 * 2 + 2 * 10
    assert health_configs(ClusterModel(lab))["gpu03"]["sm_failover_s"] == 24
    site = load_spec(REPO_ROOT / "Pulumi.baremetal-ib.example.yaml")
    ib = site.fabric.infiniband
    assert ib is not None
    assert sm_failover_seconds(site) == 10 * 4 + max(10, 2 * ib.sweep_interval)


def _sm_absent(tmp_path: Path, now: float, window: float = 24.0) -> health.Checker:
    """One run at ``now`` in which no SM answered; its state saved as a run saves it."""
    config = {"node": "gpu03", "ports": [], "sm_failover_s": window}
    checker = health.Checker(config, tmp_path / "state.json", now=now)
    checker.sm_absent("sminfo: iberror: failed: query")
    checker._counters()
    return checker


def test_an_sm_absence_within_the_failover_window_drains_nothing(tmp_path: Path) -> None:
    """A failover's gap (no SM answers until the STANDBY takes over) is a harness error while
    it is shorter than the window, timed from the first run that saw it; past it, a failure."""
    first = _sm_absent(tmp_path, 1000.0)
    assert first.failures == []
    assert first.harness_errors == [
        "no subnet manager answers for 0s, within the 24s failover window (not judged yet): "
        "sminfo: iberror: failed: query"
    ]
    later = _sm_absent(tmp_path, 1020.0)
    assert later.failures == [] and "for 20s, within the 24s" in later.harness_errors[0]
    past = _sm_absent(tmp_path, 1025.0)
    assert past.harness_errors == []
    assert past.failures == [
        "no subnet manager answers: sminfo: iberror: failed: query (for 25s, past the 24s "
        "failover window)"
    ]


def test_without_a_failover_window_an_absent_sm_fails_at_once(tmp_path: Path) -> None:
    checker = _sm_absent(tmp_path, 1000.0, window=0)
    assert checker.failures == ["no subnet manager answers: sminfo: iberror: failed: query"]


def test_if_drained_does_nothing_on_a_node_railyard_did_not_drain(tmp_path: Path) -> None:
    """What a converge runs on every compute node: here no slurmctld answers (no scontrol),
    so the node is not known to be drained by railyard, and nothing runs."""
    done = subprocess.run(
        [sys.executable, str(PROGRAM), "--if-drained", "--config", str(_config(tmp_path))]
        + ["--state", str(tmp_path / "state.json")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=PROGRAM.parent,
        env={"PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == (
        "railyard-health: not drained by railyard (slurmctld not reachable): nothing to do"
    )
    assert not (tmp_path / "state.json").exists()  # no tool ran, no reading kept


#: smpquery's own failure, captured against ibsim (exit 255): the MAD layer gave up.
_MADRPC_FAILED = (FIXTURES / "smpquery__ibsim_lab__3.txt").read_text()


def _checker(tmp_path: Path, now: float) -> health.Checker:
    config = json.loads(_config(tmp_path).read_text())
    config["sm_failover_s"] = 24.0
    return health.Checker(config, tmp_path / "state.json", now=now)


def test_an_unreadable_port_is_a_harness_error_and_never_drains(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """gpu08 on the lab: ``ibwarn: mad_rpc: _do_madrpc failed`` on the port's own PortInfo.
    Nothing was learnt about the port: a harness error in every run, an hour of them too, and
    the program never calls scontrol for it (exit 3, nothing changed)."""
    assert "_do_madrpc failed" in _MADRPC_FAILED
    calls: list[list[str]] = []

    def tool(argv: list[str], timeout: float = 0, env: object = None) -> tuple[int, str]:
        calls.append(list(argv))
        if argv[0] == "scontrol":
            raise AssertionError(f"scontrol called for a misread: {argv}")
        return 255, _MADRPC_FAILED

    monkeypatch.setattr(health, "run", tool)
    monkeypatch.setattr(health.signal, "alarm", lambda seconds: 0)  # main's whole-run alarm
    for minute in range(60):
        checker = _checker(tmp_path, 1000.0 + 60 * minute)
        assert checker.check() == []
        assert checker.harness_errors[0] == (
            "mlx5_0/1 not readable (leaf01 p3): ibwarn: [7857] mad_rpc: _do_madrpc failed; "
            "dport (Lid 999)"
        )
    config = tmp_path / "health.json"
    code = health.main(["--config", str(config), "--state", str(tmp_path / "state.json")])
    assert code == 3
    assert not any(c[0] in ("scontrol", "sminfo") for c in calls)


def test_an_sm_absence_is_timed_afresh_after_runs_that_did_not_ask(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The failover drill: the SM stops (no SM answers: within the window), a cable is pulled
    (the port fails, so sminfo is not asked), re-cabled, and in the converge's re-sweep one
    sminfo goes unanswered. That gap began now, not at the failover minutes ago: a harness
    error, not 'no subnet manager answers ... past the window' (gpu07's drain)."""
    sminfo_failed = (FIXTURES / "sminfo__ibsimparse__3.txt").read_text()
    monkeypatch.setattr(health, "run", lambda argv, timeout=0, env=None: (255, sminfo_failed))
    healthy = lambda self, port: None  # noqa: E731 - the port read and found Active
    down = lambda self, port: self.fail("mlx5_0/1 Down (leaf01 p3)")  # noqa: E731
    monkeypatch.setattr(health.Checker, "_port", healthy)
    first = _checker(tmp_path, 1000.0)
    assert first.check() == [] and "within the 24s failover window" in first.harness_errors[0]
    monkeypatch.setattr(health.Checker, "_port", down)
    pulled = _checker(tmp_path, 1010.0)
    assert pulled.check() == ["mlx5_0/1 Down (leaf01 p3)"]
    monkeypatch.setattr(health.Checker, "_port", healthy)
    converged = _checker(tmp_path, 1300.0)
    assert converged.check() == []
    assert converged.harness_errors[0].startswith("no subnet manager answers for 0s")


# -- a subnet manager change: its re-sweep's transmit discards are not the cable's ------------

_SMINFO_A = (FIXTURES / "sminfo__ibsim_smmodes__1.txt").read_text()  # MASTER 0x2c90301000000
_SMINFO_B = (FIXTURES / "sminfo__ibsim_extsm__1.txt").read_text()  # MASTER 0x2c903000000f1


@pytest.mark.parametrize("name", sorted(p.name for p in FIXTURES.glob("sminfo__*.txt")))
def test_the_node_side_sm_guid_is_the_parsers(name: str) -> None:
    from fabric.parsers.common import normalize_guid
    from fabric.parsers.sminfo import parse

    text = (FIXTURES / name).read_text()
    parsed = parse(text)
    if parsed.sm_guid is None:  # a failure form (no SM answered): the reader finds none either
        assert health.sm_guid(text) is None
    else:
        assert normalize_guid(health.sm_guid(text) or "") == parsed.sm_guid


def _run_with(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    now: float,
    sminfo: str,
    discards: int,
    symbol_errors: int = 0,
    rc: int = 0,
) -> health.Checker:
    """One run of gpu03's checker: its port Active (the read stubbed), the switch end's
    counters as given, and ``sminfo`` answering ``sminfo`` (real output)."""

    def port(self: health.Checker, port: dict[str, object]) -> None:
        self.readings["mlx5_0/1|leaf01 p3"] = {
            "SymbolErrorCounter": symbol_errors,
            "PortXmitDiscards": discards,
        }

    monkeypatch.setattr(health.Checker, "_port", port)
    monkeypatch.setattr(health, "run", lambda argv, timeout=0, env=None: (rc, sminfo))
    checker = _checker(tmp_path, now)  # failover window 24 s
    checker.check()
    return checker


def test_discards_while_a_new_master_resweeps_warn_and_never_drain(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The failover drill's gpu08/hh2 case: the MASTER changes between two runs, and the
    never-faulted node's switch port shows PortXmitDiscards +3. Within the failover window after
    the change that is a warning; a symbol error in the same runs still fails, and discards
    after the window fail again."""
    assert _run_with(tmp_path, monkeypatch, 1000.0, _SMINFO_A, 0).failures == []
    assert _run_with(tmp_path, monkeypatch, 1010.0, _SMINFO_A, 0).failures == []
    changed = _run_with(tmp_path, monkeypatch, 1020.0, _SMINFO_B, 3)
    assert changed.failures == []
    assert changed.warnings == [
        "leaf01 p3: PortXmitDiscards +3 in 10s (allowed 0), while a new MASTER SM re-sweeps "
        "(the MASTER went or changed 0s ago, 24s window): not judged"
    ]
    after = _run_with(tmp_path, monkeypatch, 1030.0, _SMINFO_B, 5)  # counted from 1020: held
    assert after.failures == [] and "re-sweeps" in after.warnings[0]
    physical = _run_with(tmp_path, monkeypatch, 1040.0, _SMINFO_B, 5, symbol_errors=400)
    assert len(physical.failures) == 1
    assert physical.failures[0].startswith("leaf01 p3 errors: SymbolErrorCounter +400 in 10s")
    # counted from 1040, within 1020 + 24 s: still the re-sweep's
    assert _run_with(tmp_path, monkeypatch, 1050.0, _SMINFO_B, 6, 400).failures == []
    past = _run_with(tmp_path, monkeypatch, 1060.0, _SMINFO_B, 9, 400)  # counted from 1050
    assert past.failures == ["leaf01 p3 errors: PortXmitDiscards +3 in 10s (allowed 0)"]
    assert past.warnings == []


def test_discards_with_the_same_master_fail_as_ever(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert _run_with(tmp_path, monkeypatch, 1000.0, _SMINFO_A, 0).failures == []
    same = _run_with(tmp_path, monkeypatch, 1010.0, _SMINFO_A, 3)
    assert same.failures == ["leaf01 p3 errors: PortXmitDiscards +3 in 10s (allowed 0)"]
    assert same.warnings == []


def test_discards_after_an_sm_absence_warn_within_the_window(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No SM answered in the last run (the failover's gap, a harness error): the next run's
    discards come from the new MASTER's sweep."""
    absent = (FIXTURES / "sminfo__ibsimparse__3.txt").read_text()
    assert _run_with(tmp_path, monkeypatch, 1000.0, _SMINFO_A, 0).failures == []
    gap = _run_with(tmp_path, monkeypatch, 1010.0, absent, 0, rc=255)
    assert gap.failures == [] and "within the 24s failover window" in gap.harness_errors[0]
    back = _run_with(tmp_path, monkeypatch, 1020.0, _SMINFO_B, 2)
    assert back.failures == [] and "PortXmitDiscards +2" in back.warnings[0]
