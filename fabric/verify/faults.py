"""Fault injection for the lab: ibsim console commands, OpenSM stop/start, netdev MTU.

ibsim reads console commands (``Unlink "node"[port]``, ``Link "a"[p] "b"[q]``, ``Dump``,
``Attached``, ``X <client>``) from its stdin, and only without ``-n``. The lab driver
(``fabric.lab.ibsim.start_ibsim``) starts it with ``-n`` and stdin closed, so the lab has no
control channel yet. ``IbsimConsole`` writes to a FIFO that ibsim's stdin is opened on; the
driver adopts it by: creating ``state/<stack>/ibsim.console`` (``os.mkfifo``), dropping
``-n``, and starting ibsim with ``stdin=os.open(fifo, os.O_RDWR)`` (read-write, so ibsim
never sees EOF when a writer closes). Replies go to ibsim's log.
"""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

from fabric.topology.ibsim import sim_host


class FaultError(RuntimeError):
    """A fault could not be injected or restored."""


class IbsimConsole:
    """Write ibsim console commands into the FIFO its stdin reads."""

    def __init__(self, fifo: Path, log: Path | None = None) -> None:
        self.fifo, self.log = fifo, log

    def available(self) -> bool:
        """True when the FIFO exists (the lab driver started ibsim on it)."""
        return self.fifo.exists() and stat.S_ISFIFO(self.fifo.stat().st_mode)

    def send(self, command: str, settle: float = 0.5) -> str:
        """Send one command; return what ibsim appended to its log (if a log is known)."""
        if not self.available():
            raise FaultError(f"{self.fifo} is not an ibsim console FIFO; see fabric.verify.faults for the driver change")
        before = self.log.stat().st_size if self.log and self.log.exists() else 0
        fd = os.open(self.fifo, os.O_WRONLY | os.O_NONBLOCK)
        try:
            os.write(fd, (command.strip() + "\n").encode())
        finally:
            os.close(fd)
        time.sleep(settle)
        if self.log and self.log.exists():
            with open(self.log, "rb") as fh:
                fh.seek(before)
                return fh.read().decode(errors="replace")
        return ""

    def unlink(self, host: str, device: str, port: int = 1) -> str:
        """Take a host's HCA port down (its cable is pulled)."""
        return self.send(f'Unlink "{sim_host(host, device)}"[{port}]')

    def link(self, host: str, device: str, port: int, switch: str, switch_port: int) -> str:
        """Re-cable a host's HCA port to ``switch`` port ``switch_port``."""
        return self.send(f'Link "{sim_host(host, device)}"[{port}] "{switch}"[{switch_port}]')

    def disconnect_client(self, client: int) -> str:
        """Force-disconnect an ibsim client (e.g. a killed ``ibping -S``)."""
        return self.send(f"X {client}")


def stop_sm(host) -> None:  # type: ignore[no-untyped-def]
    """Stop OpenSM on a testinfra host (every opensm unit)."""
    result = host.run("systemctl stop 'opensm*'")
    if result.rc != 0:
        raise FaultError(f"could not stop OpenSM: {result.stderr.strip()}")


def start_sm(host) -> None:  # type: ignore[no-untyped-def]
    """Start OpenSM again on a testinfra host."""
    result = host.run("systemctl start opensm")
    if result.rc != 0:
        raise FaultError(f"could not start OpenSM: {result.stderr.strip()}")


def set_mtu(host, netdev: str, mtu: int) -> int:  # type: ignore[no-untyped-def]
    """Set ``netdev``'s MTU on a testinfra host; return the previous MTU."""
    before = int(host.run(f"cat /sys/class/net/{netdev}/mtu").stdout.strip() or 0)
    result = host.run(f"ip link set dev {netdev} mtu {mtu}")
    if result.rc != 0:
        raise FaultError(f"could not set {netdev} MTU {mtu}: {result.stderr.strip()}")
    return before
