"""``python -m bench.slurm_topology [--sizes 2048,4096,16384] [--repeat 3] [--unmerged 16384]``:
how long a real slurmctld (Debian 12's Slurm 22.05, topology/tree) takes to build its topology
from the topology.conf that ``python -m fabric topology --from-ibnetdiscover`` writes for the
benchmark fabrics of ``bench.topology`` (rail-optimized, 8 HCAs per host).

Per size: the fabric is rendered in ibnetdiscover's format, parsed and written as topology.conf
(``tree_conf``: switches with the same children merged into one line); a private slurmctld
(``bench.slurm_topology.slurmctld``) is started on it ``--repeat`` times. Reported: the build
time slurmctld logs (``slurm_topo_build_config: usec=``; it logs none under 20 ms), the time
until ``scontrol show topology`` answered, and whether what scontrol shows agrees with the
graph (every host under its leaf, every host reachable from a top switch). ``--unmerged`` also
loads, for those sizes and once, the same tree written one line per switch (as before issue 16).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

from bench.slurm_topology.slurmctld import (
    QUIET_BELOW_S,
    available,
    load,
    munged,
    parse_show_topology,
)
from bench.topology.fabric import graph, render_ibnetdiscover
from fabric.hostlist import compress, expand
from fabric.parsers.ibnetdiscover import parse
from fabric.topology.slurm import SlurmTree, slurm_tree, tree_conf


def unmerged_conf(tree: SlurmTree) -> str:
    """The tree one line per switch, merged switches written out again (the old output)."""
    lines = [f"SwitchName={sw} Nodes={compress(hosts)}" for sw, hosts in tree.leaves.items()]
    for sw, kids in tree.uppers.items():
        for name in tree.merged.get(sw, [sw]):
            lines.append(f"SwitchName={name} Switches={compress(kids)}")
    return "\n".join(lines) + "\n"


def agrees(tree: SlurmTree, shown: dict[str, tuple[int, str, str]]) -> bool:
    """Same host -> leaf placement, and every host below some top switch."""
    leaves = {sw: sorted(expand(n)) for sw, (level, n, _) in shown.items() if level == 0}
    if leaves != {sw: sorted(h) for sw, h in tree.leaves.items()}:
        return False
    top = max(level for level, _, _ in shown.values())
    below = {h for level, n, _ in shown.values() if level == top for h in expand(n)}
    return below == set(tree.hosts())


def main() -> None:
    """Load each size's topology.conf in slurmctld ``--repeat`` times; print a table."""
    parser = argparse.ArgumentParser(prog="python -m bench.slurm_topology")
    parser.add_argument("--sizes", default="2048,4096,16384")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--unmerged", default="", help="sizes to load unmerged too")
    args = parser.parse_args()
    missing = available()
    if missing:
        raise SystemExit(missing)
    unmerged = {int(s) for s in args.unmerged.split(",") if s}
    print(
        "hosts  form      lines  switches  build_s(min/median)  ready_s(median)  agrees  "
        "(build under 0.020 s is not logged: shown as <0.020)"
    )
    with munged() as sock, tempfile.TemporaryDirectory() as tmp:
        for hosts in (int(s) for s in args.sizes.split(",")):
            fabric = parse(render_ibnetdiscover(graph(hosts)))
            tree = slurm_tree(fabric)
            forms = {"merged": tree_conf(fabric)}
            if hosts in unmerged:
                forms["unmerged"] = unmerged_conf(tree)
            nodes = compress(tree.hosts())
            for form, conf in forms.items():
                repeat = args.repeat if form == "merged" else 1  # the old form: once is enough
                runs = [
                    load(conf, nodes, sock, Path(tmp) / f"{hosts}-{form}-{n}")
                    for n in range(repeat)
                ]
                builds = [r.build_s if r.build_s is not None else 0.0 for r in runs]

                def shown(value: float) -> str:
                    return f"{value:.3f}" if value >= QUIET_BELOW_S else f"<{QUIET_BELOW_S:.3f}"

                switches = len(parse_show_topology(runs[0].topology))
                ok = all(agrees(tree, parse_show_topology(r.topology)) for r in runs)
                lines = sum(1 for line in conf.splitlines() if not line.startswith("#"))
                print(
                    f"{hosts:<6} {form:<9} {lines:<6} {switches:<9} "
                    f"{shown(min(builds))}/{shown(statistics.median(builds)):<12} "
                    f"{statistics.median(r.ready_s for r in runs):<16.2f} {ok}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
