"""The fabric sweep at scale, against rdma-core's ``iblinkinfo`` + ``ibqueryerrors``.

    python -m bench.sweep --hosts 2048          # 64 leaves, 32 spines (two-level fat tree)
    python -m bench.sweep --hosts 4096          # 128 leaves, 64 spines; ibsim's -N/-S/-P raised
    python -m bench.sweep --net FILE            # an ibsim net file of your own

Builds the fabric (``fabric.topology.ibsim.render_net`` of a fat tree from a spec, 1 HCA per
host, 32 hosts and 32 uplinks per leaf, 64-port switches), serves it with ibsim and sweeps it
once with OpenSM (``fabric.lab.simfabric``); takes a healthy railyard sweep (its counters are
the first reading, and no cable may fail); injects three faults (a pulled cable, a link at 1x,
a SymbolErrorCounter rise); then, ``--repeat`` times each, interleaved, times railyard's sweep
(``fabric.verify.sweep``, judged against the healthy reading) and the pair ``iblinkinfo`` +
``ibqueryerrors --skip-sl``, both from the same vantage host; and checks that the causes-first
diagnosis names each fault by its cable. Medians are reported. Everything it starts is stopped
on exit (also on errors, Ctrl-C and SIGTERM). Exit 0 when every fault is named and no other
cable fails, 1 otherwise, 2 for bad usage.

With ``--net FILE`` the faults are named as the file names its nodes (``bench.sweep.netfile``):
the served CA picked is the file's one CA record with its node description, Unlinked by that
record's id, and the counter goes on the switch id and port that record's port line names;
the vantage is the file's first CA record. Node ids need not be railyard's ``host:device``.

The last line reads ``sweep N hosts: railyard S s, iblinkinfo+ibqueryerrors A s, faults named
F/3``.
"""

from __future__ import annotations

import argparse
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.sweep.netfile import NetNode, ca_ids, first_ca, parse_net, record_of, switch_end
from fabric.graph import FabricGraph
from fabric.lab.simfabric import COUNTER, COUNTER_VALUE, Faults, SimFabric, fat_tree, switch_lid
from fabric.parsers.ibnetdiscover import parse as parse_ibnetdiscover
from fabric.topology.ibsim import ibsim_limits, render_net, sim_host, simulated
from fabric.verify.causes import diagnose
from fabric.verify.sweep import SweepConfig, local_runner, sweep

#: The pair's bound per run (s).
PAIR_TIMEOUT_S = 300.0


def vantage_host(declared: FabricGraph, records: dict[str, NetNode], vantage: str) -> str:
    """The host (as ``Faults.pick`` names hosts) of the served CA the file calls ``vantage``."""
    for guid, node in records.items():
        if node.node_id == vantage:
            ca = declared.cas[guid]
            return ca.host or ca.guid
    return vantage


def inject(fabric: SimFabric, faults: Faults, vantage: str, records: dict[str, NetNode]) -> None:
    """The three faults, on the nodes and ports as the net file names them: ``Unlink`` the
    pulled CA's record id and port, the counter on the switch id and port the counter CA's
    port line names; the narrowing SMP goes to the switch's LID (``iblinkinfo``)."""
    done = fabric.tool(["iblinkinfo", "--switches-only"], vantage, PAIR_TIMEOUT_S)
    lid = switch_lid(done.stdout, faults.narrow.switch.name)
    pulled = record_of(records, faults.pulled.ca.guid, faults.pulled.ca.description)
    counter = record_of(records, faults.counter.ca.guid, faults.counter.ca.description)
    switch, port = switch_end(counter, faults.counter.ca_port)
    if port != faults.counter.switch_port:
        raise ValueError(
            f'the net file cables "{counter.node_id}"[{faults.counter.ca_port}] to '
            f'"{switch}"[{port}], the served fabric to port {faults.counter.switch_port}'
        )
    fabric.pull_cable(pulled.node_id, faults.pulled.ca_port)
    fabric.narrow(vantage, lid, faults.narrow.switch_port)
    fabric.raise_counter(switch, port, COUNTER, COUNTER_VALUE)


def _time(fn) -> float:  # type: ignore[no-untyped-def]
    began = time.perf_counter()
    fn()
    return time.perf_counter() - began


def _pair(fabric: SimFabric, vantage: str) -> None:
    for argv in (["iblinkinfo"], ["ibqueryerrors", "--skip-sl"]):
        done = fabric.tool(argv, vantage, PAIR_TIMEOUT_S)
        if done.returncode not in (0, 1) or not done.stdout:
            raise RuntimeError(f"{argv[0]} exited {done.returncode}: {done.stderr.strip()[-300:]}")


def _named(diagnosis, faults: Faults) -> int:  # type: ignore[no-untyped-def]
    """How many faults a cause of the right kind names by their host's cable."""
    return sum(
        any(
            c.what == what and re.search(rf"\b{re.escape(host)}\b", c.subject)
            for c in diagnosis.causes
        )
        for what, host in faults.expected().items()
    )


