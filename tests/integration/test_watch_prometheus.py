"""``python -m fabric watch`` scraped by a real Prometheus that loads the shipped alert rules
(monitoring/railyard-alerts.yml): a pulled cable shows down in PromQL, fires
``RailyardCableDown`` and is up again once it is cabled back; symbol errors set on one switch
port show as a ``rate()`` of ``railyard_port_symbol_errors_total`` whose labels name that
cable, and fire ``RailyardPortErrorsRising``. The lab has one SM and runs no Slurm, so
``RailyardSubnetManagerChanged`` and ``RailyardNodeDrained`` are proven by ``promtool test
rules`` only (tests/unit/test_alert_rules.py), and watch runs with ``--no-slurm``.

The lab: two compute nodes and one SM on one leaf, the ``subnet_manager`` role starting the
OpenSM (no full hand-off). ``fabric watch`` runs as a process against the lab's stack; Debian's
``prometheus`` runs on loopback with its own config, data directory (tmp) and port, scraping it
every 2 s; the test asks Prometheus's HTTP API. The cable is pulled and restored through
ibsim's console (``fabric.lab.faults``).

Own stack name ``rywatch-<hex>``, subnets 198.19.236-239.0/24 (management) and
198.19.190-193.0/24 (BMC), ports 19700-19707 (BMC), 24000-24058 (ibsim), 20900-20903
(``fabric watch``) and 20950-20953 (Prometheus), all on loopback or the lab's own networks.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from fabric.state import REPO_ROOT
from fabric.topology.ibsim_console import IbsimConsole
from tests.integration.labkit import OwnLab, own_lab

pytestmark = pytest.mark.integration

TAGS = 4
CABLE = "leaf01/1-n1/mlx5_0/1"
OTHER = "leaf01/2-n2/mlx5_0/1"
WAIT = 90.0
#: RailyardCableDown waits ``for: 1m`` before it fires.
ALERT_WAIT = 150.0
RULES = REPO_ROOT / "monitoring" / "railyard-alerts.yml"


def _spec(tag: int) -> dict[str, Any]:
    return {
        "name": "rywatch",
        "target": "lab",
        "nodes": [
            {"names": "n[1-2]", "role": "compute", "hcas": [{"device": "mlx5_0"}]},
            {"names": "sm1", "role": "sm", "hcas": [{"device": "mlx5_0"}]},
        ],
        "fabric": {
            "kind": "infiniband",
            "mtu": 4096,
            "topology": {
                "kind": "fat-tree",
                "leaves": 1,
                "nodes_per_leaf": 3,
                "ports_per_switch": 8,
            },
            "infiniband": {
                "sweep_interval": 5,
                "subnet_managers": [{"host": "sm1", "priority": 14}],
            },
        },
        "management": {"subnet": f"198.19.{236 + tag}.0/24"},
        "bmc": {"subnet": f"198.19.{190 + tag}.0/24"},
        "slurm": {"controller": "sm1"},
        "lab": {"bmc_port": 19700 + 2 * tag, "ibsim_port": 24000 + 16 * tag},
    }


SM_PLAYBOOK = """---
- name: Run the InfiniBand subnet manager (watch-test lab).
  hosts: subnet_managers
  gather_facts: true
  roles:
    - role: subnet_manager
"""

PROMETHEUS_CONFIG = """\
global:
  scrape_interval: 2s
  scrape_timeout: 2s
  evaluation_interval: 2s
rule_files:
  - "{rules}"
scrape_configs:
  - job_name: railyard
    static_configs:
      - targets: ["127.0.0.1:{port}"]
"""


class Watched:
    """The lab, ``fabric watch`` on it and a Prometheus scraping that."""

    def __init__(self, own: OwnLab, prometheus: int) -> None:
        self.own, self.prometheus = own, prometheus
        self.console = IbsimConsole(own.state / "ibsim.console", own.state / "logs" / "ibsim.log")
        self.watch: subprocess.Popen[str] | None = None

    def query(self, promql: str) -> list[dict[str, Any]]:
        """The instant vector PromQL ``promql`` gives now."""
        url = f"http://127.0.0.1:{self.prometheus}/api/v1/query?" + urllib.parse.urlencode(
            {"query": promql}
        )
        with urllib.request.urlopen(url, timeout=10) as reply:
            doc = json.load(reply)
        assert doc["status"] == "success", doc
        return doc["data"]["result"]

    def value(self, promql: str) -> float | None:
        """The single value of ``promql``, or None while it has no sample."""
        result = self.query(promql)
        return float(result[0]["value"][1]) if len(result) == 1 else None

    def wait_for(
        self, promql: str, want: Callable[[float | None], bool], wait: float = WAIT
    ) -> float | None:
        """Poll ``promql`` until ``want(value)``; fail after ``wait`` seconds."""
        deadline = time.monotonic() + wait
        got: float | None = None
        while time.monotonic() < deadline:
            got = self.value(promql)
            if want(got):
                return got
            time.sleep(1)
        raise AssertionError(f"{promql} = {got} after {wait} s")

    def firing(self, alert: str, wait: float = ALERT_WAIT, **labels: str) -> dict[str, str]:
        """Wait until ``alert`` fires with ``labels``; return the firing alert's labels."""
        match = "".join(f',{k}="{v}"' for k, v in labels.items())
        promql = f'ALERTS{{alertname="{alert}",alertstate="firing"{match}}}'
        self.wait_for(promql, lambda v: v == 1, wait)
        return self.query(promql)[0]["metric"]


