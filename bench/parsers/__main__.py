"""``python -m bench.parsers [--sizes 1,10,100] [--tools ibstat,...] [--mode parse|cli]``: each
tool-output parser at 1, 10 and 100 MB of input built by repeating real fixture records.

Each measurement runs in a fresh child process that reads the file and reports wall time,
CPU time (``time.process_time``) and its peak RSS (``VmHWM``, as bench/topology reads it).
``--mode parse`` times ``fabric.parsers.PARSERS[tool](text)``; ``--mode cli`` times the whole
``python -m fabric parse TOOL FILE --max-mb N`` (read, decode, parse, JSON to /dev/null).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.parsers.inputs import build_input
from fabric.parsers import PARSERS

MB = 1_000_000


def peak_rss_mib() -> float:
    """This process's peak RSS since its exec (``VmHWM``; not ``ru_maxrss``, which Linux keeps
    across exec)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


def measure(tool: str, path: str, mode: str) -> dict[str, object]:
    """Child process: parse ``path`` as ``tool`` output once; wall and CPU seconds, peak RSS."""
    rss0 = peak_rss_mib()
    wall0, cpu0 = time.perf_counter(), time.process_time()
    if mode == "cli":
        from fabric.cli import main

        stdout = sys.stdout
        with open(os.devnull, "w") as sink:
            sys.stdout = sink
            try:
                code = main(["parse", tool, path, "--max-mb", "1024"])
            finally:
                sys.stdout = stdout
        ok: object = code
    else:
        result = PARSERS[tool](Path(path).read_text())
        ok = getattr(result, "ok", True)
    return {
        "wall_s": time.perf_counter() - wall0,
        "cpu_s": time.process_time() - cpu0,
        "rss_before_mib": rss0,
        "rss_peak_mib": peak_rss_mib(),
        "ok": ok,
    }


def run_child(tool: str, path: Path, mode: str, timeout: float) -> dict[str, object]:
    """One measurement in a fresh interpreter."""
    done = subprocess.run(
        [sys.executable, "-m", "bench.parsers", "--measure", tool, str(path), "--mode", mode],
        capture_output=True,
        text=True,
        check=False,
        timeout=timeout,
    )
    if done.returncode != 0:
        return {"error": (done.stderr.strip().splitlines() or ["?"])[-1]}
    return json.loads(done.stdout)


def main() -> None:
    """Build each tool's inputs, measure each in a child process, print one row per run."""
    parser = argparse.ArgumentParser(prog="python -m bench.parsers")
    parser.add_argument("--sizes", default="1,10,100", help="input sizes in MB (10^6 bytes)")
    parser.add_argument("--tools", default=",".join(sorted(PARSERS)))
    parser.add_argument("--mode", choices=("parse", "cli"), default="parse")
    parser.add_argument("--timeout", type=float, default=600, help="per child, seconds")
    parser.add_argument("--measure", nargs=2, metavar=("TOOL", "FILE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(*args.measure, args.mode)))
        return
    sizes = [int(size) for size in args.sizes.split(",")]
    print(f"# mode: {args.mode}; load average: {Path('/proc/loadavg').read_text().strip()}")
    print(
        "tool             MB     records  wall_s   cpu_s    s/MB    base_MiB  peak_MiB  growth/MB  ok"
    )
    with tempfile.TemporaryDirectory(prefix="bench-parsers-") as tmp:
        for tool in args.tools.split(","):
            for size in sizes:
                path = Path(tmp) / f"{tool}.txt"
                records = build_input(tool, size * MB, path)
                mb = path.stat().st_size / MB
                got = run_child(tool, path, args.mode, args.timeout)
                if "error" in got:
                    print(f"{tool:<16} {mb:<6.1f} {records:<8} error: {got['error']}", flush=True)
                    continue
                wall, cpu = got["wall_s"], got["cpu_s"]
                base, peak = got["rss_before_mib"], got["rss_peak_mib"]
                growth = (peak - base) * 2**20 / (mb * MB)  # peak RSS added per input byte
                print(
                    f"{tool:<16} {mb:<6.1f} {records:<8} {wall:<8.2f} {cpu:<8.2f} "
                    f"{wall / mb:<7.3f} {base:<9.0f} {peak:<9.0f} {growth:<10.1f} {got['ok']}",
                    flush=True,
                )
                path.unlink()


if __name__ == "__main__":
    main()
