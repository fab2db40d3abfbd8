"""``fabric check``'s cost at scale, projected from a measured run (not a test).

    python -m bench.sweep.check_cost state/<stack>/reports/checks.xml --hosts 2048 --cores 16 \\
        [--sweep-s 1.96] [--collect-cpu-s 7.0] [--wall-s 14.2]

Reads the JUnit file of one ``fabric check`` on a lab (``python -m fabric check``) and splits
its item times into the fabric sweep (one vantage host, ``checks/test_sweep.py``: one xdist
group) and the host part (every other item: SSH to a host, grouped per host). The host part's
cost per host is the sum of its item times over the hosts it touched; at ``--hosts`` hosts it
runs on ``fabric.verify.runner.workers_for(hosts, cores)`` workers, so its wall time is
per-host cost x hosts / workers. The sweep's wall time at that size is ``--sweep-s`` (the
tools, from ``python -m bench.sweep --hosts N``) plus the counter window
(``health.sample_seconds``) plus the sweep items' pytest cost per cable measured here, times the
cables. Collection is ``--collect-cpu-s`` of CPU per worker (``pytest --collect-only`` of the
suite at that size), spread over the cores. Prints one line per part and the total.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from fabric.verify.results import read_junit
from fabric.verify.runner import workers_for

SWEEP_CHECKS = {
    "test_declared_link_discovered",
    "test_no_undeclared_links",
    "test_port_state_active",
    "test_port_physical_state_linkup",
    "test_port_error_counters",
}


def _host_of(subjects: list[str]) -> str | None:
    """The host an item is about (its port's, its pair's source), None for a switch's."""
    for subject in subjects:
        kind, _, rest = subject.partition(":")
        if kind in ("host", "port", "pair"):
            return rest.split("/", 1)[0].split("->", 1)[0]
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.sweep.check_cost")
    parser.add_argument("junit", type=Path)
    parser.add_argument("--hosts", type=int, default=2048)
    parser.add_argument("--cores", type=int, default=16)
    parser.add_argument("--cables", type=int, default=0, help="default: 2 x hosts (fat tree)")
    parser.add_argument("--sweep-s", type=float, default=1.96, help="bench/sweep at --hosts")
    parser.add_argument("--window-s", type=float, default=5.0, help="health.sample_seconds")
    parser.add_argument("--collect-cpu-s", type=float, default=7.0)
    parser.add_argument("--wall-s", type=float, default=0.0, help="the measured run's wall time")
    args = parser.parse_args(argv)
    results = read_junit(args.junit)
    sweep = [r for r in results if r.name in SWEEP_CHECKS]
    host_part = [r for r in results if r.name not in SWEEP_CHECKS]
    hosts = {h for r in host_part if (h := _host_of(r.subjects)) is not None}
    host_s = sum(r.seconds for r in host_part)
    per_host = host_s / max(1, len(hosts))
    swept_cables = max(1, len({r.param for r in sweep if r.name == "test_port_state_active"}))
    # a worker's first sweep item carries the sweep (or waits for it on the lock): the median
    # item is a lookup
    item_s = sorted(r.seconds for r in sweep)
    per_item = item_s[len(item_s) // 2] if item_s else 0.0
    workers = workers_for(args.hosts, args.cores)
    cables = args.cables or 2 * args.hosts
    items_per_cable = len(sweep) / swept_cables
    projected_host = per_host * args.hosts / workers
    projected_sweep = args.sweep_s + args.window_s + per_item * items_per_cable * cables
    collect = args.collect_cpu_s * workers / args.cores
    total = collect + max(projected_host, projected_sweep)
    print(
        f"measured: {len(results)} checks, {len(host_part)} host-part items on {len(hosts)} "
        f"hosts ({host_s:.1f} s, {per_host:.2f} s per host), {len(sweep)} sweep items "
        f"({per_item * 1000:.1f} ms per lookup, the median)"
        + (f", wall {args.wall_s:.1f} s" if args.wall_s else "")
    )
    print(
        f"{args.hosts} hosts, {args.cores} cores, {workers} workers: host part "
        f"{projected_host:.0f} s, sweep {projected_sweep:.0f} s ({cables} cables), "
        f"collection {collect:.0f} s"
    )
    print(f"fabric check {args.hosts} hosts: {total:.0f} s ({total / 60:.1f} min)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
