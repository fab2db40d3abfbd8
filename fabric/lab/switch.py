"""A RoCE lab's switch: a node container whose ports are the RoCE nodes' fabric veths, bridged
inside it, so host->switch->host traffic crosses a real Linux bridge that ``switch_qos``
configures (``linux`` switch OS) over SSH like any Linux switch.

The switch container is made like a node (``fabric.lab.node.create_node``: systemd, sshd,
its host key generated outside so ``known_hosts`` is pinned before it starts) on the
management network only. :func:`wire` then gives it one port per RoCE node: a veth pair
``ryk<hash><i>{s,n}`` made on this machine, one end moved into the switch's network namespace
(renamed to the port, enslaved to bridge ``br0``), the other into the node's (renamed to the
spec's fabric netdev, given its address). Removing either container removes its veth ends.
Every command has a timeout; failures raise :class:`SwitchError` naming the step.
"""

from __future__ import annotations

import hashlib
import ipaddress
import subprocess

from pydantic import BaseModel

from fabric.lab.node import state

#: The bridge inside the switch that joins its ports.
BRIDGE = "br0"


class SwitchError(RuntimeError):
    """The lab switch could not be wired or changed."""


class SwitchLink(BaseModel):
    """One switch port and the node at its other end."""

    port: str  #: the port's name in the switch, e.g. p-gpu1
    node_container: str  #: the node's container
    netdev: str  #: the node's fabric netdev (spec ``hcas[].netdev``), e.g. fab0
    address: str  #: the node's address on the switched fabric, with its prefix (198.18.x.y/24)


def _run(argv: list[str], what: str) -> str:
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise SwitchError(f"{what}: {error}") from error
    if proc.returncode != 0:
        raise SwitchError(f"{what}: {' '.join(argv)}: {(proc.stderr or proc.stdout).strip()}")
    return proc.stdout


def _pid(container: str) -> int:
    current = state(container)
    if not current or not current["running"]:
        raise SwitchError(f"container {container} is not running")
    return int(current["pid"])  # type: ignore[call-overload]


def in_netns(container: str, *argv: str, what: str = "") -> str:
    """Run ``argv`` (this machine's binary) in ``container``'s network namespace."""
    return _run(["nsenter", "-t", str(_pid(container)), "-n", *argv], what or argv[0])


def veth_names(switch_container: str, index: int) -> tuple[str, str]:
    """The switch-side and node-side names of port ``index``'s veth pair before they move
    (``ryk`` + 8 hex of the switch container + index: at most 15 characters)."""
    digest = hashlib.sha256(switch_container.encode()).hexdigest()[:8]
    return f"ryk{digest}{index}s", f"ryk{digest}{index}n"


def _links(container: str) -> set[str]:
    """The names of the network interfaces in ``container``'s namespace."""
    out = in_netns(container, "ip", "-o", "link", "show", what="ip link")
    return {line.split(":")[1].strip().split("@")[0] for line in out.splitlines() if ":" in line}


def _ensure_bridge(switch_container: str, mtu: int | None) -> None:
    if BRIDGE not in _links(switch_container):
        in_netns(switch_container, "ip", "link", "add", BRIDGE, "type", "bridge", what="bridge")
    if mtu is not None:
        in_netns(switch_container, "ip", "link", "set", BRIDGE, "mtu", str(mtu), what="bridge")
    in_netns(switch_container, "ip", "link", "set", BRIDGE, "up", what="bridge up")


def _remove_host_leftovers(switch_container: str, index: int) -> None:
    """Delete port ``index``'s veth ends still on this machine (a wiring cut short)."""
    for name in veth_names(switch_container, index):
        if (
            subprocess.run(
                ["ip", "link", "show", name], capture_output=True, check=False, timeout=30
            ).returncode
            == 0
        ):
            _run(["ip", "link", "del", name], f"remove leftover {name}")


def _wire_one(switch_container: str, index: int, link: SwitchLink, mtu: int | None) -> None:
    ipaddress.ip_interface(link.address)  # a bad address fails here, before any change
    outer, inner = veth_names(switch_container, index)
    switch_pid = str(_pid(switch_container))
    node_pid = str(_pid(link.node_container))
    _remove_host_leftovers(switch_container, index)
    try:
        _run(["ip", "link", "add", outer, "type", "veth", "peer", "name", inner], "veth")
        _run(["ip", "link", "set", outer, "netns", switch_pid], f"port {link.port}")
        _run(["ip", "link", "set", inner, "netns", node_pid], f"{link.node_container} netdev")
    except SwitchError:
        _remove_host_leftovers(switch_container, index)
        raise
    in_netns(switch_container, "ip", "link", "set", outer, "name", link.port)
    in_netns(link.node_container, "ip", "link", "set", inner, "name", link.netdev)
    if mtu is not None:
        in_netns(switch_container, "ip", "link", "set", link.port, "mtu", str(mtu), what="MTU")
        in_netns(link.node_container, "ip", "link", "set", link.netdev, "mtu", str(mtu), what="MTU")
    in_netns(switch_container, "ip", "link", "set", link.port, "master", BRIDGE)
    in_netns(switch_container, "ip", "link", "set", link.port, "up")
    in_netns(link.node_container, "ip", "addr", "add", link.address, "dev", link.netdev)
    in_netns(link.node_container, "ip", "link", "set", link.netdev, "up")


def wired(switch_container: str, link: SwitchLink) -> bool:
    """True when the switch has ``link``'s port and the node its netdev with the address."""
    if link.port not in _links(switch_container):
        return False
    if link.netdev not in _links(link.node_container):
        return False
    addrs = in_netns(link.node_container, "ip", "-o", "addr", "show", "dev", link.netdev)
    return f" {link.address} " in addrs


def unwire(switch_container: str, port: str) -> None:
    """Remove one switch port (its veth pair: the node's end goes with it); gone is fine."""
    if port in _links(switch_container):
        in_netns(switch_container, "ip", "link", "del", port, what=f"remove port {port}")


def wire(switch_container: str, links: list[SwitchLink], mtu: int | None = None) -> None:
    """Give the switch its bridge and one port per link, and each node its fabric netdev
    (both ends at ``mtu`` when given, as the lab's cables come up at the fabric MTU).

    Idempotent: a link already wired is left alone; a half-wired one (only one end left,
    e.g. its node was re-created) is removed and wired again.
    """
    _ensure_bridge(switch_container, mtu)
    for index, link in enumerate(links):
        if wired(switch_container, link):
            continue
        unwire(switch_container, link.port)
        if link.netdev in _links(link.node_container):
            in_netns(link.node_container, "ip", "link", "del", link.netdev, what="old netdev")
        _wire_one(switch_container, index, link, mtu)


def wired_ports(switch_container: str, links: list[SwitchLink]) -> list[str]:
    """The ports of ``links`` that are wired now (both containers running, both ends there)."""
    out = []
    for link in links:
        try:
            if wired(switch_container, link):
                out.append(link.port)
        except SwitchError:  # a node not running: its link is not wired
            continue
    return out


def set_port_mtu(switch_container: str, port: str, mtu: int) -> None:
    """Change one switch port's MTU (a lab fault: a port left at the wrong MTU)."""
    in_netns(switch_container, "ip", "link", "set", "dev", port, "mtu", str(mtu), what="MTU")


def tc(switch_container: str, *args: str) -> str:
    """Run ``tc`` in the switch (faults: change a DSCP filter, remove a class)."""
    return in_netns(switch_container, "tc", *args, what="tc")
