"""ibsim's console: commands written into the FIFO its stdin reads, replies read from its log.

The lab's ibsim reads console commands from a FIFO (``state/<stack>/ibsim.console``, see
``fabric.lab.ibsim.console_path``) and writes replies, each ended by a ``sim> `` prompt, to
its log. Commands used here: ``Unlink "node"[port]`` (pull a cable; both ends go
Down/Polling), ``Link "a"[p] "b"[q]`` (cable two ports; width and speed are the lower of the
two ports' enabled masks), ``Clear "node"[port]`` (unlink and reset the port to ibsim's
default 4xSDR template), ``Attached`` (list clients), ``X <client>`` (drop a client) and
``PerformanceSet "node"[port] PortCounters.<Counter>=<value>`` (set a port's error counter).
Writers take an exclusive lock on the log so replies of concurrent writers do not mix.

The simulator's protocol, not a lab driver: the lab's fault injection (``fabric.lab.faults``)
and the check suite's housekeeping (``fabric.verify.harness``) both speak it.
"""

from __future__ import annotations

import fcntl
import os
import stat
import time
from collections.abc import Callable
from pathlib import Path

from fabric.topology.ibsim import sim_host
from fabric.topology.ibsim_clients import SimClient, dead_clients, parse_attached

PROMPT = "sim> "


class FaultError(RuntimeError):
    """A fault could not be injected or restored."""


class IbsimConsole:
    """Write ibsim console commands into the FIFO its stdin reads."""

    def __init__(self, fifo: Path, log: Path | None = None) -> None:
        self.fifo, self.log = fifo, log

    def available(self) -> bool:
        """True when the FIFO exists (the lab driver started ibsim on it)."""
        return self.fifo.exists() and stat.S_ISFIFO(self.fifo.stat().st_mode)

    def send(self, command: str, timeout: float = 5.0) -> str:
        """Send one command; return ibsim's reply (what it appended to its log up to the prompt)."""
        if not self.available():
            raise FaultError(
                f"{self.fifo} is not an ibsim console FIFO (is the lab's ibsim running?)"
            )
        if self.log is None or not self.log.exists():
            raise FaultError(f"ibsim log {self.log} not found: replies cannot be read")
        with open(self.log, "rb") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                before = self.log.stat().st_size
                fd = os.open(self.fifo, os.O_WRONLY | os.O_NONBLOCK)
                try:
                    os.write(fd, (command.strip() + "\n").encode())
                finally:
                    os.close(fd)
                return self._reply(before, command, timeout)
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def _reply(self, offset: int, command: str, timeout: float) -> str:
        assert self.log is not None
        deadline = time.monotonic() + timeout
        while True:
            with open(self.log, "rb") as fh:
                fh.seek(offset)
                text = fh.read().decode(errors="replace")
            if PROMPT in text:
                return text.split(PROMPT, 1)[0]
            if time.monotonic() > deadline:
                raise FaultError(
                    f"ibsim gave no prompt after {command!r} within {timeout:.0f}s; see {self.log}"
                )
            time.sleep(0.05)

    def attached(self) -> list[SimClient]:
        """Every client attached to ibsim."""
        return parse_attached(self.send("Attached"))

    def reap(self, host: str, alive_pids: Callable[[str, list[int]], set[int]]) -> list[SimClient]:
        """Disconnect ``host``'s clients whose process is gone; return them."""
        dead = dead_clients(self.attached(), host, alive_pids)
        for client in dead:
            self.disconnect_client(client.id, missing_ok=True)
        return dead

    def unlink(self, host: str, device: str, port: int = 1) -> str:
        """Take a host's HCA port down (its cable is pulled)."""
        return self.send(f'Unlink "{sim_host(host, device)}"[{port}]')

    def link(self, host: str, device: str, port: int, switch: str, switch_port: int) -> str:
        """Re-cable a host's HCA port to ``switch`` port ``switch_port``."""
        return self.send(f'Link "{sim_host(host, device)}"[{port}] "{switch}"[{switch_port}]')

    def disconnect_client(self, client: int, missing_ok: bool = False) -> str:
        """Force-disconnect an ibsim client (e.g. a killed ``ibping -S``).

        ``missing_ok``: a client that deregistered itself between ``Attached`` and ``X`` (a
        server exiting as it is reaped) is not an error.
        """
        reply = self.send(f"X {client}")
        if "bad clientid" in reply and not missing_ok:
            raise FaultError(f"ibsim refused X {client}: {reply.strip()}")
        return reply

    def clear(self, node: str, port: int) -> str:
        """Unlink a port and reset it to ibsim's default port template (4xSDR enabled)."""
        return self.send(f'Clear "{node}"[{port}]')

    def set_counter(self, node: str, port: int, counter: str, value: int) -> str:
        """Set a port's PortCounters field (e.g. ``SymbolErrorCounter``) in ibsim: ``node`` is an
        ibsim node id (a switch name, or ``fabric.topology.ibsim.sim_host`` of an HCA)."""
        reply = self.send(f'PerformanceSet "{node}"[{port}] PortCounters.{counter}={value}')
        if "has been set to" not in reply:  # ibsim's answer to a PerformanceSet it applied
            raise FaultError(f"ibsim refused PerformanceSet on {node}[{port}]: {reply.strip()}")
        return reply

    def link_nodes(self, a: str, a_port: int, b: str, b_port: int) -> str:
        """Cable node ``a`` port ``a_port`` to node ``b`` port ``b_port`` (ibsim node ids)."""
        reply = self.send(f'Link "{a}"[{a_port}] "{b}"[{b_port}]')
        if "can't link" in reply or "not found" in reply:
            raise FaultError(f"ibsim refused the link: {reply.strip()}")
        return reply
