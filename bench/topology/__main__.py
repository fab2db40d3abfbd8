"""``python -m bench.topology [--sizes 2048,16384] [--repeat 3] [--ibsim]``: time ibnetdiscover
parsing + topology.conf generation on rail-optimized fat trees (8 HCAs per host).

Each size's text is written once (by ibsim's real ibnetdiscover with ``--ibsim`` for sizes up to
2,048 hosts, else by ``bench.topology.fabric.render_ibnetdiscover``); each measurement then runs
in a fresh child process that reads the file, and reports CPU time (``time.process_time``) of
``parse`` and of ``tree_conf``, and the child's peak RSS (``ru_maxrss``) before and after.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.topology.fabric import graph, render_ibnetdiscover
from fabric.topology.ibsim import IbsimSession, ibsim_limits, render_net, sim_host


def measure(path: str) -> dict[str, float]:
    """Child process: parse ``path`` and write topology.conf; CPU seconds and peak RSS (MiB)."""
    from fabric.parsers.ibnetdiscover import parse
    from fabric.topology.slurm import tree_conf

    text = Path(path).read_text()
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    t0 = time.process_time()
    fabric = parse(text)
    t1 = time.process_time()
    conf = tree_conf(fabric)
    t2 = time.process_time()
    rss1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"parse_s": t1 - t0, "conf_s": t2 - t1, "cpu_s": t2 - t0, "rss_before_mib": rss0,
            "rss_peak_mib": rss1, "cas": len(fabric.cas), "links": len(fabric.links), "conf_lines": conf.count("\n")}


def ibsim_text(hosts: int, workdir: str) -> str:
    """Real ibnetdiscover output of the benchmark fabric served by ibsim (swept by OpenSM)."""
    fabric = graph(hosts)
    first = next(iter(fabric.cas.values()))
    with IbsimSession(render_net(fabric), workdir, ibsim_limits(fabric)) as sim:
        host = sim_host(first.host or "", first.device or "")
        sim.sweep(host)
        return sim.run(["ibnetdiscover"], sim_host=host, timeout=1800)


def main() -> None:
    """Write each size's text, measure it ``--repeat`` times in child processes, print a table."""
    parser = argparse.ArgumentParser(prog="python -m bench.topology")
    parser.add_argument("--sizes", default="2048,16384")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--ibsim", action="store_true", help="use ibsim's ibnetdiscover for sizes <= 2048")
    parser.add_argument("--measure", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure)))
        return
    with tempfile.TemporaryDirectory() as tmp:
        print("hosts  CAs     links   source  MB    parse_s  conf_s  cpu_s  cpu_us/CA  peak_RSS_MiB")
        for hosts in (int(s) for s in args.sizes.split(",")):
            path = Path(tmp) / f"ibnetdiscover_{hosts}.txt"
            source = "ibsim" if args.ibsim and hosts <= 2048 else "render"
            text = ibsim_text(hosts, f"{tmp}/sim{hosts}") if source == "ibsim" else render_ibnetdiscover(graph(hosts))
            path.write_text(text)
            runs = [json.loads(subprocess.run([sys.executable, "-m", "bench.topology", "--measure", str(path)],
                                              capture_output=True, text=True, check=True).stdout)
                    for _ in range(args.repeat)]
            best = min(runs, key=lambda r: r["cpu_s"])
            print(f"{hosts:<6} {best['cas']:<7} {best['links']:<7} {source:<7} {len(text) / 1e6:<5.1f} "
                  f"{best['parse_s']:<8.3f} {best['conf_s']:<7.3f} {best['cpu_s']:<6.3f} "
                  f"{best['cpu_s'] / best['cas'] * 1e6:<10.2f} {best['rss_peak_mib']:.0f}", flush=True)


if __name__ == "__main__":
    main()
