"""``python -m bench.topology [--sizes 2048,4096,8192,16384] [--repeat 5] [--ibsim]``: the time
``python -m fabric topology --from-ibnetdiscover FILE`` takes, as a user runs it: the whole
process (interpreter start, imports, reading, parsing, topology.conf), wall and CPU, median of
``--repeat`` runs interleaved over the sizes, with the growth per doubling and NVIDIA
topograph's published figures (issue 16) beside it; then the start-up of ``--help`` and
``validate``. ``--in-process`` instead times ``parse`` and ``tree_conf`` inside a fresh child
(CPU and peak RSS, the tables of the earlier sessions).

Each size's text is written once (by ibsim's real ibnetdiscover with ``--ibsim`` for sizes up to
``--ibsim-max`` hosts, else by ``bench.topology.fabric.render_ibnetdiscover``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.topology.fabric import HCAS, graph, render_ibnetdiscover
from fabric.graph import FabricGraph
from fabric.parsers.ibnetdiscover import parse
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
    from fabric.parsers.ibnetdiscover import fast, tree
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
    compiled = tree._tree_compiled(text, tree.WIDTHS, tree.SPEEDS) if scanner != "regex" else None
    t3 = time.process_time()
    return {
        "parse_s": t1 - t0,
        "conf_s": t2 - t1,
        "cpu_s": t2 - t0,
        "compiled_s": t3 - t2 if compiled is not None else float("nan"),
        "compiled_same": compiled == conf,
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


def same_conf(text: str) -> bool:
    """Whether the compiled topology.conf writer takes ``text`` and gives, byte for byte, what
    the Python path (``tree_conf(parse(text))``, its reference) gives."""
    from fabric.parsers.ibnetdiscover import tree
    from fabric.topology.slurm import tree_conf

    compiled = tree._tree_compiled(text, tree.WIDTHS, tree.SPEEDS) if tree._tree_compiled else None
    return compiled is not None and compiled == tree_conf(parse(text))


#: NVIDIA topograph (Go), whole process, wall, median of 5 interleaved runs on this kind of
#: machine, as issue 16 gives them (2,048 and 4,096 hosts: ibsim's output; 16,384: rendered).
TOPOGRAPH_S = {2048: 0.03, 4096: 0.07, 16384: 1.55}
REPO = Path(__file__).resolve().parents[2]


#: The children's environment: bytecode cached as an installed package has it, in a directory
#: of the benchmark's own (this machine's shells set PYTHONDONTWRITEBYTECODE, which would make
#: every run compile every module it imports from source: a cost no user's run pays).
CHILD_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def run_once(argv: list[str]) -> tuple[float, float]:
    """Wall and CPU (user + system) seconds of one child process, its output discarded."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        argv, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=CHILD_ENV
    )
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    err = proc.stderr.read().decode() if proc.stderr else ""
    if proc.stderr:
        proc.stderr.close()
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"{argv} exited {proc.returncode}: {err[-500:]}")
    return wall, usage.ru_utime + usage.ru_stime


def whole_process(
    paths: dict[int, Path], repeat: int, python: str
) -> dict[int, list[tuple[float, float]]]:
    """``repeat`` rounds, each running every size once (interleaved: load shifts hit all sizes)."""
    runs: dict[int, list[tuple[float, float]]] = {h: [] for h in paths}
    for path in paths.values():  # warm-up, not counted: writes the bytecode cache
        run_once([python, "-m", "fabric", "topology", "--from-ibnetdiscover", str(path)])
    for _ in range(repeat):
        for hosts, path in paths.items():
            runs[hosts].append(
                run_once([python, "-m", "fabric", "topology", "--from-ibnetdiscover", str(path)])
            )
    return runs


def startup(repeat: int, python: str) -> dict[str, list[tuple[float, float]]]:
    """The interpreter alone, ``--help`` and (with the project's own interpreter, which has the
    spec's dependencies) ``validate`` of the lab spec, interleaved."""
    commands = {
        "python -c pass": [python, "-c", "pass"],
        "python -m fabric --help": [python, "-m", "fabric", "--help"],
    }
    if python == sys.executable:
        commands["python -m fabric validate --spec Pulumi.lab.yaml"] = [
            python,
            "-m",
            "fabric",
            "validate",
            "--spec",
            str(REPO / "Pulumi.lab.yaml"),
        ]
    runs: dict[str, list[tuple[float, float]]] = {c: [] for c in commands}
    for argv in commands.values():  # warm-up, not counted
        run_once(argv)
    for _ in range(repeat):
        for name, argv in commands.items():
            runs[name].append(run_once(argv))
    return runs


def write_texts(args: argparse.Namespace, tmp: str) -> tuple[dict[int, Path], dict[int, str]]:
    """Each size's ibnetdiscover text in ``tmp``; the source of each (ibsim or render)."""
    paths: dict[int, Path] = {}
    sources: dict[int, str] = {}
    for hosts in (int(s) for s in args.sizes.split(",")):
        path = Path(tmp) / f"ibnetdiscover_{hosts}.txt"
        source = "ibsim" if args.ibsim and hosts <= args.ibsim_max else "render"
        if source == "ibsim":
            text = ibsim_text(hosts, f"{tmp}/sim{hosts}")
            same = same_fabric(parse(text), parse(render_ibnetdiscover(simulated(graph(hosts)))))
            print(
                f"# {hosts} hosts: ibsim's and the rendered text parse to the same fabric: {same}"
            )
        else:
            text = render_ibnetdiscover(graph(hosts))
        print(f"# {hosts} hosts: the compiled writer gives the reference's text: {same_conf(text)}")
        path.write_text(text)
        paths[hosts], sources[hosts] = path, source
    return paths, sources


