"""The network rules: subnets that must not overlap, addresses that must fit them.

Every network the spec declares or implies (management, BMC, the lab's fabric network,
the clouds' VPCs and subnets) is checked against the others, and every fixed address
(nodes, gateways, switches, BMC URLs) against the network that carries it. The rules run
with the general rules (fabric.spec.rules), so ``validate`` refuses what the lab, the
cloud or the BMCs would refuse later.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import SplitResult, urlsplit

from fabric.spec.checker import Checker, Rule
from fabric.spec.constants import DEFAULT_BMC_SUBNET, DEFAULT_FABRIC_SUBNET, LAB_RANGE
from fabric.targets import line_of

__all__ = [
    "NETWORK_RULES",
    "check_bmc_urls",
    "overlaps",
    "check_management_addresses",
    "check_network_overlaps",
    "check_switch_addresses",
]

Network = ipaddress.IPv4Network


def _lab_networks() -> tuple[Network, Network, Network]:
    """The lab's address range and its default BMC and RoCE networks."""
    return Network(str(LAB_RANGE)), Network(DEFAULT_BMC_SUBNET), Network(DEFAULT_FABRIC_SUBNET)


def overlaps(c: Checker, networks: list[tuple[str, str, Network]]) -> None:
    """Report each network (path, label, subnet) overlapping one listed before it."""
    for index, (path, _label, net) in enumerate(networks):
        for other_path, other_label, other in networks[:index]:
            if net.overlaps(other):
                c.add(
                    path,
                    f"{net} overlaps {other_label} {other}; give each network its own subnet",
                    reads=[other_path],
                )
                break


def check_network_overlaps(c: Checker) -> None:
    """Management, BMC and the lab's fabric network are distinct subnets (the lab's
    defaults first, so an overlap is reported at the field the operator wrote)."""
    spec = c.spec
    lab = line_of(spec.target).one_machine
    defaults: list[tuple[str, str, Network]] = []
    networks: list[tuple[str, str, Network]] = [
        ("management.subnet", "management.subnet", spec.management.subnet)
    ]
    if spec.bmc is not None and spec.bmc.subnet is not None:
        networks.append(("bmc.subnet", "bmc.subnet", spec.bmc.subnet))
    elif lab:
        defaults.append(("bmc.subnet", "the lab's default BMC network", _lab_networks()[1]))
    if lab and spec.fabric.kind == "roce":
        roce = spec.lab.roce_subnet if spec.lab is not None else None
        if roce is not None:
            networks.append(("lab.roce_subnet", "lab.roce_subnet", roce))
        else:
            label = "the lab's default RoCE network"
            defaults.append(("lab.roce_subnet", label, _lab_networks()[2]))
    overlaps(c, defaults + networks)
    if lab:
        _lab_range(c, networks)


def _lab_range(c: Checker, networks: list[tuple[str, str, Network]]) -> None:
    """Every lab network lies in the lab's range and holds at least 16 addresses."""
    lab_range = _lab_networks()[0]
    for path, _label, net in networks:
        if not net.subnet_of(lab_range):
            c.add(
                path,
                f"{net} is outside the lab range {lab_range}; pick a subnet inside it",
                reads=["target"],
            )
        elif net.num_addresses < 16:
            c.add(path, f"{net} is too small for the lab; use a /28 or larger", reads=["target"])


def check_management_addresses(c: Checker) -> None:
    """No fixed address or gateway is the subnet's network or broadcast address, and no
    node has the gateway's address."""
    mgmt = c.spec.management
    subnet = mgmt.subnet
    reserved = {subnet.network_address: "network", subnet.broadcast_address: "broadcast"}
    if subnet.prefixlen >= 31:
        reserved = {}
    gateway = mgmt.gateway
    if gateway is None and line_of(c.spec.target).one_machine and subnet.num_addresses > 2:
        gateway = next(subnet.hosts())  # the lab host's side of the network
    if mgmt.gateway is not None and mgmt.gateway in reserved:
        c.add(
            "management.gateway",
            f"{mgmt.gateway} is the {reserved[mgmt.gateway]} address of {subnet}; use a host"
            " address",
            reads=["management.subnet"],
        )
    for host, address in mgmt.addresses.items():
        path = f"management.addresses.{host}"
        if address in reserved:
            c.add(
                path,
                f"{address} is the {reserved[address]} address of {subnet}; use a host address",
                reads=["management.subnet"],
            )
        elif address == gateway:
            c.add(path, f"{address} is the gateway of {subnet}; give the node its own address")


