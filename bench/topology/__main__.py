"""``python -m bench.topology [--sizes 2048,16384] [--repeat 3] [--ibsim]``: time ibnetdiscover
parsing + topology.conf generation on rail-optimized fat trees (8 HCAs per host).

Each size's text is written once (by ibsim's real ibnetdiscover with ``--ibsim`` for sizes up to
2,048 hosts, else by ``bench.topology.fabric.render_ibnetdiscover``); each measurement then runs
in a fresh child process that reads the file, and reports CPU time (``time.process_time``) of
``parse`` and of ``tree_conf``, and the child's peak RSS (``VmHWM``) before and after;
the table shows the fastest run's split and the median total.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.topology.fabric import HCAS, graph, render_ibnetdiscover
from fabric.parsers.ibnetdiscover import parse
from fabric.topology.graph import FabricGraph
from fabric.topology.ibsim import IbsimSession, ibsim_limits, render_net, sim_host, simulated


def peak_rss_mib() -> float:
    """This process's peak RSS since its exec (``VmHWM``). Not ``ru_maxrss``: Linux keeps that
    across exec, so a child forked from the benchmark's parent reported the parent's RSS (which
    holds the generated fabric) whenever it was the larger."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


def measure(path: str, scanner: str) -> dict[str, float | str]:
    """Child process: parse ``path`` and write topology.conf; CPU seconds and peak RSS (MiB).
    ``scanner``: "compiled" (the C scanner; an error if it was not built) or "regex" (the
    pure-Python fallback)."""
    from fabric.parsers.ibnetdiscover import fast
    from fabric.topology.slurm import tree_conf

    if scanner == "regex":
        fast._scan_compiled = None
    elif fast._scan_compiled is None:
        raise SystemExit("the compiled scanner is not built (make bootstrap); use --scanner regex")

    text = Path(path).read_text()
    rss0 = peak_rss_mib()
    t0 = time.process_time()
    fabric = parse(text)
    t1 = time.process_time()
    conf = tree_conf(fabric)
    t2 = time.process_time()
    rss1 = peak_rss_mib()
    return {
        "parse_s": t1 - t0,
        "conf_s": t2 - t1,
        "cpu_s": t2 - t0,
        "rss_before_mib": rss0,
        "rss_peak_mib": rss1,
        "scanner": scanner,
        "cas": len(fabric.cas),
        "links": len(fabric.links),
        "conf_lines": conf.count("\n"),
    }


def ibsim_text(hosts: int, workdir: str) -> str:
    """Real ibnetdiscover output of the benchmark fabric served by ibsim. The 8 rails are 8
    separate planes (subnets), so each is swept by its own OpenSM run and discovered from the
    first host's HCA on that rail; the 8 outputs are concatenated."""
    fabric = graph(hosts)
    first = next(iter(fabric.cas.values())).host or ""
    outputs = []
    with IbsimSession(render_net(fabric), workdir, ibsim_limits(fabric)) as sim:
        for rail in range(HCAS):
            host = sim_host(first, f"mlx5_{rail}")
            sim.sweep(host)
            outputs.append(sim.run(["ibnetdiscover"], sim_host=host, timeout=1800))
    return "".join(outputs)


def same_fabric(a: FabricGraph, b: FabricGraph) -> bool:
    """Same nodes (GUID, description, ports) and the same links, in any order."""

    def links(g: FabricGraph) -> set[tuple[object, ...]]:
        return {
            tuple(sorted([(k.a_guid, k.a_port), (k.b_guid, k.b_port)])) + (k.width, k.speed)
            for k in g.links
        }

    return (
        {(c.guid, c.description, c.ports) for c in a.cas.values()}
        == {(c.guid, c.description, c.ports) for c in b.cas.values()}
        and {(s.guid, s.description) for s in a.switches.values()}
        == {(s.guid, s.description) for s in b.switches.values()}
        and links(a) == links(b)
    )


def main() -> None:
    """Write each size's text, measure it ``--repeat`` times in child processes, print a table."""
    parser = argparse.ArgumentParser(prog="python -m bench.topology")
    parser.add_argument("--sizes", default="2048,16384")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--ibsim", action="store_true", help="use ibsim's ibnetdiscover for sizes <= 2048"
    )
    parser.add_argument(
        "--scanner",
        choices=("compiled", "regex"),
        default="compiled",
        help="ibnetdiscover scanner: the C one (default) or the pure-Python fallback",
    )
    parser.add_argument("--measure", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure, args.scanner)))
        return
    with tempfile.TemporaryDirectory() as tmp:
        print(f"# scanner: {args.scanner}")
        print(
            "hosts  CAs     links   source  MB    parse_s  conf_s  cpu_s  median_cpu_s  cpu_us/CA  peak_RSS_MiB"
        )
        for hosts in (int(s) for s in args.sizes.split(",")):
            path = Path(tmp) / f"ibnetdiscover_{hosts}.txt"
            source = "ibsim" if args.ibsim and hosts <= 2048 else "render"
            if source == "ibsim":
                text = ibsim_text(hosts, f"{tmp}/sim{hosts}")
                same = same_fabric(
                    parse(text), parse(render_ibnetdiscover(simulated(graph(hosts))))
                )
                print(
                    f"# {hosts} hosts: ibsim's ibnetdiscover and render_ibnetdiscover parse to the same fabric: {same}"
                )
            else:
                text = render_ibnetdiscover(graph(hosts))
            path.write_text(text)
            runs = [
                json.loads(
                    subprocess.run(
                        [
                            sys.executable,
                            "-m",
                            "bench.topology",
                            "--scanner",
                            args.scanner,
                            "--measure",
                            str(path),
                        ],
                        capture_output=True,
                        text=True,
                        check=True,
                    ).stdout
                )
                for _ in range(args.repeat)
            ]
            best = min(runs, key=lambda r: r["cpu_s"])
            median = statistics.median(r["cpu_s"] for r in runs)
            print(
                f"{hosts:<6} {best['cas']:<7} {best['links']:<7} {source:<7} {len(text) / 1e6:<5.1f} "
                f"{best['parse_s']:<8.3f} {best['conf_s']:<7.3f} {best['cpu_s']:<6.3f} {median:<13.3f} "
                f"{best['cpu_s'] / best['cas'] * 1e6:<10.2f} {best['rss_peak_mib']:.0f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
