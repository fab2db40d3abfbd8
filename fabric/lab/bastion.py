"""Lab networks behind a bastion: nodes on a network this machine has no address on.

A cloud's compute nodes sit on private subnets the controller cannot route to; only a bastion
on both networks reaches them. :func:`isolate` gives a lab network the same shape: the host's
gateway address leaves the network's bridge, and an ``unreachable`` route for its subnet makes
any direct attempt fail at once on this machine (nothing for it leaves through the default
route). A bastion container joined to this network and to one the host is on (``create_node``
with both) is then the only way in. :func:`restore` undoes both.
"""

from __future__ import annotations

import ipaddress
import socket
import subprocess

from fabric.lab.network import NetworkError, NetworkInfo


def _ip(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=False, timeout=30)


def isolate(info: NetworkInfo) -> None:
    """Take this machine off ``info``'s network: no address on its bridge, subnet unreachable."""
    prefix = ipaddress.ip_network(info.subnet).prefixlen
    gone = _ip("addr", "del", f"{info.gateway}/{prefix}", "dev", info.bridge)
    if gone.returncode != 0 and "Cannot assign" not in gone.stderr:
        raise NetworkError(f"ip addr del {info.gateway} dev {info.bridge}: {gone.stderr.strip()}")
    route = _ip("route", "replace", "unreachable", info.subnet)
    if route.returncode != 0:
        raise NetworkError(f"ip route replace unreachable {info.subnet}: {route.stderr.strip()}")


def restore(info: NetworkInfo) -> None:
    """Undo :func:`isolate`: drop the unreachable route (the network's removal takes the bridge)."""
    _ip("route", "del", "unreachable", info.subnet)


def reachable(address: str, port: int = 22, timeout: float = 3.0) -> bool:
    """Whether a TCP connection from this machine to ``address:port`` opens."""
    try:
        with socket.create_connection((address, port), timeout=timeout):
            return True
    except OSError:
        return False