def check_switch_addresses(c: Checker) -> None:
    """Switch names are unique; a switch address is a unicast IP address of its own."""
    names: dict[str, int] = {}
    owners = {
        str(address): f"node {host!r}" for host, address in c.spec.management.addresses.items()
    }
    for index, switch in enumerate(c.spec.fabric.switches):
        path = f"fabric.switches[{index}]"
        if switch.name in names:
            c.add(f"{path}.name", f"{switch.name!r} is already switches[{names[switch.name]}]")
        names.setdefault(switch.name, index)
        if switch.address is None:
            continue
        try:
            address = ipaddress.ip_address(switch.address)
        except ValueError:
            c.add(
                f"{path}.address",
                f"{switch.address!r} is not an IP address; write the switch's management"
                " address, e.g. 10.10.0.2",
            )
            continue
        if address.is_unspecified or address.is_multicast or address.is_loopback:
            c.add(f"{path}.address", f"{address} is not a unicast host address")
        elif str(address) in owners:
            c.add(
                f"{path}.address",
                f"{address} is already the address of {owners[str(address)]}; give each its own",
            )
        owners.setdefault(str(address), f"switch {switch.name!r}")


def _url_problem(url: str, parts: SplitResult | None) -> str | None:
    """Why ``url`` is not a usable Redfish URL, without repeating what could be a secret."""
    if parts is None or parts.scheme not in ("https", "http") or not parts.netloc:
        if "@" in url:
            return "is not a Redfish URL; write https://BMC[:port]"
        return f"{url!r} is not a Redfish URL; write https://BMC[:port]"
    if "@" in parts.netloc:
        return (
            "carries a user name or password; write https://BMC[:port] and give the user as"
            " bmc.username, the password as bmc.password: {config: bmcPassword}"
        )
    if not parts.hostname:
        return "has no host; write https://BMC[:port]"
    try:
        parts.port  # noqa: B018 - raises on a port outside 0-65535 or not a number
    except ValueError:
        return f"{url!r} has an invalid port; write https://BMC[:port] with a port 1-65535"
    return None


def check_bmc_urls(c: Checker) -> None:
    """BMC endpoints belong to declared hosts, are Redfish URLs without credentials, lie in
    bmc.subnet when the host is an address, and no two nodes share one BMC system."""
    bmc = c.spec.bmc
    if bmc is None:
        return
    seen: dict[tuple[str, str | None], str] = {}
    for host, endpoint in bmc.endpoints.items():
        path = f"bmc.endpoints.{host}"
        c.check_host(path, host)
        try:
            parts: SplitResult | None = urlsplit(endpoint.url)
        except ValueError:
            parts = None
        problem = _url_problem(endpoint.url, parts)
        if problem is not None or parts is None:
            c.add(f"{path}.url", problem or "is not a Redfish URL")
            continue
        hostname = parts.hostname or ""
        try:
            address = ipaddress.ip_address(hostname)
        except ValueError:
            address = None
        if address is not None and bmc.subnet is not None and address not in bmc.subnet:
            c.add(
                f"{path}.url",
                f"{address} is outside bmc.subnet {bmc.subnet}; fix the address or the subnet",
                reads=["bmc.subnet"],
            )
        key = (f"{hostname.lower()}:{parts.port}", endpoint.system_id)
        if key in seen:
            c.add(
                path,
                f"the same BMC system as {seen[key]!r}; each node has its own BMC (or system_id)",
            )
        seen.setdefault(key, host)


#: The network rules, in the order their problems are reported.
NETWORK_RULES: tuple[Rule, ...] = (
    check_network_overlaps,
    check_management_addresses,
    check_switch_addresses,
    check_bmc_urls,
)