def _start_sm(own: OwnLab) -> None:
    from fabric.handoff.runner import run_playbook
    from fabric.spec import load_spec

    book = own.root / "sm.yml"
    book.write_text(SM_PLAYBOOK)
    result = run_playbook(
        book,
        stack=own.name,
        spec=load_spec(own.stack_file),
        state_root=own.state_root,
        artifacts_root=own.root / "artifacts",
        emit=lambda _: None,
    )
    assert result.ok, result.summary()


def _wait_ready(proc: subprocess.Popen[str], port: int, log: Path) -> None:
    """Wait until Prometheus answers ``/-/ready``; fail with its log if it exits."""
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"prometheus exited {proc.returncode}: {log.read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/-/ready", timeout=5) as reply:
                if reply.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.5)
    raise AssertionError(f"prometheus not ready on 127.0.0.1:{port}: {log.read_text()[-2000:]}")


def _stop(proc: subprocess.Popen[str] | None) -> int | None:
    if proc is None or proc.poll() is not None:
        return proc.returncode if proc else None
    proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)
        return None


@pytest.fixture(scope="module")
def watched(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Watched]:
    if shutil.which("prometheus") is None:
        pytest.fail("prometheus is not installed: scripts/bootstrap.sh installs it")
    with own_lab(tmp_path_factory, "rywatch", _spec, tags=TAGS) as own:
        _start_sm(own)
        watch_port, prom_port = 20900 + own.tag, 20950 + own.tag
        lab = Watched(own, prom_port)
        log = open(own.root / "watch.log", "w")  # noqa: SIM115 - closed below
        lab.watch = subprocess.Popen(
            [sys.executable, "-m", "fabric", "watch", "--stack", own.name]
            + ["--spec", str(own.stack_file), "--port", str(watch_port), "--interval", "2"]
            + ["--no-slurm"],  # the lab runs no slurmctld (no hand-off)
            cwd=REPO_ROOT,
            env=dict(os.environ),
            stdout=log,
            stderr=subprocess.STDOUT,
            text=True,
        )
        config = own.root / "prometheus.yml"
        config.write_text(
            PROMETHEUS_CONFIG.replace("{port}", str(watch_port)).replace("{rules}", str(RULES))
        )
        prom_log = open(own.root / "prometheus.log", "w")  # noqa: SIM115 - closed below
        prometheus = subprocess.Popen(
            [
                "prometheus",
                f"--config.file={config}",
                f"--storage.tsdb.path={own.root / 'prometheus-data'}",
                f"--web.listen-address=127.0.0.1:{prom_port}",
            ],
            stdout=prom_log,
            stderr=subprocess.STDOUT,
            text=True,
        )
        try:
            _wait_ready(prometheus, prom_port, own.root / "prometheus.log")
            yield lab
        finally:
            _stop(prometheus)
            _stop(lab.watch)
            log.close()
            prom_log.close()
    # the SM playbook's run (outside Pulumi) leaves its facts cache and group_vars in the tmp
    # state directory; nothing of the lab itself may remain
    left = {k: v for k, v in own.leftovers.items() if k in ("containers", "networks", "processes")}
    assert left == {}, left


def test_prometheus_loads_the_shipped_rules_and_none_fires_on_the_healthy_lab(
    watched: Watched,
) -> None:
    url = f"http://127.0.0.1:{watched.prometheus}/api/v1/rules"
    deadline = time.monotonic() + 60  # a rule's health is "unknown" until its first evaluation
    while True:
        with urllib.request.urlopen(url, timeout=10) as reply:
            groups = json.load(reply)["data"]["groups"]
        rules = [r for g in groups for r in g["rules"]]
        if all(r["health"] != "unknown" for r in rules) or time.monotonic() > deadline:
            break
        time.sleep(2)  # the evaluation interval
    assert [g["file"] for g in groups] == [str(RULES)], groups
    assert len(rules) == 14 and all(r["health"] == "ok" for r in rules), rules
    watched.wait_for("count(railyard_cable_up == 1)", lambda v: v == 3)
    assert watched.query('ALERTS{alertstate="firing"}') == []


