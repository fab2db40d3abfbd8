"""A switch's own subnet manager in the lab (``mode: switch`` with ``configure: true``).

A managed switch runs its SM itself once enabled through its interface; the lab's switches are
ibsim's, with no interface, so the lab stands in for it: OpenSM on this machine, attached to
the switch's port 0 through ibsim. umad2sim's ``SIM_HOST`` may name a switch: ibsim's
``sim_ctl_connect_client`` looks the node up by name or description and attaches the client
to ``node_get_port(node, 0)``, the switch's management port. The process is a helper like
ibsim (pid + start time), with railyard's umad shim ahead of umad2sim as in every lab node.
"""

from __future__ import annotations

import os
from pathlib import Path

from fabric.lab.process import Helper, start, wait_log
from fabric.lab.umadshim import build as build_shim

#: umad2sim, as the lab nodes load it.
UMAD2SIM = "/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so"
#: Seconds OpenSM gets to attach and begin its first sweep (the shim may wait for a slot).
ATTACH_TIMEOUT = 90.0


def start_switch_sm(
    switch: str,
    priority: int,
    routing_engine: str,
    sweep_interval: int,
    server: str,
    port: int,
    workdir: Path,
    log: Path,
) -> Helper:
    """Start OpenSM as ``switch``'s SM on the ibsim at ``server``:``port``; wait until it
    has attached and started discovering."""
    workdir.mkdir(parents=True, exist_ok=True)
    env = dict(
        os.environ,
        LD_PRELOAD=f"{build_shim()}:{UMAD2SIM}",
        IBSIM_SERVER_NAME=server,
        IBSIM_SERVER_PORT=str(port),
        SIM_HOST=switch,
        OSM_CACHE_DIR=str(workdir),
    )
    # in ``workdir``: umad2sim keeps its simulated sysfs tree in ./sys-<pid>
    argv = [
        "/bin/sh", "-c", 'cd "$1" && shift && exec "$@"', "sh", str(workdir),
        "opensm",
        "-p", str(priority),
        "-s", str(sweep_interval),
        "-R", routing_engine,
        "-f", str(workdir / "opensm.log"),
    ]  # fmt: skip
    helper = start(argv, log, env=env)
    wait_log(helper, "Entering DISCOVERING state", ATTACH_TIMEOUT)
    return helper


__all__ = ["start_switch_sm"]
