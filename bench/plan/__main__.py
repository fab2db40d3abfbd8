"""``python -m bench.plan [--sizes 1024,4096,16384] [--repeat 1] [--root DIR] [--timeout S]``:
the time ``python -m fabric check --plan --spec FILE --json`` takes, as a user runs it.

Each size's spec is written once (``bench.plan.spec``: the DGX H100 example scaled). Each run is
a fresh child process (the whole process: start, imports, spec, plan, JSON on stdout): wall from
``time.perf_counter``, CPU (user + system) and peak RSS from ``os.wait4``'s rusage, the output's
size and its SHA-256 (the spec's temporary path left out: the same digest before and after a
change is the same plan). The children read bytecode compiled once before the first run, as an
installed package's is (:func:`child_env`). ``--root`` runs another checkout's ``fabric`` (the code before a
change) with this interpreter; a run past ``--timeout`` is stopped and reported as such. The 1-minute load average is printed with each
row: on a shared machine, CPU seconds are the figure to compare. Not a test.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from bench.plan.spec import spec_text

ROOT = Path(__file__).resolve().parents[2]


def child_env(pyc: Path) -> dict[str, str]:
    """The children's environment: bytecode cached in ``pyc`` (its own, so ``--root``
    checkouts never share one) and read from there, as an installed package's is. Without
    PYTHONDONTWRITEBYTECODE, which some machines set (this one does): under it every run
    compiled the whole of ``fabric`` from source, 0.5 s of each."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return env | {"PYTHONPYCACHEPREFIX": str(pyc)}


def compile_once(root: Path, env: dict[str, str]) -> None:
    """Byte-compile ``root``'s ``fabric`` into the children's cache before any run is timed."""
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", "fabric"],
        cwd=root,
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
        timeout=600,
    )


def run(root: Path, spec: Path, timeout: float, env: dict[str, str]) -> dict[str, object]:
    """One ``check --plan --json`` child: wall and CPU seconds, peak RSS, output size, digest."""
    start = time.perf_counter()
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "fabric", "check", "--plan", "--spec", str(spec), "--json"],
            stdout=out,
            stderr=subprocess.DEVNULL,
            cwd=root,
            env=env,
        )
        timer = threading.Timer(timeout, proc.kill)  # os.wait4 below reaps it: no proc.wait
        timer.start()
        _, status, usage = os.wait4(proc.pid, 0)
        timer.cancel()
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - start
        out.seek(0)
        data = out.read()
    code = os.waitstatus_to_exitcode(status)
    return {
        "wall_s": wall,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "rss_mib": usage.ru_maxrss / 1024,
        "bytes": len(data),
        # the spec's temporary path left out: the same plan gives the same digest in any run
        "sha256": hashlib.sha256(data.replace(str(spec).encode(), b"SPEC")).hexdigest()[:16],
        "exit": "timed out" if code < 0 else code,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1024,4096,16384", help="host counts")
    parser.add_argument("--repeat", type=int, default=1, help="runs per size (medians shown)")
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout whose fabric runs")
    parser.add_argument("--timeout", type=float, default=600, help="seconds before a run stops")
    args = parser.parse_args()
    print(f"root {args.root}, python {sys.version.split()[0]}, {os.cpu_count()} CPUs")
    print("hosts   spec KB   wall s    CPU s  RSS MiB   JSON MB  sha256            exit  load")
    with tempfile.TemporaryDirectory() as tmp:
        env = child_env(Path(tmp) / "pyc")
        compile_once(args.root, env)
        for hosts in map(int, args.sizes.split(",")):
            spec = Path(tmp) / f"plan-{hosts}.yaml"
            spec.write_text(spec_text(hosts))
            runs = [run(args.root, spec, args.timeout, env) for _ in range(args.repeat)]
            wall = statistics.median(float(r["wall_s"]) for r in runs)  # type: ignore[arg-type]
            cpu = statistics.median(float(r["cpu_s"]) for r in runs)  # type: ignore[arg-type]
            last = runs[-1]
            print(
                f"{hosts:>6} {spec.stat().st_size / 1000:>8.0f} {wall:>8.1f} {cpu:>8.1f} "
                f"{float(last['rss_mib']):>8.0f} {int(last['bytes']) / 1e6:>9.1f}  "  # type: ignore[arg-type]
                f"{last['sha256']}  {last['exit']!s:>4}  {os.getloadavg()[0]:.1f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
