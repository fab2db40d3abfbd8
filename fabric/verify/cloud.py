"""Judging what a cloud instance shows against what the instance catalog expects.

Pure functions over tool output (``fi_info``, ``ip -j addr``, ``ethtool -i``, instance
metadata): each returns the problems found, an empty list when the instance is as expected.
The check suite (``fabric/verify/checks/test_efa.py``, ``test_gcp_gpudirect.py``) runs the
commands and asserts on these; the unit tests feed them captured real output. Output that
cannot be read raises :class:`fabric.verify.harness.HarnessError`.
"""

from __future__ import annotations

from fabric.parsers.errors import ParseError
from fabric.parsers.ethtool_driver import EthtoolDriver
from fabric.parsers.fi_info import FiInfoReport
from fabric.parsers.ip_addr import addresses_in
from fabric.verify.harness import HarnessError

#: The EFA PCI scan the ``efa`` role runs too: vendor Amazon, device ids 0xefa0-0xefa3.
EFA_PCI_SCAN = (
    "for d in /sys/bus/pci/devices/*; do "
    '[ -r "$d/vendor" ] || continue; '
    '[ "$(cat "$d/vendor")" = 0x1d0f ] || continue; '
    'case "$(cat "$d/device")" in 0xefa*) echo "${d##*/}";; esac; done'
)

#: IMDSv2: a session token, then the instance's placement group (documented endpoint).
IMDS_PLACEMENT_GROUP = (
    "t=$(curl -sS -m 5 -X PUT http://169.254.169.254/latest/api/token "
    "-H 'X-aws-ec2-metadata-token-ttl-seconds: 60') && "
    'curl -sS -m 5 -H "X-aws-ec2-metadata-token: $t" '
    "http://169.254.169.254/latest/meta-data/placement/group-name"
)


def efa_device_problems(pci_addresses: list[str], expected: int) -> list[str]:
    """EFA PCI devices found (one PCI address a line) against the catalog's count."""
    found = [a for a in pci_addresses if a.strip()]
    if len(found) == expected:
        return []
    return [
        f"{len(found)} EFA PCI devices (vendor 0x1d0f, device 0xefa*), the instance type has "
        f"{expected}: check the launch template's network interfaces (one EFA per network card)"
    ]


def efa_provider_problems(report: FiInfoReport, expected: int) -> list[str]:
    """``fi_info -p efa``: one ``efa`` reliable-datagram (FI_EP_RDM) entry per EFA device."""
    if not report.ok:
        return [f"fi_info -p efa failed: {report.reason}; check the EFA driver and libfabric"]
    domains = report.efa_rdm_domains
    if len(domains) == expected:
        return []
    return [
        f"fi_info -p efa lists {len(domains)} efa FI_EP_RDM entries "
        f"({', '.join(domains) or 'none'}), expected one per EFA device ({expected})"
    ]


def placement_group_problems(reported: str, declared: str) -> list[str]:
    """The placement group the instance metadata reports against the declared one."""
    got = reported.strip()
    if got == declared:
        return []
    return [
        f"instance metadata reports placement group {got or '(none)'!r}, declared {declared!r} "
        "(aws.placement_group): the instance was launched outside the cluster placement group"
    ]


def gpu_nic_addresses(ip_json: str, subnets: list[str]) -> dict[str, tuple[str, int, str]]:
    """``ip -j -4 addr show`` -> netdev -> (address, MTU, declared subnet) for every netdev
    with an IPv4 address inside one of ``subnets`` (the GPU NICs' VPC subnets)."""
    try:
        return addresses_in(ip_json, subnets)
    except ParseError as error:
        raise HarnessError(f"ip -j addr printed no JSON: {error.got}") from error


def gpu_nic_problems(
    nics: dict[str, tuple[str, int, str]], expected: int, mtu: int, subnets: list[str]
) -> list[str]:
    """GPU NIC count, MTU and one VPC subnet per NIC."""
    problems = []
    if len(nics) != expected:
        problems.append(
            f"{len(nics)} NICs with an address in the GPU subnets ({', '.join(subnets)}), the "
            f"machine type has {expected} GPU NICs: check the instance's network interfaces"
        )
    for name, (address, got, _) in sorted(nics.items()):
        if got != mtu:
            problems.append(
                f"{name} ({address}) has MTU {got}, expected {mtu} (gcp.gpu_nic_mtu): "
                "the gcp_gpudirect role sets it"
            )
    by_subnet: dict[str, list[str]] = {}
    for name, (_, _, subnet) in nics.items():
        by_subnet.setdefault(subnet, []).append(name)
    for subnet, names in sorted(by_subnet.items()):
        if len(names) > 1:
            problems.append(
                f"{', '.join(sorted(names))} share subnet {subnet}: each GPU NIC needs its own VPC"
            )
    return problems


def driver_problems(netdev: str, report: EthtoolDriver, expected: str) -> list[str]:
    """``ethtool -i``: the netdev's kernel driver (``gve`` for gVNIC)."""
    if not report.ok:
        raise HarnessError(f"ethtool -i {netdev} failed: {report.reason}")
    if report.driver == expected:
        return []
    return [
        f"{netdev} is driven by {report.driver!r}, expected {expected!r} (gVNIC): create the "
        "instance with nicType GVNIC and an image carrying the gve driver"
    ]
