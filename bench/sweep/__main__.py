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

from fabric.lab.simfabric import SimFabric
from fabric.parsers.iblinkinfo import parse as parse_iblinkinfo
from fabric.parsers.ibnetdiscover import parse as parse_ibnetdiscover
from fabric.spec import ClusterSpec
from fabric.topology.from_spec import graph_from_spec
from fabric.topology.graph import FabricGraph
from fabric.topology.ibsim import ibsim_limits, render_net, sim_host, simulated
from fabric.verify.causes import diagnose
from fabric.verify.sweep import SweepConfig, local_runner, sweep

HOSTS_PER_LEAF = 32
#: The pair's bound per run (s).
PAIR_TIMEOUT_S = 300.0
COUNTER = "SymbolErrorCounter"
COUNTER_VALUE = 500


def fat_tree(hosts: int) -> FabricGraph:
    """A two-level fat tree: ``hosts``/n leaves (n = 32, or 4 below 64 hosts), half as many
    spines, n host ports and n uplinks per leaf, 1 HCA (4xNDR, simulated as 4xHDR) per host."""
    n = HOSTS_PER_LEAF if hosts >= 2 * HOSTS_PER_LEAF else 4
    if hosts % (2 * n):
        raise ValueError(f"--hosts {hosts}: use a multiple of {2 * n}")
    leaves, width = hosts // n, len(str(hosts))
    spec = ClusterSpec.model_validate(
        {
            "name": "sweep",
            "target": "lab",
            "nodes": [
                {
                    "names": f"gpu[{1:0{width}d}-{hosts:0{width}d}]",
                    "hcas": [{"device": "mlx5_0", "rate_gbps": 400}],
                }
            ],
            "fabric": {
                "kind": "infiniband",
                "mtu": 4096,
                "topology": {
                    "kind": "fat-tree",
                    "leaves": leaves,
                    "spines": leaves // 2,
                    "ports_per_switch": 2 * n,
                    "nodes_per_leaf": n,
                    "uplinks_per_leaf": n,
                },
                "infiniband": {"subnet_managers": [{"host": "gpu" + "1".zfill(width)}]},
            },
            "management": {"subnet": "198.19.0.0/17"},
        }
    )
    return graph_from_spec(spec)


def _first_ca(net_text: str) -> str:
    match = re.search(r'^(?:Ca|Hca)\s+\d+\s+"([^"]+)"', net_text, re.MULTILINE)
    if match is None:
        raise ValueError("the net file has no Ca/Hca record to sweep from")
    return match[1]


class Faults:
    """The three faults, chosen on host cables away from the vantage host."""

    def __init__(self, declared: FabricGraph, vantage_host: str | None) -> None:
        host_links = [
            link
            for link in declared.links
            if (link.a_guid in declared.switches) != (link.b_guid in declared.switches)
        ]

        def ends(link):  # type: ignore[no-untyped-def]
            sw, ca = (
                (link.a_guid, link.b_guid)
                if link.a_guid in declared.switches
                else (link.b_guid, link.a_guid)
            )
            port_sw, port_ca = (
                (link.a_port, link.b_port) if sw == link.a_guid else (link.b_port, link.a_port)
            )
            return declared.switches[sw], port_sw, declared.cas[ca], port_ca

        usable = [ends(link) for link in host_links if ends(link)[2].host != vantage_host]
        if len(usable) < 3:
            raise ValueError("the fabric needs at least 3 host cables besides the vantage host's")
        self.pulled, self.narrow, self.counter = usable[-1], usable[len(usable) // 2], usable[1]

    @staticmethod
    def host_of(end) -> str:  # type: ignore[no-untyped-def]
        return end[2].host or end[2].guid


def _switch_lid(linkinfo: str, switch: str) -> int:
    for node in parse_iblinkinfo(linkinfo).nodes:
        if node.kind == "switch" and node.name == switch and node.links:
            return node.links[0].lid
    raise ValueError(f"switch {switch} not found in iblinkinfo")


def _time(fn) -> float:  # type: ignore[no-untyped-def]
    began = time.perf_counter()
    fn()
    return time.perf_counter() - began


def _pair(fabric: SimFabric, vantage: str) -> None:
    for argv in (["iblinkinfo"], ["ibqueryerrors", "--skip-sl"]):
        done = fabric.tool(argv, vantage, PAIR_TIMEOUT_S)
        if done.returncode not in (0, 1) or not done.stdout:
            raise RuntimeError(f"{argv[0]} exited {done.returncode}: {done.stderr.strip()[-300:]}")


def _named(diagnosis, faults: Faults) -> tuple[int, list[str]]:  # type: ignore[no-untyped-def]
    """How many faults a cause names by their cable, and every cause line."""
    want = {
        "cable down": Faults.host_of(faults.pulled),
        "port degraded": Faults.host_of(faults.narrow),
        "cable with errors": Faults.host_of(faults.counter),
    }
    named = 0
    for what, host in want.items():
        if any(
            c.what == what and re.search(rf"\b{re.escape(host)}\b", c.subject)
            for c in diagnosis.causes
        ):
            named += 1
    return named, [c.line() for c in diagnosis.causes]


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
                _first_ca(net_text),
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
        vantage_host = vantage.split(":", 1)[0]
        faults = Faults(declared, vantage_host)
        linkinfo = fabric.tool(["iblinkinfo", "--switches-only"], vantage, PAIR_TIMEOUT_S).stdout
        sw, sw_port, ca, ca_port = faults.pulled
        fabric.pull_cable(sim_host(ca.host or "", ca.device or "") if ca.host else ca.guid, ca_port)
        sw, sw_port, _, _ = faults.narrow
        fabric.narrow(vantage, _switch_lid(linkinfo, sw.name), sw_port)
        sw, sw_port, _, _ = faults.counter
        fabric.raise_counter(sw.name, sw_port, COUNTER, COUNTER_VALUE)
        print(
            "faults: pulled "
            + ", narrowed ".join(
                f"{Faults.host_of(f)}'s cable ({f[0].name} port {f[1]})"
                for f in (faults.pulled, faults.narrow)
            )
            + f", {COUNTER}={COUNTER_VALUE} on {faults.counter[0].name} port {faults.counter[1]} ({Faults.host_of(faults.counter)}'s cable)",
            flush=True,
        )
        ours, pair, outcome = [], [], None
        for _ in range(max(1, args.repeat)):
            pair.append(_time(lambda: _pair(fabric, vantage)))
            began = time.perf_counter()
            outcome = sweep(declared, run, config, before=healthy.capture)
            ours.append(time.perf_counter() - began)
        assert outcome is not None
        diagnosis = diagnose(outcome.results, declared)
        named, lines = _named(diagnosis, faults)
        false = len(diagnosis.causes) - named + len(diagnosis.unexplained)
        print(
            f"sweep: {len(outcome.results)} results; split of the last: "
            + ", ".join(f"{k} {v:.2f} s" for k, v in outcome.seconds.items())
        )
        print("causes:")
        for line in lines:
            print(f"  {line[:300]}")
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
