"""The simulated InfiniBand fabric: ibsim in remote mode, serving every lab node's HCA."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from fabric.lab.podman import exists, podman
from fabric.lab.process import Helper, start, wait_log

#: The services in lab nodes that send MADs on their own: the subnet managers. ibsim speaks UDP
#: and numbers its clients; an OpenSM still attached to a replaced simulator (the fabric grew or
#: shrank) keeps sweeping into the new one under its old client number, so the new ibsim
#: delivers the replies to whichever new client got that number (umad2sim then dereferences a
#: NULL agent and the process segfaults) or crashes itself. They are stopped first; the
#: hand-off starts them again on the new fabric, in priority order.
MAD_SENDERS = ("opensm.service",)


def console_path(net_file: Path) -> Path:
    """The FIFO ibsim reads console commands from: ``ibsim.console`` beside the net file.

    Fault injection writes ibsim console commands there (``Unlink "gpu01:mlx5_0"[1]``,
    ``Link ...``, ``X <client>`` to drop a dead client); see ``fabric.lab.faults``.
    """
    return net_file.parent / "ibsim.console"


def _ensure_fifo(path: Path) -> None:
    if path.exists() and not stat.S_ISFIFO(path.stat().st_mode):
        path.unlink()
    if not path.exists():
        os.mkfifo(path, 0o600)


def start_ibsim(net_file: Path, port: int, limits: list[str], log: Path) -> Helper:
    """Start ``ibsim -r -l PORT`` on ``net_file`` with its console on a FIFO; wait until ready.

    ibsim binds its UDP ports (PORT and up) on every address; lab nodes reach it at the
    management network's gateway address.
    """
    console = console_path(net_file)
    _ensure_fifo(console)
    helper = start(
        ["ibsim", "-r", "-l", str(port), *limits, "-s", str(net_file)], log, stdin_fifo=console
    )
    wait_log(helper, "Network simulator ready")
    return helper


def stop_mad_senders(containers: list[str]) -> None:
    """Stop ``MAD_SENDERS`` in ``containers`` before their simulator is stopped. A container
    that is gone or stopped, or a node without the unit, is skipped."""
    for container in containers:
        if exists("container", container):
            podman(["exec", container, "systemctl", "stop", *MAD_SENDERS], check=False, timeout=60)


def remove_console(net_file: Path) -> None:
    """Remove the console FIFO (after ibsim is stopped)."""
    console_path(net_file).unlink(missing_ok=True)
