"""The health program through a subnet manager failover, and a converge after a repair (issue 29
part 6), on a lab of its own.

``pulumi up`` with the hand-off builds 2 compute nodes (fh1, fh2) and 2 subnet managers on one
leaf: fsm1 (priority 14, MASTER, the Slurm controller) and fsm2 (priority 10, STANDBY). The
spec's ``health.interval`` is 0, so slurmd runs no health program on its own: the test runs
``railyard-health`` on both compute nodes itself, as slurmd would but every 2 s (denser than
any HealthCheckInterval), so what drains or resumes a node is known.

1. **Failover drill.** fsm1's OpenSM stops; fsm2 takes over as MASTER; the health program runs
   on both nodes all the while and drains neither (the absence is shorter than the declared
   failover window, ``fabric.handoff.health.sm_failover_seconds``: 2 s x 2 polls + 10 s in
   the lab). fsm1 starts again and takes mastership back; still nothing drained.
2. **Past the window.** With both OpenSMs stopped, the absence outlasts the window and the
   program drains the node, naming it; both SMs back, the next run resumes it.
3. **A converge after a repair.** fh2's cable is pulled and the program drains fh2; the cable
   is restored (the repair); a converge (``python -m fabric run playbooks/site.yml``) runs the
   program once on every node it drained, so fh2 is IDLE when the converge ends. (The slurm
   role's wait skips a node drained with railyard's reason; the play after it resumes the node.)

Its own stack name, subnets 198.18.152-159.0/24 (management) and 198.18.248-255.0/24 (BMC),
Redfish ports 26400-26415 and ibsim ports 26600-26722, so it runs beside the other modules.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest

from fabric.state import REPO_ROOT
from fabric.topology.ibsim_console import IbsimConsole
from tests.integration.labkit import OwnLab, own_lab

pytestmark = pytest.mark.integration

NODES = ("fh1", "fh2")
#: Seconds between the test's runs of the health program on each node.
EVERY = 2.0
#: The lab's failover window: 2000 ms x 2 polls (fabric.handoff.vars.LAB_SUBNET_MANAGER)
#: plus two sweep intervals of 5 s, at least 10 s.
WINDOW = 14


def _spec(tag: int) -> dict[str, Any]:
    hca = {"device": "mlx5_0", "link_layer": "InfiniBand", "rate_gbps": 400, "width": "4x"}
    return {
        "name": "ryfailover",
        "target": "lab",
        "nodes": [
            {"names": "fh[1-2]", "role": "compute", "hcas": [hca]},
            {"names": "fsm[1-2]", "role": "sm", "hcas": [hca]},
        ],
        "fabric": {
            "kind": "infiniband",
            "mtu": 4096,
            "topology": {
                "kind": "fat-tree",
                "leaves": 1,
                "nodes_per_leaf": 4,
                "ports_per_switch": 8,
                "link_rate_gbps": 400,
                "link_width": "4x",
            },
            "infiniband": {
                "sweep_interval": 5,
                "subnet_managers": [
                    {"host": "fsm1", "priority": 14},
                    {"host": "fsm2", "priority": 10},
                ],
            },
        },
        "management": {"subnet": f"198.18.{152 + tag}.0/24"},
        "bmc": {"subnet": f"198.18.{248 + tag}.0/24"},
        "slurm": {
            "cluster_name": "ryfailover",
            "controller": "fsm1",
            "partitions": [{"name": "gpu", "nodes": "fh[1-2]", "default": True}],
        },
        "health": {"interval": 0},
        "lab": {"bmc_port": 26400 + 2 * tag, "ibsim_port": 26600 + 16 * tag},
    }


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OwnLab]:
    with own_lab(tmp_path_factory, "ryfailover", _spec, tags=8, handoff=True) as lab:
        yield lab
    assert lab.leftovers == {}


@pytest.fixture(scope="module")
def console(lab: OwnLab) -> IbsimConsole:
    return IbsimConsole(lab.state / "ibsim.console", lab.state / "logs" / "ibsim.log")


def _node(lab: OwnLab, node: str) -> tuple[str, str]:
    """(State, Reason) of ``node`` as slurmctld reports it (asked on fsm1, which keeps
    slurmctld while its OpenSM is stopped)."""
    out = lab.ssh("fsm1", f"scontrol show node -o {node}")
    state = re.search(r"\bState=(\S+)", out)
    reason = re.search(r"\bReason=(.*?)(?: \[[^\]]*\])?(?= \w+=|$)", out)
    return (state[1] if state else "", reason[1] if reason else "")


def _idle(found: tuple[str, str]) -> bool:
    return found[0].split("+")[0] == "IDLE" and "DRAIN" not in found[0]


def _health(lab: OwnLab, node: str) -> dict[str, Any]:
    """One run of the health program on ``node``, as slurmd runs it (drains, resumes)."""
    with lab.connect(node) as client:
        from fabric.lab.ssh import run

        rc, out, err = run(client, "/usr/local/sbin/railyard-health --json", timeout=60)
    assert rc in (0, 1, 3), f"{node}: railyard-health exited {rc}: {out}{err}"
    return json.loads(out)


def _master(lab: OwnLab) -> tuple[int, str] | None:
    """(priority, state) of the master SM as fh1 sees it, or None while none answers."""
    with lab.connect("fh1") as client:
        from fabric.lab.ssh import run

        rc, out, _ = run(client, "sminfo -t 500", timeout=30)
    found = re.search(r"priority (\d+) state \d+ SMINFO_(\w+)", out)
    return (int(found[1]), found[2]) if rc == 0 and found else None


def _sm(lab: OwnLab, host: str, action: str) -> None:
    lab.ssh(host, f"systemctl {action} 'opensm*'" if action == "stop" else "systemctl start opensm")


def _watch(lab: OwnLab, seconds: float, until: Any = None) -> list[tuple[float, str, Any]]:
    """Run the health program on every node every ``EVERY`` s for ``seconds`` (or until
    ``until()``); return (time, node, result) of each run and fail on any drain."""
    seen: list[tuple[float, str, Any]] = []
    start = time.monotonic()
    while time.monotonic() - start < seconds and not (until and until()):
        for node in NODES:
            out = _health(lab, node)
            seen.append((round(time.monotonic() - start, 1), node, out))
            assert out["failures"] == [] and not out["action"].startswith("drained"), seen
        time.sleep(EVERY)
    return seen


@pytest.fixture(scope="module")
def healthy(lab: OwnLab) -> None:
    deadline = time.monotonic() + 120
    while not all(_idle(_node(lab, n)) for n in NODES) and time.monotonic() < deadline:
        time.sleep(2)
    assert all(_idle(_node(lab, n)) for n in NODES), [_node(lab, n) for n in NODES]
    assert _master(lab) == (14, "MASTER")
    config = json.loads(lab.ssh("fh1", "cat /etc/railyard/health.json"))
    assert config["sm_failover_s"] == WINDOW


def test_sm_failover_drains_no_node(lab: OwnLab, healthy: None) -> None:
    _sm(lab, "fsm1", "stop")
    started = time.monotonic()
    try:
        during = _watch(lab, 90, until=lambda: _master(lab) == (10, "MASTER"))
        took = time.monotonic() - started
        assert _master(lab) == (10, "MASTER"), "fsm2 did not take over in 90 s"
        after = _watch(lab, WINDOW + 6)  # past the window: the new master answers
        assert all(out["harness_errors"] == [] for _, _, out in after[-len(NODES) :]), after
    finally:
        _sm(lab, "fsm1", "start")
    back = _watch(lab, 90, until=lambda: _master(lab) == (14, "MASTER"))
    assert _master(lab) == (14, "MASTER"), back[-4:]
    assert all(_idle(_node(lab, n)) for n in NODES)
    waited = [out for _, _, out in during if out["harness_errors"]]
    print(f"standby MASTER {took:.0f}s after the stop; {len(waited)} runs within the window")


def test_an_absence_past_the_window_drains_and_a_master_resumes(lab: OwnLab, healthy: None) -> None:
    for sm in ("fsm2", "fsm1"):
        _sm(lab, sm, "stop")
    try:
        first = _health(lab, "fh1")
        assert (
            first["failures"] == []
            and "within the 14s failover window" in (first["harness_errors"][0])
        ), first
        time.sleep(WINDOW + 1)
        past = _health(lab, "fh1")
        assert past["failures"] and past["failures"][0].startswith("no subnet manager answers: "), (
            past
        )
        assert "past the 14s failover window" in past["failures"][0]
        assert "DRAIN" in _node(lab, "fh1")[0]
    finally:
        for sm in ("fsm1", "fsm2"):
            _sm(lab, sm, "start")
    deadline = time.monotonic() + 90
    runs = []
    while time.monotonic() < deadline:  # the masters sweep, then the next run resumes fh1
        runs.append(_health(lab, "fh1"))
        if runs[-1]["action"] == "resumed":
            break
        time.sleep(EVERY)
    assert runs[-1]["action"] == "resumed", runs[-3:]
    assert _idle(_node(lab, "fh1"))


def test_a_converge_after_a_repair_resumes_the_drained_node(
    lab: OwnLab, healthy: None, console: IbsimConsole
) -> None:
    console.unlink("fh2", "mlx5_0", 1)
    try:
        drained = _health(lab, "fh2")
        assert drained["action"].startswith("drained: railyard: mlx5_0/1 Down"), drained
    finally:
        console.link("fh2", "mlx5_0", 1, "leaf01", 2)
    deadline = time.monotonic() + 60  # OpenSM's sweep brings the port back to Active
    while "Active" not in lab.ssh("fh2", "ibstat") and time.monotonic() < deadline:
        time.sleep(2)
    assert "DRAIN" in _node(lab, "fh2")[0]  # nothing runs the program but the converge
    done = subprocess.run(
        [sys.executable, "-m", "fabric", "run", "playbooks/site.yml", "--stack", lab.name]
        + ["--spec", str(lab.stack_file)],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        timeout=1500,
        env={**os.environ, **lab.env},
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert _idle(_node(lab, "fh2")), _node(lab, "fh2")
    assert _idle(_node(lab, "fh1"))
