"""Fault injection for the lab: OpenSM stop/start, link speed, netdev MTU; ibsim's console
(``fabric.topology.ibsim_console``) for cables, counters and clients.

An MTU fault on a lab node is set from the host (:func:`set_container_mtu`): lab containers
have no CAP_NET_ADMIN, so the host enters the node container's network namespace
(``nsenter -t <pid> -n``) and sets the MTU of the node's own end of its veth there.
"""

from __future__ import annotations

import json
import subprocess

from fabric.topology.ibsim import SPEED_MASKS
from fabric.topology.ibsim_console import FaultError

#: The label every lab node container carries (``fabric.targets.lab.component``): the lab made it.
LAB_LABEL = "railyard.stack"


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
