"""Filter ``gcp_gpu_nics``: ``ip -j -4 addr show`` output and the GPU subnets -> the GPU NICs.

A thin adapter over :func:`fabric.parsers.ip_addr.addresses_in` (what the checks use; railyard
is installed in the .venv that runs Ansible): a list of {name, address, mtu, subnet, gateway},
the gateway being the subnet's second address (Compute Engine reserves it for the gateway).
"""

from __future__ import annotations

import ipaddress
from typing import Any

from fabric.parsers.ip_addr import addresses_in


def gcp_gpu_nics(ip_json: str, subnets: list[str]) -> list[dict[str, Any]]:
    """Every netdev with an address in one of ``subnets``, in subnet order."""
    found = addresses_in(str(ip_json), [str(s) for s in subnets])
    order = {str(ipaddress.IPv4Network(s)): i for i, s in enumerate(subnets)}
    nics = [
        {
            "name": name,
            "address": address,
            "mtu": mtu,
            "subnet": subnet,
            "gateway": str(ipaddress.IPv4Network(subnet).network_address + 1),
        }
        for name, (address, mtu, subnet) in found.items()
    ]
    return sorted(nics, key=lambda n: (order[n["subnet"]], n["name"]))


class FilterModule:
    """Ansible filter plugin entry point."""

    def filters(self) -> dict[str, Any]:
        return {"gcp_gpu_nics": gcp_gpu_nics}
