"""Long-running helper processes (ibsim, the Redfish emulator, its notifier).

A helper is started in its own session so it outlives ``pulumi up``, and is identified by
pid plus the kernel's start time of that pid, so a recycled pid is never mistaken for it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel

from fabric.state import REPO_ROOT


class Helper(BaseModel):
    """A started helper: its pid, the pid's start time (clock ticks since boot) and argv."""

    pid: int
    start_time: int
    argv: list[str]
    log: str


def start_time_of(pid: int) -> int | None:
    """Return the start time of ``pid`` from /proc (field 22 of stat), or None if it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()
    if fields[0] == "Z":
        return None
    return int(fields[19])


def python_env() -> dict[str, str]:
    """The environment for a helper run as ``python -m fabric...``: this one, with the
    repository on PYTHONPATH (a helper outlives the process that started it, cwd included)."""
    env = dict(os.environ)
    root = str(REPO_ROOT)
    env["PYTHONPATH"] = root + (":" + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def alive(helper: Helper) -> bool:
    """Return whether ``helper``'s process still runs (same pid, same start time)."""
    return start_time_of(helper.pid) == helper.start_time


def start(
    argv: Sequence[str],
    log: Path,
    env: dict[str, str] | None = None,
    stdin_fifo: Path | None = None,
) -> Helper:
    """Start ``argv`` detached (new session, output appended to ``log``).

    stdin is closed, or, with ``stdin_fifo``, opened read-write on that FIFO so the helper
    never sees end-of-file and commands written to the FIFO reach it.
    """
    log.parent.mkdir(parents=True, exist_ok=True)
    stdin_fd = os.open(stdin_fifo, os.O_RDWR) if stdin_fifo else subprocess.DEVNULL
    try:
        out = open(log, "ab")
    except OSError:
        if stdin_fifo:
            os.close(stdin_fd)
        raise
    with out:
        proc = subprocess.Popen(
            list(argv),
            stdin=stdin_fd,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env=env,
            close_fds=True,
        )
    if stdin_fifo:
        os.close(stdin_fd)
    started = start_time_of(proc.pid)
    if started is None:
        raise RuntimeError(f"{argv[0]} exited at once; see {log}")
    return Helper(pid=proc.pid, start_time=started, argv=list(argv), log=str(log))


def stop(helper: Helper, timeout: float = 10.0) -> None:
    """Stop ``helper`` (SIGTERM, then SIGKILL after ``timeout``); a no-op when it is gone."""
    if not alive(helper):
        return
    os.kill(helper.pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not alive(helper):
            _reap(helper.pid)
            return
        time.sleep(0.1)
    os.kill(helper.pid, signal.SIGKILL)
    _reap(helper.pid)


def _reap(pid: int) -> None:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def wait_log(helper: Helper, needle: str, timeout: float = 20.0) -> None:
    """Wait until ``needle`` appears in the helper's log; raise if it dies or times out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if needle in Path(helper.log).read_text(errors="replace"):
            return
        if not alive(helper):
            raise RuntimeError(f"{helper.argv[0]} exited while starting; see {helper.log}")
        time.sleep(0.2)
    raise RuntimeError(
        f"{helper.argv[0]} did not report {needle!r} within {timeout:.0f}s; see {helper.log}"
    )