def test_prometheus_sees_every_declared_cable_up_and_the_master_sm(watched: Watched) -> None:
    watched.wait_for(f'railyard_cable_up{{cable="{CABLE}"}}', lambda v: v == 1)
    assert watched.wait_for("count(railyard_cable_up == 1)", lambda v: v == 3) == 3
    prio = watched.wait_for('railyard_sm_master_priority{host="sm1"}', lambda v: v is not None)
    assert prio == 14
    errors = watched.query("railyard_watch_scrape_error == 1")
    assert errors == [], errors
    seconds = watched.value("railyard_watch_scrape_duration_seconds")
    print(f"one fabric watch reading of this lab took {seconds:.2f} s")  # for the notes (-s)


def test_a_pulled_cable_shows_down_in_promql_and_up_once_restored(watched: Watched) -> None:
    watched.wait_for(f'railyard_cable_up{{cable="{CABLE}"}}', lambda v: v == 1)
    watched.console.unlink("n1", "mlx5_0", 1)
    try:
        watched.wait_for(f'railyard_cable_up{{cable="{CABLE}",a="leaf01/1",b="n1/mlx5_0/1"}}',
                         lambda v: v == 0)  # fmt: skip
        down = watched.query("railyard_cable_up == 0")
        assert [r["metric"]["cable"] for r in down] == [CABLE], down
        assert watched.value(f'railyard_cable_up{{cable="{OTHER}"}}') == 1
        assert watched.query(f'railyard_cable_rate_gbps{{cable="{CABLE}"}}') == []
        started = time.monotonic()
        alert = watched.firing("RailyardCableDown", cable=CABLE)
        print(f"RailyardCableDown fired {time.monotonic() - started:.0f} s after the cable "
              "showed down (for: 1m)")  # fmt: skip
        assert (alert["a"], alert["b"], alert["severity"]) == ("leaf01/1", "n1/mlx5_0/1",
                                                               "critical")  # fmt: skip
        down = watched.query('ALERTS{alertname="RailyardCableDown",alertstate="firing"}')
        assert [r["metric"]["cable"] for r in down] == [CABLE], down
    finally:
        watched.console.link("n1", "mlx5_0", 1, "leaf01", 1)
    watched.wait_for(f'railyard_cable_up{{cable="{CABLE}"}}', lambda v: v == 1)


def test_a_counter_rise_names_its_cable_in_rate_and_fires_errors_rising(
    watched: Watched,
) -> None:
    """Symbol errors set on leaf01 port 1 (n1's cable) in ibsim: ``rate()`` over the raw
    ``_total`` series rises on that cable end alone, and the shipped rule fires for it."""
    rising = "rate(railyard_port_symbol_errors_total[1m]) > 0"
    watched.wait_for('count(railyard_port_symbol_errors_total{end="switch"})', lambda v: v == 3)
    assert watched.query(rising) == []
    watched.console.set_counter("leaf01", 1, "SymbolErrorCounter", 900)
    try:
        watched.wait_for(f"count({rising})", lambda v: v == 1)
        (found,) = watched.query(rising)
        labels = {k: v for k, v in found["metric"].items() if k not in ("instance", "job")}
        assert labels == {
            "stack": watched.own.name,
            "host": "n1",
            "device": "mlx5_0",
            "port": "1",
            "switch": "leaf01",
            "switch_port": "1",
            "end": "switch",
        }, found
        raw = 'railyard_port_symbol_errors_total{switch="leaf01",switch_port="1",end="switch"}'
        assert watched.value(raw) == 900
        alert = watched.firing(
            "RailyardPortErrorsRising", wait=WAIT, host="n1", counter="SymbolErrorCounter"
        )
        assert (alert["counter"], alert["switch"], alert["switch_port"], alert["end"]) == (
            "SymbolErrorCounter",
            "leaf01",
            "1",
            "switch",
        ), alert
        firing = watched.query('ALERTS{alertname="RailyardPortErrorsRising",alertstate="firing"}')
        assert {r["metric"]["host"] for r in firing} == {"n1"}, firing
    finally:
        watched.console.set_counter("leaf01", 1, "SymbolErrorCounter", 0)


def test_watch_stops_cleanly_on_sigterm(watched: Watched) -> None:
    assert _stop(watched.watch) == 0
