"""The ``routing`` family's judging at scale, against a real ibsim + OpenSM.

    python -m bench.routing --hosts 2048               # 64 leaves, 32 spines, OpenSM -R ftree
    python -m bench.routing --hosts 2048 --miscabled   # a host on a spine: ftree falls back
    python -m bench.routing --spec Pulumi.lab.yaml     # a spec's declared fabric and engine

Builds a two-level fat tree (``fabric.lab.simfabric.fat_tree``), serves it with ibsim, sweeps it
once with ``opensm -o -R ftree`` (or a spec's declared fabric and engine; its log in the work directory), then ``--repeat`` times reads
every switch's forwarding table (``dump_fts``), the fabric (``ibnetdiscover``) and OpenSM's log,
and judges them (``fabric.verify.routing``): the engine in use, every host pair's route, every
switch port's load. Medians are reported; the last line reads ``routing N hosts: tools T s
(dump_fts D s, ibnetdiscover I s), judge J s, engine E, worst port W``. Exit 0 when the
verdict is the expected one (healthy: ftree, every route minimal up/down, no port over the
imbalance; miscabled: the fallback named), 1 otherwise, 2 for bad usage, 130 interrupted.
"""

from __future__ import annotations

import argparse
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from fabric.lab.simfabric import SimFabric, fat_tree, host_on_spine
from fabric.spec import load_spec
from fabric.topology.from_spec import graph_from_spec
from fabric.topology.ibsim import ibsim_limits, render_net, sim_host, simulated
from fabric.verify.routing import (
    judge_engine,
    judge_routes,
    read_fabric,
    read_log,
    read_tables,
)
from fabric.verify.sweep import local_runner

DEFAULT_IMBALANCE = 1.5


def _interrupt(*_: object) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.routing", description=__doc__.split("\n")[0]
    )
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--hosts", type=int, default=2048, help="fat-tree hosts (default 2048)")
    group.add_argument("--spec", type=Path, help="a spec whose declared fabric to route")
    parser.add_argument("--repeat", type=int, default=3, help="timed rounds (default 3)")
    parser.add_argument("--miscabled", action="store_true", help="move a host onto a spine")
    parser.add_argument("--imbalance", type=float, default=DEFAULT_IMBALANCE)
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        graph, engine, vantage = _fabric(args)
    except (OSError, ValueError) as err:
        print(f"bench.routing: {err}", file=sys.stderr)
        return 2
    declared = simulated(graph)
    cabled, moved = host_on_spine(graph) if args.miscabled else (graph, "")
    work = Path(tempfile.mkdtemp(prefix="railyard-routing-"))
    try:
        return _run(args, declared, cabled, moved, work, engine, vantage)
    except KeyboardInterrupt:
        print("bench.routing: interrupted; everything it started is stopped", file=sys.stderr)
        return 130
    except (OSError, RuntimeError, ValueError, subprocess.TimeoutExpired) as err:
        print(f"bench.routing: {err}", file=sys.stderr)
        return 1
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


def _fabric(args):  # type: ignore[no-untyped-def]
    """The declared graph, the routing engine and the SM's HCA (``SIM_HOST``)."""
    if args.spec is None:
        graph = fat_tree(args.hosts)
        first = next(iter(graph.cas.values()))
        return graph, "ftree", sim_host(first.host or "", first.device or "")
    spec = load_spec(args.spec)
    ib = spec.fabric.infiniband
    if spec.fabric.kind != "infiniband" or ib is None or not ib.subnet_managers:
        raise ValueError(f"{args.spec}: not an InfiniBand fabric with a subnet manager")
    graph = graph_from_spec(spec)
    sm = ib.subnet_managers[0].host
    ca = next(c for c in graph.cas.values() if c.host == sm)
    return graph, ib.routing_engine, sim_host(ca.host or "", ca.device or "")


def _timed(fn):  # type: ignore[no-untyped-def]
    began = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - began


def _run(args, declared, cabled, moved, work, engine_name, vantage) -> int:  # type: ignore[no-untyped-def]
    began = time.perf_counter()
    with SimFabric(
        render_net(cabled), work, vantage, ibsim_limits(cabled), ["-R", engine_name]
    ) as fabric:
        print(
            f"ibsim ready and OpenSM's sweep done in {time.perf_counter() - began:.1f} s "
            f"(opensm -o -R {engine_name}: {fabric.opensm_s:.1f} s){'; ' + moved if moved else ''}",
            flush=True,
        )
        run = local_runner(fabric.env(vantage))
        rounds: list[dict[str, float]] = []
        for _ in range(max(1, args.repeat)):
            tables, t_fts = _timed(lambda: read_tables(run))
            discovered, t_ibnd = _timed(lambda: read_fabric(run))
            log, t_log = _timed(lambda: read_log(run, str(work / "opensm.log")))
            routes, t_judge = _timed(lambda t=tables, d=discovered: judge_routes(t, d, declared))
            engine = judge_engine(engine_name, log, routes)
            rounds.append(
                {
                    "dump_fts": t_fts,
                    "ibnetdiscover": t_ibnd,
                    "log": t_log,
                    "judge": t_judge,
                    "total": t_fts + t_ibnd + t_log + t_judge,
                }
            )
    med = {k: statistics.median(r[k] for r in rounds) for k in rounds[0]}
    worst = routes.worst
    over = routes.over(args.imbalance)
    print(
        f"{routes.hosts} hosts, {routes.lids} LIDs, {routes.pairs} pairs judged; "
        f"{routes.broken_pairs} broken, {routes.not_updown_pairs} not up/down, "
        f"{routes.not_minimal_pairs} not minimal; {len(over)} ports over {args.imbalance}x"
    )
    print(f"engine: {'ok' if engine.ok else 'FAILED'}: {engine.message}")
    print(
        "rounds (total s): " + ", ".join(f"{r['total']:.2f}" for r in rounds),
    )
    print(
        f"routing {routes.hosts} hosts: tools {med['dump_fts'] + med['ibnetdiscover'] + med['log']:.2f} s "
        f"(dump_fts {med['dump_fts']:.2f} s, ibnetdiscover {med['ibnetdiscover']:.2f} s, "
        f"log {med['log']:.2f} s), judge {med['judge']:.2f} s, engine {engine.engine}, "
        f"worst port {worst.line() if worst else None}"
    )
    if args.miscabled:
        return 0 if not engine.ok and f"fell back from {engine_name} to" in engine.message else 1
    return 0 if engine.ok and routes.all_updown and not over else 1


if __name__ == "__main__":
    sys.exit(main())
