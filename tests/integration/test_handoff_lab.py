"""The hand-off on a lab of its own: ``pulumi up`` (Automation API, file backend in tmp) builds
3 nodes (2 compute, 1 subnet manager that is also the Slurm controller), one per leaf, under a
spine, and runs ``playbooks/site.yml`` (``railyard:handoff``); the check suite is off
(``railyard:verify``, another component's test). Then: OpenSM MASTER at the priority-14 SM,
every Slurm node idle, ``scontrol show topology`` as the fabric, and a second run that
changes nothing. Then README.md's tour, as a user runs it. Last, a node is added through the
spec and a second ``pulumi up`` (day 2).

Its own stack name, subnets (198.19.60-75.0/24 and 198.19.80-95.0/24) and ports, so it runs
beside the ``lab`` stack and the other integration tests.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from fabric.state import REPO_ROOT
from tests.integration.labkit import OwnLab, own_lab

pytestmark = pytest.mark.integration


def _spec(tag: int) -> dict[str, Any]:
    hca = {"device": "mlx5_0", "link_layer": "InfiniBand", "rate_gbps": 400, "width": "4x"}
    return {
        "name": "ryhandoff",
        "target": "lab",
        "nodes": [
            {"names": "hn[1-2]", "role": "compute", "gpus": 2, "gpu_type": "h100", "hcas": [hca]},
            {"names": "hsm1", "role": "sm", "hcas": [hca]},
        ],
        "fabric": {
            "kind": "infiniband",
            "mtu": 4096,
            "topology": {
                "kind": "fat-tree",
                "leaves": 3,
                "spines": 1,
                "ports_per_switch": 8,
                "nodes_per_leaf": 1,
                "uplinks_per_leaf": 2,
                "link_rate_gbps": 400,
                "link_width": "4x",
            },
            "infiniband": {
                "routing_engine": "ftree",
                "sweep_interval": 10,
                "subnet_managers": [{"host": "hsm1", "priority": 14}],
            },
        },
        "management": {"subnet": f"198.19.{60 + tag}.0/24"},
        "bmc": {"subnet": f"198.19.{80 + tag}.0/24"},
        "slurm": {
            "cluster_name": "ryhandoff",
            "controller": "hsm1",
            "topology_plugin": "tree",
            "partitions": [{"name": "gpu", "nodes": "hn[1-2]", "default": True}],
        },
        "lab": {"bmc_port": 19400 + 2 * tag, "ibsim_port": 18400 + 16 * tag},
    }


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OwnLab]:
    with own_lab(tmp_path_factory, "ryho", _spec, tags=16, handoff=True) as lab:
        yield lab


def test_site_playbook_converged_during_pulumi_up(lab: OwnLab) -> None:
    recap = lab.outputs["handoff"].value
    rows = {line.split()[0]: line.split()[1:] for line in recap.splitlines()[1:]}
    assert set(rows) == {"hn1", "hn2", "hsm1"}
    # ok changed failed unreachable skipped
    assert all(r[2] == "0" and r[3] == "0" for r in rows.values()), recap
    assert "Render topology.conf for the Slurm nodes from the discovered fabric" in lab.up_log


def test_second_site_run_changes_nothing(lab: OwnLab) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "fabric",
            "run",
            "playbooks/site.yml",
            "--stack",
            lab.name,
            "--spec",
            str(lab.stack_file),
        ],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        timeout=900,
        env={**os.environ, **lab.env},
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    table = proc.stdout.split("succeeded\n", 1)[1].splitlines()
    assert table[0].split() == ["host", "ok", "changed", "failed", "unreachable", "skipped"]
    changed = {row.split()[0]: int(row.split()[2]) for row in table[1:4]}
    assert changed == {"hn1": 0, "hn2": 0, "hsm1": 0}, proc.stdout


def test_second_pulumi_up_does_not_rerun_the_handoff(lab: OwnLab) -> None:
    preview = lab.stack.preview(on_output=lambda _: None)
    assert {k: v for k, v in preview.change_summary.items() if k != "same"} == {}


def test_priority_14_sm_is_master(lab: OwnLab) -> None:
    out = lab.ssh("hsm1", "sminfo")
    assert re.search(r"priority 14 state 3 SMINFO_MASTER", out), out


def test_every_slurm_node_is_idle(lab: OwnLab) -> None:
    out = lab.ssh("hsm1", 'sinfo --noheader --Node --format "%N %t"')
    states = dict(line.split() for line in out.splitlines() if line.strip())
    assert states == {"hn1": "idle", "hn2": "idle"}


def test_slurm_nodes_are_reached_at_their_management_addresses(lab: OwnLab) -> None:
    addresses = {h["name"]: h["address"] for h in lab.outputs["hosts"].value}
    out = lab.ssh("hsm1", "scontrol show node hn2; getent hosts hn1")
    assert f"NodeAddr={addresses['hn2']}" in out
    assert out.splitlines()[-1].split()[0] == addresses["hn1"]


def test_slurm_topology_is_the_discovered_fabric(lab: OwnLab) -> None:
    from fabric.parsers.ibnetdiscover import parse
    from fabric.topology.render import render

    discovered = (lab.state / "ibnetdiscover.txt").read_text()
    assert "generated on" not in discovered
    assert render(parse(discovered), "tree", ["hn1", "hn2"]).splitlines()[1:] == [
        "SwitchName=leaf01 Nodes=hn1",
        "SwitchName=leaf02 Nodes=hn2",
        "SwitchName=spine01 Switches=leaf[01-02]",
    ]
    shown = lab.ssh("hsm1", "scontrol show topology")
    switches = {
        m[0]: (m[1], m[2])
        for m in re.findall(r"SwitchName=(\S+) Level=(\d) LinkSpeed=\S+ Nodes=(\S+)", shown)
    }
    assert switches == {
        "leaf01": ("0", "hn1"),
        "leaf02": ("0", "hn2"),
        "spine01": ("1", "hn[1-2]"),
    }, shown


def test_munge_key_is_the_stacks_secret_on_every_node(lab: OwnLab) -> None:
    out = lab.outputs["munge_key"]
    assert out.secret, "the munge key output is not a Pulumi secret"
    digests = {
        h: lab.ssh(h, "sha256sum /etc/munge/munge.key").split()[0] for h in ("hn1", "hn2", "hsm1")
    }
    import hashlib

    assert set(digests.values()) == {hashlib.sha256(out.value.encode()).hexdigest()}, digests
    modes = {
        lab.ssh(h, "stat -c '%a %U' /etc/munge/munge.key").strip() for h in ("hn1", "hn2", "hsm1")
    }
    assert modes == {"400 munge"}


def test_munge_key_is_in_no_file_on_the_controller(lab: OwnLab) -> None:
    key = lab.outputs["munge_key"].value.encode()
    roots = [lab.state, REPO_ROOT / "artifacts" / lab.name]
    files = [p for root in roots if root.exists() for p in root.rglob("*") if p.is_file()]
    assert files, "neither the stack's state nor its run artifacts were found"
    assert [str(p) for p in files if key in p.read_bytes()] == []


def test_the_readme_tour_walks_on_this_lab(lab: OwnLab) -> None:
    """README.md's tour, command by command, as a user runs it (``tests/integration/tour.py``):
    status, check, a pulled cable, its cause, the repair, check again."""
    from fabric.verify.picture import GREEN
    from tests.integration.tour import README, steps, walk

    ran = walk(lab.name, lab.stack_file, {"gpu01": "hn1"}, {**os.environ, **lab.env})
    failed = [r for r in ran if not r.ok]
    assert not failed, failed[0].why()
    assert len(ran) == len(steps(README.read_text()))
    reports = lab.state / "reports"
    assert (reports / "report.md").is_file() and (reports / "fabric.png").is_file()
    # healthy, as README says: every HCA green, no cable left unchecked (grey, dashed)
    hcas = [line for line in (reports / "fabric.dot").read_text().splitlines() if "ellipse" in line]
    assert len(hcas) == 3 and all(f'color="{GREEN}"' in line for line in hcas), hcas
    cables = [line for line in (reports / "fabric.dot").read_text().splitlines() if " -- " in line]
    assert len(cables) == 9 and not [c for c in cables if "dashed" in c], cables


def test_check_limited_to_one_node_says_what_it_left_out(lab: OwnLab) -> None:
    """``check --limit hn1``: the SM, pair and Slurm families need other hosts; they are
    listed as left out (JSON and report.md), and the picture greys what was not checked."""
    import json

    from fabric.verify.picture import GREEN, GREY

    proc = subprocess.run(
        [str(REPO_ROOT / ".venv" / "bin" / "railyard"), "check", "--stack", lab.name]
        + ["--spec", str(lab.stack_file), "--limit", "hn1", "--json"],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        timeout=600,
        env={**os.environ, **lab.env},
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    left_out = json.loads(proc.stdout)["left_out"]
    assert {"sm", "ib_pairs", "slurm", "slurm_topology"} <= set(left_out), left_out
    assert "test_host_sees_master" in left_out["sm"] and "--limit hn1" in left_out["sm"]
    reports = lab.state / "reports"
    assert "## Left out by --limit" in (reports / "report.md").read_text()
    dot = (reports / "fabric.dot").read_text().splitlines()
    colour = {
        host: next(line for line in dot if line.startswith(f'  "{host}/mlx5_0" ['))
        for host in ("hn1", "hn2", "hsm1")
    }
    assert f'color="{GREEN}"' in colour["hn1"], colour
    assert all(f'color="{GREY}"' in colour[h] for h in ("hn2", "hsm1")), colour


# Day 2, the declarative way (last in this module: it changes the lab): hn3 is added to the
# spec, with room for it on a leaf, and ``pulumi up`` runs again. The grown fabric is a new
# ibsim; the OpenSM, attached to the old one, must restart on it (the role's
# ``subnet_manager_fabric_generation``), and Slurm must take in the new node.


@pytest.fixture(scope="module")
def grown(lab: OwnLab) -> str:
    """The engine output of the ``pulumi up`` that added hn3."""
    spec = _spec(lab.tag)
    spec["nodes"][0]["names"] = "hn[1-3]"
    spec["fabric"]["topology"]["nodes_per_leaf"] = 2
    spec["slurm"]["partitions"][0]["nodes"] = "hn[1-3]"
    lab.set_spec(spec)
    log: list[str] = []
    lab.outputs = lab.stack.up(on_output=log.append).outputs
    return "".join(log)


def test_adding_a_node_converges_it_and_restarts_opensm_on_the_new_fabric(
    lab: OwnLab, grown: str
) -> None:
    rows = {
        line.split()[0]: line.split()[1:] for line in lab.outputs["handoff"].value.splitlines()[1:]
    }
    assert set(rows) == {"hn1", "hn2", "hn3", "hsm1"}
    assert all(r[2] == "0" and r[3] == "0" for r in rows.values()), lab.outputs["handoff"].value
    assert "Start the highest-priority OpenSM of the play first.: changed hsm1" in grown
    # The new node's port got its LID from a MASTER sweeping the new simulator.
    assert re.search(r"priority 14 state 3 SMINFO_MASTER", lab.ssh("hn3", "sminfo"))


def test_added_node_is_idle_in_slurm_and_in_its_topology(lab: OwnLab, grown: str) -> None:
    out = lab.ssh("hsm1", 'sinfo --noheader --Node --format "%N %t"')
    assert dict(line.split() for line in out.splitlines() if line.strip()) == {
        "hn1": "idle",
        "hn2": "idle",
        "hn3": "idle",
    }
    shown = lab.ssh("hsm1", "scontrol show topology")
    assert re.search(r"SwitchName=spine01 .*Nodes=hn\[1-3\]", shown), shown


def test_checks_pass_on_the_grown_cluster(lab: OwnLab, grown: str) -> None:
    failed = lab.failed_checks(
        "test_port_state_active or test_port_cabled_to_declared_switch_port or test_no_undeclared_links "
        "or test_host_sees_master or test_single_master or test_topology_switch or test_node_idle_or_allocated"
    )
    assert failed == {}
