"""A simulated InfiniBand fabric on this host for the sweep: ibsim (local mode), one OpenSM
sweep, its console, and the three faults the sweep must name.

ibsim runs in local mode on a private abstract socket (``IBSIM_SOCKNAME``), so nothing else on
the machine shares it; its console reads a FIFO (``fabric.lab.faults.IbsimConsole`` writes
commands there and reads the replies from its log). Tools attach through umad2sim
(``LD_PRELOAD``) as the HCA named by ``SIM_HOST``. OpenSM runs once (``opensm -o``): it
assigns LIDs, programs the forwarding tables and brings every port to Active, then exits, so no
SM re-sweeps behind a fault or a timing. Everything is stopped on exit, within bounds.

Faults, from ibsim 0.10's console and SMA (``ibsim/sim_cmd.c``, ``ibsim/sim_mad.c``):

* a pulled cable: ``Unlink "node"[port]`` (both ends Down/Polling);
* a narrow link: a PortInfo Set of LinkWidthEnabled = 1x on a switch port (``ibportstate LID
  PORT width 1``, an SMP from the vantage host, as an admin would send it); ibsim sets the
  active width of the port and of its peer to 1x at once;
* a counter rise: ``PerformanceSet "node"[port] PortCounters.SymbolErrorCounter=N``.
"""

from __future__ import annotations

import os
import subprocess
import time
import uuid
from pathlib import Path

from fabric.lab.faults import FaultError, IbsimConsole
from fabric.lab.process import Helper, start, stop, wait_log
from fabric.topology.ibsim import UMAD2SIM

#: Bounds (s): ibsim reading its net file, one OpenSM sweep, one console command.
IBSIM_READY_S = 300.0
OPENSM_S = 600.0
CONSOLE_S = 60.0


class SimFabric:
    """ibsim serving ``net_text`` under ``workdir``, swept once by OpenSM as ``sm_host``.

    Use as a context manager. ``env(sim_host)`` is the environment a tool needs to act as that
    node's HCA.
    """

    def __init__(
        self, net_text: str, workdir: Path, sm_host: str, limits: list[str] | None = None
    ) -> None:
        self.workdir = workdir
        self.net = workdir / "fabric.net"
        self.fifo = workdir / "ibsim.console"
        self.log = workdir / "ibsim.log"
        self.sm_host = sm_host
        self.limits = limits or []
        self.sock = f"railyard-sweep-{uuid.uuid4().hex[:12]}"
        self.net_text = net_text
        self.helper: Helper | None = None
        self.console = IbsimConsole(self.fifo, self.log)
        self.opensm_s = 0.0

    def env(self, sim_host: str) -> dict[str, str]:
        """umad2sim's environment for a tool acting as ``sim_host``'s HCA."""
        return {
            "IBSIM_SOCKNAME": self.sock,
            "LD_PRELOAD": UMAD2SIM,
            "SIM_HOST": sim_host,
            "OSM_CACHE_DIR": str(self.workdir),
            "OSM_TMP_DIR": str(self.workdir),
        }

    def __enter__(self) -> SimFabric:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.net.write_text(self.net_text)
        if not self.fifo.exists():
            os.mkfifo(self.fifo, 0o600)
        env = dict(os.environ, IBSIM_SOCKNAME=self.sock)
        try:
            self.helper = start(
                ["ibsim", *self.limits, "-s", str(self.net)],
                self.log,
                env=env,
                stdin_fifo=self.fifo,
            )
            wait_log(self.helper, "Network simulator ready", timeout=IBSIM_READY_S)
            self.sweep_sm()
        except BaseException:
            self.close()
            raise
        return self

    def sweep_sm(self) -> None:
        """One OpenSM sweep (``opensm -o``) as ``sm_host``; raise FaultError when it fails."""
        began = time.monotonic()
        done = self.tool(
            ["opensm", "-o", "-f", str(self.workdir / "opensm.log")], self.sm_host, OPENSM_S
        )
        self.opensm_s = time.monotonic() - began
        if done.returncode != 0:
            raise FaultError(f"opensm -o exited {done.returncode}: {done.stderr.strip()[-300:]}")

    def tool(
        self, argv: list[str], sim_host: str, timeout: float
    ) -> subprocess.CompletedProcess[str]:
        """Run a libumad tool as ``sim_host``'s HCA, bounded by ``timeout``."""
        return subprocess.run(
            argv,
            env=dict(os.environ, **self.env(sim_host)),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def pull_cable(self, node: str, port: int) -> None:
        """Unlink ``node`` (an ibsim node id) port ``port``."""
        reply = self.console.send(f'Unlink "{node}"[{port}]', timeout=CONSOLE_S)
        if "not found" in reply or "can't" in reply:
            raise FaultError(f"ibsim refused Unlink {node}[{port}]: {reply.strip()}")

    def narrow(self, vantage: str, switch_lid: int, port: int) -> None:
        """Set LinkWidthEnabled 1x on a switch port by an SMP from ``vantage``."""
        argv = ["ibportstate", str(switch_lid), str(port), "width", "1"]
        done = self.tool(argv, vantage, CONSOLE_S)
        if done.returncode != 0:
            raise FaultError(
                f"{' '.join(argv)} exited {done.returncode}: {done.stderr.strip()[-300:]}"
            )

    def raise_counter(self, node: str, port: int, counter: str, value: int) -> None:
        """Set a port's PortCounters field in ibsim."""
        self.console.set_counter(node, port, counter, value)

    def close(self) -> None:
        """Stop ibsim (SIGTERM, then SIGKILL) and remove its FIFO."""
        if self.helper is not None:
            stop(self.helper, timeout=10.0)
            self.helper = None
        self.fifo.unlink(missing_ok=True)

    def __exit__(self, *exc: object) -> None:
        self.close()
