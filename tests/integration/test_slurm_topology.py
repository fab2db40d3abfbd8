"""The generated topology.conf loads in a real slurmctld (Debian 12's Slurm 22.05, tree plugin):
``scontrol show topology`` reports the switches, levels, hosts and children of the graph."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from fabric.hostlist import compress, expand
from fabric.spec import ClusterSpec
from fabric.topology.from_spec import graph_from_spec
from fabric.topology.graph import FabricGraph
from fabric.topology.slurm import slurm_tree, tree_conf

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
_LINE = re.compile(
    r"^SwitchName=(\S+) Level=(\d+) LinkSpeed=\d+(?: Nodes=(\S+))?(?: Switches=(\S+))?$"
)


def lab_graph() -> FabricGraph:
    data = yaml.safe_load((ROOT / "Pulumi.lab.yaml").read_text())
    return graph_from_spec(ClusterSpec.model_validate(data["config"]["railyard:cluster"]))


def rails_graph() -> FabricGraph:
    """16 hosts x 4 rails in scalable units of 4 under 16 rail leaves and 2 spines."""
    return graph_from_spec(
        ClusterSpec.model_validate(
            {
                "name": "rails",
                "target": "baremetal",
                "nodes": [
                    {
                        "names": "gpu[001-016]",
                        "hcas": [{"device": f"mlx5_{k}", "rail": k} for k in range(4)],
                    }
                ],
                "fabric": {
                    "kind": "infiniband",
                    "mtu": 4096,
                    "topology": {
                        "kind": "fat-tree",
                        "leaves": 16,
                        "spines": 2,
                        "nodes_per_leaf": 4,
                        "uplinks_per_leaf": 4,
                        "rail_optimized": True,
                    },
                    "infiniband": {"subnet_managers": [{"host": "gpu001"}]},
                },
                "management": {"subnet": "198.18.0.0/24"},
            }
        )
    )


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for(path: Path, what: str, proc: subprocess.Popen[bytes], seconds: float = 20) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert proc.poll() is None, f"{what} exited early (rc {proc.returncode})"
        assert time.monotonic() < deadline, f"{what} did not create {path} within {seconds} s"
        time.sleep(0.1)


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=5)


@pytest.fixture(scope="module")
def munge() -> Iterator[Path]:
    """A private munged: temporary key, socket, pid, seed and log files."""
    if not shutil.which("munged") or not shutil.which("slurmctld"):
        pytest.skip("munge and slurmctld are not installed (apt-get install munge slurmctld)")
    # munged wants execute permission for all on every directory above its socket, which
    # pytest's 0700 tmp_path root denies: use a directory directly under /tmp.
    base = Path(tempfile.mkdtemp(prefix="railyard-munge-"))
    base.chmod(0o755)
    key = base / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o400)
    sock = base / "munge.sock"
    proc = subprocess.Popen(
        [
            "munged",
            "-F",
            f"--key-file={key}",
            f"--socket={sock}",
            f"--pid-file={base / 'munged.pid'}",
            f"--log-file={base / 'munged.log'}",
            f"--seed-file={base / 'munged.seed'}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for(sock, "munged", proc)
        yield sock
    finally:
        stop(proc)
        shutil.rmtree(base, ignore_errors=True)


def show_topology(graph: FabricGraph, munge_sock: Path, workdir: Path) -> str:
    """Start slurmctld with ``tree_conf(graph)``; return ``scontrol show topology``."""
    etc = workdir / "etc"
    etc.mkdir(parents=True)
    (etc / "topology.conf").write_text(tree_conf(graph))
    port = free_port()
    hosts = compress(slurm_tree(graph).hosts())
    (etc / "slurm.conf").write_text(
        "\n".join(
            [
                "ClusterName=railyard",
                f"SlurmctldHost={socket.gethostname()}(127.0.0.1)",
                f"SlurmctldPort={port}",
                f"SlurmdPort={free_port()}",
                "SlurmUser=root",
                "AuthType=auth/munge",
                "CredType=cred/munge",
                f"AuthInfo=socket={munge_sock}",
                f"StateSaveLocation={workdir / 'state'}",
                f"SlurmdSpoolDir={workdir / 'spool'}",
                f"SlurmctldPidFile={workdir / 'slurmctld.pid'}",
                f"SlurmctldLogFile={workdir / 'slurmctld.log'}",
                "ProctrackType=proctrack/linuxproc",
                "TaskPlugin=task/none",
                "SelectType=select/cons_tres",
                "TopologyPlugin=topology/tree",
                f"NodeName={hosts} NodeAddr=127.0.0.1 CPUs=1 State=UNKNOWN",
                "PartitionName=all Nodes=ALL Default=YES State=UP",
                "",
            ]
        )
    )
    env = dict(os.environ, SLURM_CONF=str(etc / "slurm.conf"))
    proc = subprocess.Popen(
        ["slurmctld", "-D", "-i"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            done = subprocess.run(
                ["scontrol", "show", "topology"],
                env=env,
                capture_output=True,
                text=True,
                timeout=30,
                check=False,
            )
            if done.returncode == 0 and done.stdout.strip():
                return done.stdout
            assert proc.poll() is None, (workdir / "slurmctld.log").read_text()[-3000:]
            assert time.monotonic() < deadline, (
                f"scontrol show topology kept failing: {done.stderr}"
            )
            time.sleep(0.5)
    finally:
        stop(proc)


def parse_show_topology(text: str) -> dict[str, tuple[int, list[str], list[str]]]:
    """``scontrol show topology`` -> switch -> (level, hosts, child switches)."""
    out = {}
    for line in text.splitlines():
        match = _LINE.match(line.strip())
        assert match, f"unexpected scontrol line: {line!r}"
        name, level, nodes, switches = match.groups()
        out[name] = (
            int(level),
            expand(nodes) if nodes else [],
            expand(switches) if switches else [],
        )
    return out


@pytest.mark.parametrize("make_graph", [lab_graph, rails_graph], ids=["lab", "rail-optimized"])
def test_scontrol_reports_the_generated_tree(make_graph, munge: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    graph = make_graph()
    tree = slurm_tree(graph)
    out = show_topology(graph, munge, tmp_path)
    (tmp_path / "scontrol_show_topology.txt").write_text(out)
    shown = parse_show_topology(out)
    assert {name: (0, hosts, []) for name, hosts in tree.leaves.items()} == {
        n: v for n, v in shown.items() if v[0] == 0
    }
    for name, children in tree.uppers.items():
        level, hosts, switches = shown[name]
        assert (level, sorted(switches)) == (1, sorted(children))
        assert sorted(hosts) == sorted(h for c in children for h in tree.leaves[c])
