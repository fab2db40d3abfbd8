"""The hand-off on a lab of its own: ``pulumi up`` (Automation API, file backend in tmp) builds
3 nodes (2 compute, 1 subnet manager that is also the Slurm controller), one per leaf, under a
spine, and runs ``playbooks/site.yml`` (``railyard:handoff``); the check suite is off
(``railyard:verify``, another component's test). Then: OpenSM MASTER at the priority-14 SM,
every Slurm node idle, ``scontrol show topology`` as the fabric, and a second run that
changes nothing.

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

from tests.integration.labkit import REPO, OwnLab, own_lab

pytestmark = pytest.mark.integration


def _spec(tag: int) -> dict[str, Any]:
    hca = {"device": "mlx5_0", "link_layer": "InfiniBand", "rate_gbps": 400, "width": "4x"}
    return {
        "name": "ryhandoff", "target": "lab",
        "nodes": [
            {"names": "hn[1-2]", "role": "compute", "gpus": 2, "gpu_type": "h100", "hcas": [hca]},
            {"names": "hsm1", "role": "sm", "hcas": [hca]},
        ],
        "fabric": {
            "kind": "infiniband", "mtu": 4096,
            "topology": {"kind": "fat-tree", "leaves": 3, "spines": 1, "ports_per_switch": 8,
                         "nodes_per_leaf": 1, "uplinks_per_leaf": 2, "link_rate_gbps": 400, "link_width": "4x"},
            "infiniband": {"routing_engine": "ftree", "sweep_interval": 10,
                           "subnet_managers": [{"host": "hsm1", "priority": 14}]},
        },
        "management": {"subnet": f"198.19.{60 + tag}.0/24"},
        "bmc": {"subnet": f"198.19.{80 + tag}.0/24"},
        "slurm": {"cluster_name": "ryhandoff", "controller": "hsm1", "topology_plugin": "tree",
                  "partitions": [{"name": "gpu", "nodes": "hn[1-2]", "default": True}]},
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
        [sys.executable, "-m", "fabric", "run", "playbooks/site.yml", "--stack", lab.name,
         "--spec", str(lab.stack_file)],
        capture_output=True, text=True, cwd=REPO, timeout=900, env={**os.environ, **lab.env},
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
    from fabric.handoff.topology import render
    from fabric.parsers.ibnetdiscover import parse

    discovered = (lab.state / "ibnetdiscover.txt").read_text()
    assert "generated on" not in discovered
    assert render(parse(discovered), "tree", ["hn1", "hn2"]).splitlines()[1:] == [
        "SwitchName=leaf01 Nodes=hn1",
        "SwitchName=leaf02 Nodes=hn2",
        "SwitchName=spine01 Switches=leaf[01-02]",
    ]
    shown = lab.ssh("hsm1", "scontrol show topology")
    switches = {m[0]: (m[1], m[2]) for m in re.findall(
        r"SwitchName=(\S+) Level=(\d) LinkSpeed=\S+ Nodes=(\S+)", shown)}
    assert switches == {"leaf01": ("0", "hn1"), "leaf02": ("0", "hn2"), "spine01": ("1", "hn[1-2]")}, shown


def test_munge_key_is_the_stacks_secret_on_every_node(lab: OwnLab) -> None:
    out = lab.outputs["munge_key"]
    assert out.secret, "the munge key output is not a Pulumi secret"
    digests = {h: lab.ssh(h, "sha256sum /etc/munge/munge.key").split()[0] for h in ("hn1", "hn2", "hsm1")}
    import hashlib

    assert set(digests.values()) == {hashlib.sha256(out.value.encode()).hexdigest()}, digests
    modes = {lab.ssh(h, "stat -c '%a %U' /etc/munge/munge.key").strip() for h in ("hn1", "hn2", "hsm1")}
    assert modes == {"400 munge"}


def test_munge_key_is_in_no_file_on_the_controller(lab: OwnLab) -> None:
    key = lab.outputs["munge_key"].value.encode()
    roots = [lab.state, REPO / "artifacts" / lab.name]
    files = [p for root in roots if root.exists() for p in root.rglob("*") if p.is_file()]
    assert files, "neither the stack's state nor its run artifacts were found"
    assert [str(p) for p in files if key in p.read_bytes()] == []
