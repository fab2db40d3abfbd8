"""Capture real ibnetdiscover output from ibsim for the topology test fixtures.

``python -m bench.topology.capture_fixtures OUTDIR`` serves each net through a private ibsim,
sweeps it once with OpenSM and writes what ibnetdiscover prints:

* ``ibnetdiscover__ibsim_lab__1.txt``: the lab stack's declared fabric (Pulumi.lab.yaml).
* ``ibnetdiscover__ibsim_lab__2.txt``: the same fabric with faults injected in the net file:
  gpu02 moved from leaf01 port 2 to port 7, gpu04 at 1x, gpu05 at EDR, gpu07 unplugged,
  an undeclared leaf01 port 20 <-> leaf02 port 20 cable.
* ``ibnetdiscover__ibsim_quirks__1.txt`` / ``ibnetdiscover_p__ibsim_quirks__1.txt``: plain and
  ``-p`` output for tests/fixtures/ibsim/quirks.net (MF0 switch names, unset CA description,
  SHARP aggregation node, 2-port HCA on two leaves, host on two leaves, EDR/QDR/1x links).
* ``ibnetdiscover__ibsim_quirks__2.txt``: the same net discovered from its isolated CA.
"""

from __future__ import annotations

import dataclasses
import sys
import tempfile
from pathlib import Path

import yaml

from fabric.graph import FabricGraph, link_rate
from fabric.spec import ClusterSpec
from fabric.topology.from_spec import graph_from_spec
from fabric.topology.ibsim import IbsimSession, render_net, sim_host

ROOT = Path(__file__).resolve().parents[2]


def lab_graph() -> FabricGraph:
    """The lab stack's declared fabric."""
    data = yaml.safe_load((ROOT / "Pulumi.lab.yaml").read_text())
    return graph_from_spec(ClusterSpec.model_validate(data["config"]["railyard:cluster"]))


def faulty(graph: FabricGraph) -> FabricGraph:
    """``graph`` with the faults listed in the module docstring."""
    by_host = {ca.host: guid for guid, ca in graph.cas.items()}
    leaf = {sw.name: guid for guid, sw in graph.switches.items()}
    links = []
    for link in graph.links:
        if link.b_guid == by_host["gpu02"]:
            link = link._replace(a_port=7)
        elif link.b_guid == by_host["gpu04"]:
            link = link._replace(width="1x", rate_gbps=link_rate("1x", link.speed))
        elif link.b_guid == by_host["gpu05"]:
            link = link._replace(speed="EDR", rate_gbps=link_rate(link.width, "EDR"))
        elif link.b_guid == by_host["gpu07"]:
            continue
        links.append(link)
    links.append(
        links[0]._replace(a_guid=leaf["leaf01"], a_port=20, b_guid=leaf["leaf02"], b_port=20)
    )
    return dataclasses.replace(graph, links=links)


def capture(net: str, runs: dict[str, tuple[str, list[str]]], outdir: Path, sm: str) -> None:
    """Serve ``net``, sweep it from ``sm``, write each ``name -> (sim host, argv)`` run's output."""
    with tempfile.TemporaryDirectory() as tmp, IbsimSession(net, tmp) as sim:
        log = sim.sweep(sm)
        if "SUBNET UP" not in log:
            raise RuntimeError(f"OpenSM did not bring the subnet up:\n{log[-2000:]}")
        for name, (host, argv) in runs.items():
            (outdir / name).write_text(sim.run(argv, sim_host=host))


def main(outdir: str) -> None:
    """Capture every fixture into ``outdir``."""
    out = Path(outdir)
    out.mkdir(parents=True, exist_ok=True)
    lab = lab_graph()
    sm = sim_host("sm1", "mlx5_0")
    capture(render_net(lab), {"ibnetdiscover__ibsim_lab__1.txt": (sm, ["ibnetdiscover"])}, out, sm)
    capture(
        render_net(faulty(lab)),
        {"ibnetdiscover__ibsim_lab__2.txt": (sm, ["ibnetdiscover"])},
        out,
        sm,
    )
    quirks = (ROOT / "tests/fixtures/ibsim/quirks.net").read_text()
    first = "a08-p1-dgx-04-c01:mlx5_0"
    capture(
        quirks,
        {
            "ibnetdiscover__ibsim_quirks__1.txt": (first, ["ibnetdiscover"]),
            "ibnetdiscover_p__ibsim_quirks__1.txt": (first, ["ibnetdiscover", "-p"]),
            "ibnetdiscover__ibsim_quirks__2.txt": ("lonely:mlx5_3", ["ibnetdiscover"]),
        },
        out,
        first,
    )


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "tests/fixtures")
