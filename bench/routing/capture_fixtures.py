"""Capture the ``routing`` family's unit-test fixtures: real ``dump_fts``, ``ibroute``,
``ibnetdiscover`` and OpenSM log output from a 16-host ibsim fat tree routed by ``opensm -o -R
ftree``, correct, then miscabled (a host on a spine: ftree falls back to minhop).

    python -m bench.routing.capture_fixtures tests/fixtures

Writes ``ibroute__ibsim_routing__{1..5}.txt``, ``opensm_log__ibsim_routing__{1,2}.txt`` and
``routing/{ok,miscabled}_ibnetdiscover.txt`` under the folder given.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from fabric.lab.simfabric import SimFabric, fat_tree, host_on_spine, switch_lid
from fabric.topology.ibsim import ibsim_limits, render_net, sim_host

HOSTS = 16


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m bench.routing.capture_fixtures FOLDER", file=sys.stderr)
        return 2
    out = Path(argv[0])
    (out / "routing").mkdir(parents=True, exist_ok=True)
    graph = fat_tree(HOSTS)
    first = next(iter(graph.cas.values()))
    vantage = sim_host(first.host or "", first.device or "")
    miscabled, _ = host_on_spine(graph)
    for label, net_graph in (("ok", graph), ("miscabled", miscabled)):
        with tempfile.TemporaryDirectory(prefix="railyard-routing-") as tmp:
            work = Path(tmp)
            with SimFabric(
                render_net(net_graph), work, vantage, ibsim_limits(net_graph), ["-R", "ftree"]
            ) as fabric:
                runs = {
                    "dump_fts": ["dump_fts", "-n", "-t", "200"],  # as read_tables runs it
                    "dump_fts_named": ["dump_fts", "-t", "200"],
                    "ibnetdiscover": ["ibnetdiscover"],
                }
                if label == "ok":
                    lid = switch_lid(
                        fabric.tool(["iblinkinfo", "--switches-only"], vantage, 60).stdout, "leaf01"
                    )
                    runs["ibroute"] = ["ibroute", str(lid)]
                    runs["ibroute_ca"] = ["ibroute", "1"]  # LID 1: the SM host's HCA
                text = {
                    name: (lambda d: d.stdout + d.stderr)(fabric.tool(argv, vantage, 60))
                    for name, argv in runs.items()
                }
            log = (work / "opensm.log").read_text()
        n = 1 if label == "ok" else 2
        (out / f"ibroute__ibsim_routing__{n}.txt").write_text(text["dump_fts"])
        (out / f"opensm_log__ibsim_routing__{n}.txt").write_text(log)
        (out / "routing" / f"{label}_ibnetdiscover.txt").write_text(text["ibnetdiscover"])
        if label == "ok":
            (out / "ibroute__ibsim_routing__3.txt").write_text(text["ibroute"])
            (out / "ibroute__ibsim_routing__4.txt").write_text(text["ibroute_ca"])
            (out / "ibroute__ibsim_routing__5.txt").write_text(text["dump_fts_named"])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
