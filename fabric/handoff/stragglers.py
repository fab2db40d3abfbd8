"""Stop what a playbook run leaves behind when it is cut off.

ansible-runner stops a run past its timeout (or cancelled) by killing ``ansible-playbook``'s
process group. Ansible's task workers are not in it: each calls ``setsid()`` and points its
standard streams at ``/dev/null``. A worker cut off this way then waits forever on a pipe of
the dead controller (measured: a ``pause`` task's worker still there an hour later), and a task
still running on a host goes on. Each run therefore marks its processes with an environment
variable of its own (:data:`MARKER`), and :func:`stop_marked` finds them through ``/proc``.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

#: The environment variable whose value names one run's processes.
MARKER = "RAILYARD_ANSIBLE_RUN"
#: Seconds between SIGTERM and SIGKILL.
GRACE_S = 5.0


def marked(value: str, proc: Path = Path("/proc")) -> list[int]:
    """Pids of this user's processes whose environment holds ``MARKER=value`` (none where there
    is no ``/proc``)."""
    needle = f"{MARKER}={value}".encode()
    found = []
    for entry in proc.iterdir() if proc.is_dir() else ():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:  # gone, or another user's
            continue
        if needle in environ.split(b"\0"):
            found.append(int(entry.name))
    return found


def stop_marked(value: str, grace: float = GRACE_S) -> list[int]:
    """SIGTERM every process marked ``value``, SIGKILL those left after ``grace`` seconds and
    wait (``grace`` again at most) until they are gone; return the pids found first."""
    pids = marked(value)
    for pid in pids:
        _signal(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while pids and time.monotonic() < deadline:
        if not [p for p in pids if _alive(p)]:
            return pids
        time.sleep(0.2)
    killed = marked(value)
    for pid in killed:
        _signal(pid, signal.SIGKILL)
    deadline = time.monotonic() + grace
    while [p for p in killed if _alive(p)] and time.monotonic() < deadline:
        time.sleep(0.1)  # SIGKILL is delivered, not yet acted on
    return pids


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"
