"""The shipped alert rules (monitoring/railyard-alerts.yml): ``promtool check rules`` passes,
``promtool test rules`` proves each alert fires on its series (monitoring/railyard-alerts.test.yml),
each alert's test fails once its rule fires on nothing, and every metric the rules read is
one ``railyard watch`` exports."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from fabric.state import REPO_ROOT
from fabric.verify.counters import COUNTERS
from fabric.watch.metrics import PORT_COUNTERS

RULES = REPO_ROOT / "monitoring" / "railyard-alerts.yml"
TESTS = REPO_ROOT / "monitoring" / "railyard-alerts.test.yml"
ALERTS = {
    "RailyardCableDown",
    "RailyardCableNotAsDeclared",
    "RailyardPortErrorsRising",
    "RailyardSubnetManagerChanged",
    "RailyardNodeDrained",
    "RailyardWatchScrapeError",
}


def exported() -> set[str]:
    """The sample names ``railyard watch`` exports for a snapshot holding every source."""
    from fabric.verify.counters import thresholds
    from fabric.watch.collect import CableSample, SmSample, Snapshot
    from fabric.watch.counters import PortReading
    from fabric.watch.metrics import snapshot_metrics
    from fabric.watch.slurm import NodeSample

    snap = Snapshot(
        taken=0.0,
        cables=[
            CableSample(
                cable="s/1-h/d/1",
                a="s/1",
                b="h/d/1",
                up=True,
                as_declared=True,
                declared_rate_gbps=200,
                declared_width_lanes=4,
            )
        ],  # fmt: skip
        master=SmSample(host="sm1", guid="0x1", lid=1, priority=14, state="SMINFO_MASTER"),
        nodes=[NodeSample(node="h", state="IDLE+DRAIN", reason="railyard: x")],
        port_counters=[
            PortReading(
                host="h",
                device="d",
                port=1,
                switch="s",
                switch_port=1,
                end="hca",
                values={k: 0 for k in PORT_COUNTERS},
                allowed=thresholds(200),
            )
        ],  # fmt: skip
        sources=["ibnetdiscover", "sminfo", "perfquery", "slurm"],
    )
    return {s.name for m in snapshot_metrics(snap, "lab") for s in m.samples}


def promtool(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    if shutil.which("promtool") is None:
        pytest.fail("promtool is not installed: scripts/bootstrap.sh installs prometheus")
    return subprocess.run(
        ["promtool", *args], capture_output=True, text=True, cwd=cwd, timeout=60, check=False
    )


def rules() -> list[dict]:
    return [r for g in yaml.safe_load(RULES.read_text())["groups"] for r in g["rules"]]


def test_promtool_check_rules_passes() -> None:
    done = promtool("check", "rules", str(RULES), cwd=REPO_ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"SUCCESS: {len(rules())} rules found" in done.stdout


def test_promtool_test_rules_fires_each_alert_on_its_series() -> None:
    done = promtool("test", "rules", TESTS.name, cwd=TESTS.parent)
    assert done.returncode == 0, done.stdout + done.stderr
    tested = {t["alertname"] for case in yaml.safe_load(TESTS.read_text())["tests"]
              for t in case["alert_rule_test"]}  # fmt: skip
    assert tested == {r["alert"] for r in rules()} == ALERTS


@pytest.mark.parametrize("alert", sorted(ALERTS))
def test_each_alerts_test_fails_when_its_rule_fires_on_nothing(alert: str, tmp_path: Path) -> None:
    doc = yaml.safe_load(RULES.read_text())
    for group in doc["groups"]:
        for rule in group["rules"]:
            if rule["alert"] == alert:
                rule["expr"] = "vector(1) == 0"
    (tmp_path / RULES.name).write_text(yaml.safe_dump(doc))
    shutil.copy(TESTS, tmp_path / TESTS.name)
    done = promtool("test", "rules", TESTS.name, cwd=tmp_path)
    assert done.returncode != 0, done.stdout
    assert f"alertname: {alert}," in done.stdout + done.stderr


def test_every_error_counter_has_its_rule_and_the_rules_read_only_exported_metrics() -> None:
    rising = [r for r in rules() if r["alert"] == "RailyardPortErrorsRising"]
    assert sorted(r["labels"]["counter"] for r in rising) == sorted(c.name for c in COUNTERS)
    for rule in rising:
        short = next(c.short for c in COUNTERS if c.name == rule["labels"]["counter"])
        assert f"railyard_port_{short}_total[5m]" in rule["expr"]
        assert f'{{counter="{short}"}}' in rule["expr"]
    read = {
        name for rule in rules() for name in re.findall(r"\b(railyard_[a-z_]+)\b", rule["expr"])
    }
    assert read <= exported(), read - exported()