def _interrupt(*_: object) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.sweep", description=__doc__.split("\n")[0]
    )
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--hosts", type=int, default=2048, help="fat-tree hosts (default 2048)")
    group.add_argument("--net", type=Path, help="an ibsim net file instead of a fat tree")
    parser.add_argument("--repeat", type=int, default=3, help="timed rounds (default 3)")
    parser.add_argument("--max-smps", type=int, default=SweepConfig.max_smps)
    parser.add_argument("--timeout-ms", type=int, default=SweepConfig.timeout_ms)
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        if args.net is not None:
            net_text = args.net.read_text()
            declared_spec, limits, vantage = (
                None,
                ["-N", "65536", "-S", "8192", "-P", "1048576"],
                first_ca(parse_net(net_text)).node_id,
            )
        else:
            declared_spec = fat_tree(args.hosts)
            net_text, limits = render_net(declared_spec), ibsim_limits(declared_spec)
            first = next(iter(declared_spec.cas.values()))
            vantage = sim_host(first.host or "", first.device or "")
    except (OSError, ValueError) as err:
        print(f"bench.sweep: {err}", file=sys.stderr)
        return 2
    work = Path(tempfile.mkdtemp(prefix="railyard-sweep-"))
    try:
        return _run(args, net_text, limits, vantage, declared_spec, work)
    except KeyboardInterrupt:
        print("bench.sweep: interrupted; everything it started is stopped", file=sys.stderr)
        return 130
    except (OSError, RuntimeError, ValueError, subprocess.TimeoutExpired) as err:
        print(f"bench.sweep: {err}", file=sys.stderr)
        return 1
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


def _run(args, net_text, limits, vantage, declared_spec, work) -> int:  # type: ignore[no-untyped-def]
    config = SweepConfig(
        max_smps=args.max_smps, timeout_ms=args.timeout_ms, cache=str(work / "sweep.cache")
    )
    began = time.perf_counter()
    with SimFabric(net_text, work, vantage, limits) as fabric:
        print(
            f"ibsim ready and OpenSM's sweep done in {time.perf_counter() - began:.1f} s (opensm -o: {fabric.opensm_s:.1f} s)",
            flush=True,
        )
        run = local_runner(fabric.env(vantage))
        if declared_spec is not None:
            declared = simulated(declared_spec)
        else:  # a net file of the user's: its healthy discovery is the imported cabling
            done = fabric.tool(["ibnetdiscover"], vantage, PAIR_TIMEOUT_S)
            declared = parse_ibnetdiscover(done.stdout)
        hosts = len(declared.cas)
        healthy = sweep(declared, run, config)
        bad = [r for r in healthy.results if r.failed]
        print(
            f"healthy sweep: {len(healthy.results)} results, {len(bad)} failing, {healthy.seconds['total']:.2f} s",
            flush=True,
        )
        for r in bad[:10]:
            print(f"  {r.outcome}: {r.name}[{r.param}]: {r.message[:200]}")
        records = ca_ids(parse_net(net_text), declared)
        faults = Faults.pick(declared, vantage_host(declared, records, vantage))
        inject(fabric, faults, vantage, records)
        print(f"faults: {faults.describe()}", flush=True)
        ours, pair, outcome = [], [], None
        for _ in range(max(1, args.repeat)):
            pair.append(_time(lambda: _pair(fabric, vantage)))
            began = time.perf_counter()
            outcome = sweep(declared, run, config, before=healthy.capture)
            ours.append(time.perf_counter() - began)
        assert outcome is not None
        diagnosis = diagnose(outcome.results, declared)
        named = _named(diagnosis, faults)
        false = len(diagnosis.causes) - named + len(diagnosis.unexplained)
        print(
            f"sweep: {len(outcome.results)} results; split of the last: "
            + ", ".join(f"{k} {v:.2f} s" for k, v in outcome.seconds.items())
        )
        print("causes:")
        for cause in diagnosis.causes:
            print(f"  {cause.line()[:300]}")
        for r in diagnosis.unexplained + diagnosis.errors:
            print(f"  unexplained/error: {r.name}[{r.param}]: {r.message[:200]}")
        print(
            f"railyard runs: {', '.join(f'{t:.2f}' for t in ours)} s; pair runs: {', '.join(f'{t:.2f}' for t in pair)} s; other causes or unexplained failures: {false}; harness notes: {outcome.capture.harness}"
        )
    print(
        f"sweep {hosts} hosts: railyard {statistics.median(ours):.2f} s, "
        f"iblinkinfo+ibqueryerrors {statistics.median(pair):.2f} s, faults named {named}/3"
    )
    return 0 if named == 3 and false == 0 and not bad else 1


if __name__ == "__main__":
    sys.exit(main())
