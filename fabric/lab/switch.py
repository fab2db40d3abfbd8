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


def wire(switch_container: str, links: list[SwitchLink]) -> None:
    """Give the switch its bridge and one port per link, and each node its fabric netdev."""
    switch_pid = str(_pid(switch_container))
    if BRIDGE not in in_netns(switch_container, "ip", "-o", "link", "show"):
        in_netns(switch_container, "ip", "link", "add", BRIDGE, "type", "bridge", what="bridge")
    in_netns(switch_container, "ip", "link", "set", BRIDGE, "up", what="bridge up")
    for index, link in enumerate(links):
        ipaddress.ip_interface(link.address)  # a bad address fails here, before any change
        outer, inner = veth_names(switch_container, index)
        node_pid = str(_pid(link.node_container))
        _run(["ip", "link", "add", outer, "type", "veth", "peer", "name", inner], "veth")
        _run(["ip", "link", "set", outer, "netns", switch_pid], f"port {link.port}")
        _run(["ip", "link", "set", inner, "netns", node_pid], f"{link.node_container} netdev")
        in_netns(switch_container, "ip", "link", "set", outer, "name", link.port)
        in_netns(switch_container, "ip", "link", "set", link.port, "master", BRIDGE)
        in_netns(switch_container, "ip", "link", "set", link.port, "up")
        in_netns(link.node_container, "ip", "link", "set", inner, "name", link.netdev)
        in_netns(link.node_container, "ip", "addr", "add", link.address, "dev", link.netdev)
        in_netns(link.node_container, "ip", "link", "set", link.netdev, "up")


def set_port_mtu(switch_container: str, port: str, mtu: int) -> None:
    """Change one switch port's MTU (a lab fault: a port left at the wrong MTU)."""
    in_netns(switch_container, "ip", "link", "set", "dev", port, "mtu", str(mtu), what="MTU")


def tc(switch_container: str, *args: str) -> str:
    """Run ``tc`` in the switch (faults: change a DSCP filter, remove a class)."""
    return in_netns(switch_container, "tc", *args, what="tc")
