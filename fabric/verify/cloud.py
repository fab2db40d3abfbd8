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


#: How the check reads the GPUDirect RDMA paths of an EFA instance: one line each, ``name rc``
#: (0 when present). ``efa_nv_peermem`` / ``nvidia_peermem``: the peer-memory modules;
#: ``open_module``: the NVIDIA open kernel module (``/proc/driver/nvidia/version``), which with
#: Linux >= 5.12 (``ib_umem_dmabuf``, RDMA on dma-buf, merged in 5.12) lets the EFA driver map
#: GPU memory through dma-buf, the path the current EFA installer uses by default.
GPUDIRECT_PROBE = (
    'for m in efa_nv_peermem nvidia_peermem; do test -d /sys/module/$m; echo "$m $?"; done; '
    "grep -qs 'Open Kernel Module' /proc/driver/nvidia/version; echo \"open_module $?\"; "
    'echo "kernel $(uname -r)"'
)


def gpudirect_paths(probe: str) -> list[str]:
    """The GPUDirect RDMA paths the probe's output shows: ``dma-buf``, ``efa_nv_peermem``,
    ``nvidia_peermem`` (any one lets EFA reach GPU memory)."""
    values: dict[str, str] = {}
    for line in probe.splitlines():
        key, _, value = line.strip().partition(" ")
        if key:
            values[key] = value.strip()
    if "kernel" not in values or "open_module" not in values:
        raise HarnessError(f"GPUDirect probe printed no kernel/open_module line: {probe[:200]!r}")
    paths = [m for m in ("efa_nv_peermem", "nvidia_peermem") if values.get(m) == "0"]
    release = tuple(int(p) for p in values["kernel"].split("-")[0].split(".")[:2] if p.isdigit())
    if values["open_module"] == "0" and release >= (5, 12):
        paths.insert(0, "dma-buf")
    return paths


def gpudirect_problems(paths: list[str]) -> list[str]:
    """No GPUDirect RDMA path at all is the problem; which one the driver uses is not."""
    if paths:
        return []
    return [
        "no GPUDirect RDMA path: neither dma-buf (NVIDIA open kernel module on Linux >= 5.12) nor "
        "efa_nv_peermem nor nvidia_peermem is available, so EFA cannot reach GPU memory; use an "
        "AMI with the open NVIDIA driver, or load a peer-memory module"
    ]
