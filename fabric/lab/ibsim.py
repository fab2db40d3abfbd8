"""The simulated InfiniBand fabric: ibsim in remote mode, serving every lab node's HCA."""

from __future__ import annotations

from pathlib import Path

from fabric.lab.process import Helper, start, wait_log


def start_ibsim(net_file: Path, port: int, limits: list[str], log: Path) -> Helper:
    """Start ``ibsim -r -l PORT -n`` on ``net_file``; wait until it reports ready.

    ibsim binds its UDP ports (PORT and up) on every address; lab nodes reach it at the
    management network's gateway address.
    """
    helper = start(["ibsim", "-r", "-l", str(port), "-n", *limits, "-s", str(net_file)], log)
    wait_log(helper, "Network simulator ready")
    return helper
