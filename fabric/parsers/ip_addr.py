"""``ip -j -4 addr show``: the netdevs with an IPv4 address inside given subnets.

Not in ``PARSERS`` (``python -m fabric parse``): a query over the JSON ``ip`` prints, shared by
the GPU NIC check (``fabric.targets.gcp.checks``) and the gcp_gpudirect role's filter plugin.
"""

from __future__ import annotations

import ipaddress
import json

from fabric.parsers.errors import ParseError

TOOL = "ip -j addr"


def addresses_in(ip_json: str, subnets: list[str]) -> dict[str, tuple[str, int, str]]:
    """``ip -j -4 addr show`` -> netdev -> (address, MTU, declared subnet) for every netdev
    with an IPv4 address inside one of ``subnets``; raises ParseError when it is no JSON."""
    try:
        links = json.loads(ip_json)
    except json.JSONDecodeError as error:
        raise ParseError(TOOL, error.lineno, "JSON", str(error)) from error
    nets = [ipaddress.IPv4Network(s) for s in subnets]
    found: dict[str, tuple[str, int, str]] = {}
    for link in links:
        for addr in link.get("addr_info", []):
            if addr.get("family") != "inet":
                continue
            ip = ipaddress.IPv4Address(addr["local"])
            net = next((n for n in nets if ip in n), None)
            if net is not None and link["ifname"] not in found:
                found[link["ifname"]] = (str(ip), int(link["mtu"]), str(net))
    return found