def print_whole(paths: dict[int, Path], sources: dict[int, str], repeat: int, python: str) -> None:
    runs = whole_process(paths, repeat, python)
    print(
        "hosts  CAs     source  MB    wall_s median (min)  cpu_s median  growth/doubling  "
        "topograph_s  railyard/topograph"
    )
    previous: tuple[int, float] | None = None
    for hosts, path in paths.items():
        wall = statistics.median(w for w, _ in runs[hosts])
        cpu = statistics.median(c for _, c in runs[hosts])
        growth = ""
        if previous is not None:
            doublings = max(1, (hosts // previous[0]).bit_length() - 1)
            growth = f"{(wall / previous[1]) ** (1 / doublings):.2f}x"
        previous = (hosts, wall)
        ref = TOPOGRAPH_S.get(hosts)
        print(
            f"{hosts:<6} {hosts * 8:<7} {sources[hosts]:<7} {path.stat().st_size / 1e6:<5.1f} "
            f"{wall:.3f} ({min(w for w, _ in runs[hosts]):.3f})        {cpu:<13.3f} {growth:<16} "
            f"{'' if ref is None else f'{ref:.2f}':<12} {'' if ref is None else f'{wall / ref:.2f}'}",
            flush=True,
        )


def print_startup(repeat: int, python: str) -> None:
    print("command                                     wall_s median (min)  cpu_s median")
    for name, runs in startup(repeat, python).items():
        wall = statistics.median(w for w, _ in runs)
        print(
            f"{name:<43} {wall:.3f} ({min(w for w, _ in runs):.3f})        "
            f"{statistics.median(c for _, c in runs):.3f}",
            flush=True,
        )


def print_in_process(
    paths: dict[int, Path], sources: dict[int, str], args: argparse.Namespace
) -> None:
    print(f"# scanner: {args.scanner}")
    print(
        "hosts  CAs     links   source  MB    parse_s  conf_s  cpu_s  median_cpu_s  cpu_us/CA  "
        "peak_RSS_MiB  compiled_writer_s (same text)"
    )
    for hosts, path in paths.items():
        argv = [
            sys.executable,
            "-m",
            "bench.topology",
            "--scanner",
            args.scanner,
            "--measure",
            str(path),
        ]
        runs = [
            json.loads(
                subprocess.run(argv, capture_output=True, text=True, check=True, cwd=REPO).stdout
            )
            for _ in range(args.repeat)
        ]
        best = min(runs, key=lambda r: r["cpu_s"])
        compiled = (
            f"{min(r['compiled_s'] for r in runs):.4f} ({best['compiled_same']})"
            if args.scanner == "compiled"
            else "-"
        )
        median = statistics.median(r["cpu_s"] for r in runs)
        print(
            f"{hosts:<6} {best['cas']:<7} {best['links']:<7} {sources[hosts]:<7} "
            f"{path.stat().st_size / 1e6:<5.1f} {best['parse_s']:<8.3f} {best['conf_s']:<7.3f} "
            f"{best['cpu_s']:<6.3f} {median:<13.3f} {best['cpu_s'] / best['cas'] * 1e6:<10.2f} "
            f"{best['rss_peak_mib']:<13.0f} {compiled}",
            flush=True,
        )


def main() -> None:
    """Write each size's text, then time the whole process (or, ``--in-process``, the parts)."""
    parser = argparse.ArgumentParser(prog="python -m bench.topology")
    parser.add_argument("--sizes", default="2048,4096,8192,16384")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument(
        "--ibsim", action="store_true", help="ibsim's ibnetdiscover up to --ibsim-max"
    )
    parser.add_argument(
        "--ibsim-max", type=int, default=2048, help="largest size run through ibsim"
    )
    parser.add_argument("--in-process", action="store_true", help="parse/conf split in a child")
    parser.add_argument(
        "--scanner",
        choices=("compiled", "regex"),
        default="compiled",
        help="ibnetdiscover scanner for --in-process: the C one (default) or the pure-Python one",
    )
    parser.add_argument(
        "--python",
        default=sys.executable,
        help="interpreter of the timed children (default: this one). E.g. a venv holding only "
        "railyard's wheel: no editable-install finder at start-up, as a user's install",
    )
    parser.add_argument("--measure", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure, args.scanner)))
        return
    print(f"# load average before: {Path('/proc/loadavg').read_text().strip()}")
    with tempfile.TemporaryDirectory() as tmp:
        CHILD_ENV["PYTHONPYCACHEPREFIX"] = f"{tmp}/pycache"  # not in the source tree
        paths, sources = write_texts(args, tmp)
        if args.in_process:
            print_in_process(paths, sources, args)
        else:
            print(f"# children: {args.python} -m fabric (in {REPO})")
            print_whole(paths, sources, args.repeat, args.python)
            print_startup(args.repeat, args.python)
    print(f"# load average after: {Path('/proc/loadavg').read_text().strip()}")


if __name__ == "__main__":
    main()
