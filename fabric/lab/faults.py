"""Fault injection for the lab: ibsim console commands, OpenSM stop/start, netdev MTU.

An MTU fault on a lab node is set from the host (:func:`set_container_mtu`): lab containers
have no CAP_NET_ADMIN, so the host enters the node container's network namespace
(``nsenter -t <pid> -n``) and sets the MTU of the node's own end of its veth there.

The lab's ibsim reads console commands from a FIFO (``state/<stack>/ibsim.console``, see
``fabric.lab.ibsim.console_path``) and writes replies, each ended by a ``sim> `` prompt, to
its log. Commands used here: ``Unlink "node"[port]`` (pull a cable; both ends go
Down/Polling), ``Link "a"[p] "b"[q]`` (cable two ports; width and speed are the lower of the
two ports' enabled masks), ``Clear "node"[port]`` (unlink and reset the port to ibsim's
default 4xSDR template), ``Attached`` (list clients), ``X <client>`` (drop a client) and
``PerformanceSet "node"[port] PortCounters.<Counter>=<value>`` (set a port's error counter).
Writers take an exclusive lock on the log so replies of concurrent writers do not mix.
"""

from __future__ import annotations

import fcntl
import json
import os
import stat
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from fabric.lab.ibsim_clients import SimClient, dead_clients, parse_attached
from fabric.topology.ibsim import SPEED_MASKS, sim_host

PROMPT = "sim> "
#: The label every lab node container carries (``fabric.components.lab``): the lab made it.
LAB_LABEL = "railyard.stack"


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


def set_link_speed(host, hca_port: int, switch_port: int, speed: str) -> None:  # type: ignore[no-untyped-def]
    """Limit a host's cable to ``speed`` (FDR, EDR, HDR): LinkSpeedExtEnabled on both ends.

    Real SMP Sets (``ibportstate ... espeed MASK``) from the host, on its own HCA port (direct
    route ``0``) and on the switch port at the other end of the cable (``0,<hca port>``): the
    way an admin forces a speed. ibsim recomputes the active speed at once, and an OpenSM
    sweep keeps it, because both ends allow no more. ``speed="HDR"`` restores the lab's links.
    """
    try:
        mask = SPEED_MASKS[speed][1]
    except KeyError:
        raise FaultError(
            f"speed {speed!r} has no extended-speed mask; use one of FDR, EDR, HDR"
        ) from None
    if not mask:
        raise FaultError(f"speed {speed!r} is not an extended speed; use one of FDR, EDR, HDR")
    for path, port in (("0", hca_port), (f"0,{hca_port}", switch_port)):
        result = host.run(f"ibportstate -D {path} {port} espeed {mask}")
        if result.rc != 0:
            raise FaultError(
                f"ibportstate -D {path} {port} espeed {mask} failed: {(result.stdout + result.stderr).strip()[-300:]}"
            )


def parse_container_pid(inspect_json: str, container: str) -> int:
    """Return the PID of a lab container's init from ``podman container inspect`` JSON.

    Raises :class:`FaultError` when the container is not a lab node (no ``railyard.stack``
    label: the project did not create it) or is not running (no PID, so no namespace).
    """
    try:
        data = json.loads(inspect_json)[0]
    except (ValueError, IndexError, TypeError) as exc:
        raise FaultError(
            f"podman container inspect {container}: unreadable output ({exc})"
        ) from None
    labels = (data.get("Config") or {}).get("Labels") or {}
    if LAB_LABEL not in labels:
        raise FaultError(
            f"container {container} has no {LAB_LABEL} label: not a lab node, its namespace is left alone"
        )
    state = data.get("State") or {}
    pid = int(state.get("Pid") or 0)
    if not state.get("Running") or pid <= 0:
        raise FaultError(
            f"container {container} is not running (state {state.get('Status', '?')}): no network namespace"
        )
    return pid


def parse_link_mtu(ip_json: str, netdev: str) -> int:
    """Return ``netdev``'s MTU from ``ip -j link show dev NETDEV`` output."""
    try:
        links = json.loads(ip_json)
    except ValueError as exc:
        raise FaultError(f"ip -j link show dev {netdev}: unreadable output ({exc})") from None
    for link in links if isinstance(links, list) else []:
        if link.get("ifname") == netdev and isinstance(link.get("mtu"), int):
            return int(link["mtu"])
    raise FaultError(
        f"ip -j link show dev {netdev}: no MTU for {netdev} in {ip_json.strip()[:200]!r}"
    )


def _host_run(args: list[str], what: str) -> str:
    try:
        proc = subprocess.run(args, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise FaultError(f"{what}: {' '.join(args)}: {exc}") from None
    if proc.returncode != 0:
        raise FaultError(
            f"{what}: {' '.join(args)} exited {proc.returncode}: {(proc.stderr or proc.stdout).strip()[-300:]}"
        )
    return proc.stdout


def set_container_mtu(container: str, netdev: str, mtu: int) -> int:
    """Set ``netdev``'s MTU inside lab node ``container`` from the host; return the previous MTU.

    Runs as root on the lab host: finds the container's init PID (``podman container
    inspect``; only a running container with the lab's ``railyard.stack`` label is touched),
    enters its network namespace with ``nsenter -t PID -n`` and runs ``ip link set dev NETDEV
    mtu MTU`` there, then reads the MTU back. The host-side veth peer and the bridge keep
    their MTU, so the node alone is misconfigured, as a wrong ``mtu`` on one host would be.
    Raises :class:`FaultError` naming the container and netdev when any step fails.
    """
    from fabric.lab.podman import podman

    where = f"MTU {mtu} on {container} {netdev}"
    proc = podman(["container", "inspect", container], check=False)
    if proc.returncode != 0:
        raise FaultError(f"{where}: no container {container}: {proc.stderr.strip()[-200:]}")
    pid = parse_container_pid(proc.stdout, container)
    netns = ["nsenter", "-t", str(pid), "-n"]
    before = parse_link_mtu(
        _host_run([*netns, "ip", "-j", "link", "show", "dev", netdev], where), netdev
    )
    _host_run([*netns, "ip", "link", "set", "dev", netdev, "mtu", str(mtu)], where)
    after = parse_link_mtu(
        _host_run([*netns, "ip", "-j", "link", "show", "dev", netdev], where), netdev
    )
    if after != mtu:
        raise FaultError(f"{where}: the MTU reads {after} after setting it")
    return before
