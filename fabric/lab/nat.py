"""A lab NAT node: a private subnet's only way out, as a cloud's NAT gateway is.

On AWS the compute subnet's route table sends ``0.0.0.0/0`` to a NAT gateway in the public
subnet, and the gateway masquerades the nodes' traffic as its own public address (GCP's Cloud
NAT does the same for a subnet). The lab's stand-in: a node container on both networks, created
with ``net.ipv4.ip_forward=1`` and ``NET_ADMIN``. :func:`route_private_subnet` gives it the
private network's gateway address (the one every node's default route points at; the host's
copy is gone, :func:`fabric.lab.bastion.isolate`) and an nftables ruleset that masquerades what
leaves through its public interface. :func:`default_route` gives a node on the private network
its default route to that address, from outside the container, as a subnet's DHCP would (lab
networks are internal: no route out of their own; a routed podman network would add the host's
own masquerade for bridged traffic, br_netfilter, and take the packets before the NAT node
does). :func:`stop_forwarding` takes the ruleset away, so a test sees what a node without
egress sees.
"""

from __future__ import annotations

import ipaddress
import subprocess

from fabric.lab.node import state
from fabric.lab.podman import PodmanError, podman

__all__ = ["NatError", "default_route", "route_private_subnet", "ruleset", "stop_forwarding"]

TABLE = "railyard_nat"


class NatError(RuntimeError):
    """The NAT node could not be configured; the message says which step."""


def ruleset(private_subnet: str, public_interface: str) -> str:
    """The nftables ruleset: masquerade the private subnet's packets leaving by the public side."""
    subnet = ipaddress.ip_network(private_subnet)
    return (
        f"table ip {TABLE} {{\n"
        "  chain postrouting {\n"
        "    type nat hook postrouting priority srcnat; policy accept;\n"
        f'    ip saddr {subnet} oifname "{public_interface}" masquerade\n'
        "  }\n"
        "}\n"
    )


def _exec(container: str, argv: list[str], stdin: str | None = None) -> str:
    try:
        data = stdin.encode() if stdin is not None else None
        proc = podman(["exec", "-i", container, *argv], input=data, timeout=60)
    except PodmanError as exc:
        raise NatError(f"{container}: {' '.join(argv)}: {exc}") from None
    return str(proc.stdout)


def route_private_subnet(
    container: str,
    *,
    private_subnet: str,
    gateway: str,
    private_interface: str,
    public_interface: str,
) -> None:
    """Make ``container`` the router of ``private_subnet``: its gateway address, and the
    masquerade out of ``public_interface``. Idempotent."""
    prefix = ipaddress.ip_network(private_subnet).prefixlen
    addresses = _exec(container, ["ip", "-o", "-4", "addr", "show", "dev", private_interface])
    if f" {gateway}/" not in addresses:
        _exec(container, ["ip", "addr", "add", f"{gateway}/{prefix}", "dev", private_interface])
    forwarding = _exec(container, ["cat", "/proc/sys/net/ipv4/ip_forward"]).strip()
    if forwarding != "1":
        raise NatError(
            f"{container}: net.ipv4.ip_forward is {forwarding}: create it with the sysctl"
        )
    # one transaction: the table made (if missing), dropped, and written whole
    replace = f"add table ip {TABLE}\ndelete table ip {TABLE}\n"
    _exec(container, ["nft", "-f", "-"], stdin=replace + ruleset(private_subnet, public_interface))


def stop_forwarding(container: str) -> None:
    """Remove the masquerade: the private subnet's packets leave unanswered. Idempotent."""
    _exec(container, ["nft", "-f", "-"], stdin=f"add table ip {TABLE}\ndelete table ip {TABLE}\n")


def default_route(container: str, gateway: str) -> None:
    """Set ``container``'s default route to ``gateway`` in its network namespace (``nsenter``
    from this machine: the node needs no capability). Idempotent; lost when it restarts."""
    current = state(container)
    if current is None or not current["running"] or not current["pid"]:
        raise NatError(f"{container} is not running: start it before routing it")
    argv = ["nsenter", f"--net=/proc/{current['pid']}/ns/net"]
    argv += ["ip", "route", "replace", "default", "via", gateway]
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    except subprocess.TimeoutExpired:
        raise NatError(f"{container}: ip route replace default timed out") from None
    if proc.returncode != 0:
        raise NatError(
            f"{container}: ip route replace default via {gateway}: {proc.stderr.strip()}"
        )
