"""The rendered ibsim net file runs in real ibsim: OpenSM brings the subnet up, ibstat sees
each host's HCA under ``SIM_HOST``, and ibnetdiscover discovers the declared fabric."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from fabric.graph import FabricGraph
from fabric.spec import ClusterSpec
from fabric.state import REPO_ROOT
from fabric.topology.from_spec import graph_from_spec
from fabric.topology.ibsim import ibsim_limits, render_net, sim_host, simulated

pytestmark = pytest.mark.integration

UMAD2SIM = "/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so"


@dataclass
class SimFabric:
    """A running ibsim with the lab spec's fabric, swept once by OpenSM."""

    graph: FabricGraph
    workdir: Path
    env: dict[str, str]
    opensm_log: str

    def run(self, host: str, device: str, *argv: str) -> str:
        """Run a libumad tool as ``host``'s HCA ``device``; return its stdout."""
        env = dict(self.env, SIM_HOST=sim_host(host, device))
        done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60, check=True)
        return done.stdout


def lab_spec() -> ClusterSpec:
    data = yaml.safe_load((REPO_ROOT / "Pulumi.lab.yaml").read_text())
    return ClusterSpec.model_validate(data["config"]["railyard:cluster"])


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimFabric]:
    for tool in ("ibsim", "opensm", "ibstat", "ibnetdiscover"):
        if not shutil.which(tool):
            pytest.skip(
                f"{tool} is not installed (apt-get install ibsim-utils opensm infiniband-diags)"
            )
    workdir = tmp_path_factory.mktemp("ibsim")
    graph = graph_from_spec(lab_spec())
    net = workdir / "lab.net"
    net.write_text(render_net(graph))
    # A unique abstract-socket name keeps this ibsim apart from any other on the machine.
    env = dict(
        os.environ,
        IBSIM_SOCKNAME=f"railyard-{uuid.uuid4().hex[:12]}",
        LD_PRELOAD=UMAD2SIM,
        OSM_CACHE_DIR=str(workdir),
    )
    sim_env = {k: v for k, v in env.items() if k != "LD_PRELOAD"}
    log = open(workdir / "ibsim.log", "w")
    proc = subprocess.Popen(
        ["ibsim", *ibsim_limits(graph), "-n", "-s", str(net)],
        env=sim_env,
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 10
        while "Network simulator ready" not in (workdir / "ibsim.log").read_text():
            assert proc.poll() is None, (workdir / "ibsim.log").read_text()
            assert time.monotonic() < deadline, "ibsim did not start within 10 s"
            time.sleep(0.1)
        sm_env = dict(env, SIM_HOST=sim_host("sm1", "mlx5_0"))
        osm_log = workdir / "opensm.log"
        subprocess.run(
            ["opensm", "-o", "-f", str(osm_log)],
            env=sm_env,
            capture_output=True,
            timeout=60,
            check=True,
        )
        yield SimFabric(graph=graph, workdir=workdir, env=env, opensm_log=osm_log.read_text())
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        log.close()


def test_opensm_brings_the_subnet_up(sim: SimFabric) -> None:
    assert "SUBNET UP" in sim.opensm_log


@pytest.mark.parametrize("host", ["gpu01", "gpu08", "sm2"])
def test_ibstat_runs_as_the_hosts_hca(sim: SimFabric, host: str) -> None:
    ca = sim.graph.ca_by_name[(host, "mlx5_0")]
    out = sim.run(host, "mlx5_0", "ibstat")
    assert f"Node GUID: {ca.guid}" in out
    assert "State: Active" in out


def test_ibnetdiscover_shows_every_hca_by_host_and_the_simulated_speed(sim: SimFabric) -> None:
    out = sim.run("gpu01", "mlx5_0", "ibnetdiscover")
    (sim.workdir / "ibnetdiscover.txt").write_text(out)
    for ca in sim.graph.cas.values():
        assert f'# "{ca.host} {ca.device}"' in out
    # Declared 4xNDR; ibsim 0.10's fastest speed is HDR (see fabric.topology.ibsim).
    expected = {f"{link.width}{link.speed}" for link in simulated(sim.graph).links}
    assert expected == {"4xHDR"}
    assert out.count("4xHDR") == 2 * len(sim.graph.links)
