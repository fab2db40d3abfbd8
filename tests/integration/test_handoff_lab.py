"""The hand-off against the running lab: ``python -m fabric run playbooks/site.yml``.

Needs the lab up (``python -m fabric lab up`` wrote ``state/lab/inventory.yml``). Checks
the run succeeds and that what it configured works: OpenSM MASTER on the priority SM,
every Slurm node idle, the topology as the spec declares.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from fabric.handoff.vars import role_vars_from_spec
from fabric.specload import load_spec

REPO = Path(__file__).resolve().parents[2]
STATE = REPO / "state" / "lab"
INVENTORY = STATE / "inventory.yml"

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not INVENTORY.is_file(), reason="the lab is not up (no state/lab/inventory.yml)"),
]


def _ansible(host: str, command: str) -> str:
    """Run ``command`` on ``host`` through the lab inventory (SSH, host keys checked)."""
    proc = subprocess.run(
        [str(Path(sys.executable).parent / "ansible"), host, "-i", str(INVENTORY),
         "-m", "ansible.builtin.shell", "-a", f"set -a; . /etc/environment; {command}"],
        capture_output=True, text=True, cwd=REPO, timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


@pytest.fixture(scope="module")
def site_run():
    proc = subprocess.run(
        [sys.executable, "-m", "fabric", "run", "playbooks/site.yml", "--stack", "lab"],
        capture_output=True, text=True, cwd=REPO, timeout=3600,
    )
    return proc


def test_site_playbook_succeeds(site_run):
    assert site_run.returncode == 0, site_run.stdout[-3000:] + site_run.stderr[-3000:]
    assert "playbooks/site.yml: succeeded" in site_run.stdout


def test_group_vars_are_the_specs(site_run):
    import yaml

    written = yaml.safe_load((STATE / "group_vars" / "all.yml").read_text())
    assert written == role_vars_from_spec(load_spec(REPO / "Pulumi.lab.yaml"))


def test_highest_priority_sm_is_master(site_run):
    spec = load_spec(REPO / "Pulumi.lab.yaml")
    top = max(spec.fabric.infiniband.subnet_managers, key=lambda sm: sm.priority)
    out = _ansible(top.host, "sminfo")
    assert re.search(rf"priority {top.priority} state 3 SMINFO_MASTER", out), out


def test_every_slurm_node_is_idle(site_run):
    spec = load_spec(REPO / "Pulumi.lab.yaml")
    out = _ansible(spec.slurm.controller, 'sinfo --noheader --Node --format "%N %t" | sort -u')
    states = dict(re.findall(r"^(\S+) (\S+)$", out.split(">>", 1)[-1], re.M))
    assert set(states) == set(spec.hosts_with_role("compute"))
    assert set(states.values()) == {"idle"}, states


def test_slurm_topology_matches_the_fabric(site_run):
    spec = load_spec(REPO / "Pulumi.lab.yaml")
    out = _ansible(spec.slurm.controller, "scontrol show topology")
    conf = role_vars_from_spec(spec)["slurm_topology_conf"]
    for line in conf.splitlines():
        name, members = line.split(" ", 1)
        assert name in out and members.split("=", 1)[1] in out, (line, out)


def test_second_run_changes_nothing(site_run):
    proc = subprocess.run(
        [sys.executable, "-m", "fabric", "run", "playbooks/site.yml", "--stack", "lab"],
        capture_output=True, text=True, cwd=REPO, timeout=3600,
    )
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "    changed:" not in proc.stderr, [l for l in proc.stderr.splitlines() if "changed:" in l]
