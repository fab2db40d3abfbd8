"""Capture the sweep's unit-test fixtures: the three tools' real output on an 8-host ibsim fat
tree, healthy, then with the bench's three faults (a pulled cable, a 1x link, a counter rise).

    python -m bench.sweep.capture_fixtures tests/fixtures/sweep

Writes ``{healthy,faulted}_{ibnetdiscover,iblinkinfo,ibqueryerrors}.txt`` with exactly the
command lines ``fabric.verify.sweep`` runs (ibqueryerrors' stderr appended to its stdout, as the
sweep parses it).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from fabric.lab.simfabric import Faults, SimFabric, fat_tree
from fabric.topology.ibsim import ibsim_limits, render_net, sim_host, simulated


def _capture(fabric: SimFabric, vantage: str, cache: str) -> dict[str, str]:
    runs = {
        "ibnetdiscover": ["ibnetdiscover", "-o", "8", "-t", "50", "--cache", cache],
        "iblinkinfo": ["iblinkinfo", "--load-cache", cache],
        "ibqueryerrors": [
            "ibqueryerrors",
            "--load-cache",
            cache,
            "--threshold-file",
            "/dev/null",
            "--skip-sl",
            "-t",
            "50",
        ],
    }
    out = {}
    for name, argv in runs.items():
        done = fabric.tool(argv, vantage, 60)
        out[name] = done.stdout + ("\n" + done.stderr if name == "ibqueryerrors" else "")
    return out


def main(target: Path) -> None:
    graph = fat_tree(8)
    first = next(iter(graph.cas.values()))
    vantage = sim_host(first.host or "", first.device or "")
    target.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="railyard-sweep-fixtures-") as tmp:
        work = Path(tmp)
        with SimFabric(render_net(graph), work, vantage, ibsim_limits(graph)) as fabric:
            for name, text in _capture(fabric, vantage, str(work / "c.cache")).items():
                (target / f"healthy_{name}.txt").write_text(text)
            fabric.inject(Faults.pick(simulated(graph), first.host or ""), vantage)
            for name, text in _capture(fabric, vantage, str(work / "c.cache")).items():
                (target / f"faulted_{name}.txt").write_text(text)


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "tests/fixtures/sweep"))
