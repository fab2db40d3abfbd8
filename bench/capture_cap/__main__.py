"""``python -m bench.capture_cap [--sizes 16,63,200] [--max-mb N]``: ``python -m fabric import``
and ``topology --from-ibnetdiscover`` on ibnetdiscover captures of the given sizes (MB).

A capture is built by scaling a real one (tests/fixtures/ibnetdiscover__ibsim_lab__1.txt, ibsim
under OpenSM): copy ``i`` has every GUID's ``c903`` (Mellanox's OUI part) replaced by ``i`` in
hex and every node description prefixed ``cI-``, so the result is many separate subnets of the
real one, each with its own GUIDs and hosts, in ibnetdiscover's own line shapes.

Each command is a fresh child process (wall from ``time.perf_counter``; peak RSS from
``os.wait4``'s ``ru_maxrss``); the 1-minute load average is printed with each row. Without
``--max-mb`` the commands run with their default cap (64 MiB): a 200 MB capture is refused at
once. ``--max-mb 256`` shows what raising the cap costs. Not a test.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "ibnetdiscover__ibsim_lab__1.txt"
MB = 1_000_000


def copy_of(text: str, index: int) -> str:
    """The fixture as subnet ``index``: its own GUIDs and host names."""
    text = text.replace("c903", f"{index:04x}")
    return re.sub(r'# "', f'# "c{index}-', text)


def build(path: Path, size_mb: int) -> int:
    """Write a capture of about ``size_mb`` MB at ``path``; return its size in bytes."""
    text = FIXTURE.read_text()
    body = text[text.index("vendid=") :]  # the header once, then the nodes of every copy
    written = 0
    with path.open("w") as out:
        out.write(text[: text.index("vendid=")])
        index = 1
        while written < size_mb * MB:
            if index == 0xC903:
                index += 1
            part = copy_of(body, index)
            out.write(part)
            written += len(part)
            index += 1
    return path.stat().st_size


def run(argv: list[str]) -> tuple[float, float, int, str]:
    """(wall s, peak RSS MiB, exit code, stderr's first line) of ``python -m fabric ARGV``."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "fabric", *argv],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        cwd=ROOT,
    )
    assert proc.stderr is not None
    err = proc.stderr.read().decode(errors="replace")
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    first = (err.splitlines() or [""])[0]
    return wall, usage.ru_maxrss / 1024, os.waitstatus_to_exitcode(status), first[:110]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="16,63,200", help="capture sizes in MB")
    parser.add_argument("--max-mb", type=int, help="pass --max-mb N to both commands")
    args = parser.parse_args()
    cap = ["--max-mb", str(args.max_mb)] if args.max_mb else []
    with tempfile.TemporaryDirectory() as tmp:
        for size in map(int, args.sizes.split(",")):
            path = Path(tmp) / f"capture-{size}.txt"
            nbytes = build(path, size)
            for argv in (
                ["import", str(path), "--output", os.devnull, *cap],
                ["topology", "--from-ibnetdiscover", str(path), *cap],
            ):
                wall, rss, code, err = run(argv)
                print(
                    f"{nbytes / MB:7.1f} MB  {argv[0]:8s} exit {code}  {wall:6.2f} s  "
                    f"{rss:7.0f} MiB peak  load {os.getloadavg()[0]:.2f}  {err}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
