"""The GCP target's check families (A3 instances of a ``gcp-gpudirect`` fabric that declare
no HCAs): their GPU NICs as the instance catalog and the spec declare them, and the judging
the suite's ``fabric/verify/checks/test_gcp_gpudirect.py`` asserts on.

Found by the family table through the registry, like every target's ``checks`` part
(``FAMILIES``, ``PARAMETERS``, ``SELECT``, ``not_generated``, ``FIXTURES``,
``nccl_expectation``; see fabric/targets/aws/checks.py); the suite's ``test_gcp_gpudirect.py``
reads the judging here through ``fabric.verify.families.checks_part("gpu_nics")``.
The judging functions are pure over tool output (``ip -j addr``, ``ethtool -i``); output that
cannot be read raises :class:`fabric.verify.harness.HarnessError`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from fabric.parsers.errors import ParseError
from fabric.parsers.ethtool_driver import EthtoolDriver
from fabric.parsers.ip_addr import addresses_in
from fabric.targets.gcp.catalog import gcp_machine
from fabric.targets.gcp.model import gpu_subnet_cidrs
from fabric.verify.families.base import Fixture, host_fixture
from fabric.verify.harness_error import HarnessError

if TYPE_CHECKING:
    from fabric.spec import ClusterSpec


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True)


class GpuNicHost(_Frozen):
    """A GCP A3 instance's GPU NICs as the catalog and the spec declare them."""

    host: str
    machine_type: str
    nics: int
    mtu: int
    subnets: list[str]
    driver: str | None = None
    transport: str
    rxdm: bool = False

    @property
    def id(self) -> str:
        """Test id: the host."""
        return self.host


def gpu_nic_hosts(spec: ClusterSpec, hosts: list[str]) -> list[GpuNicHost]:
    """Selected A3 instances of a ``gcp-gpudirect`` fabric that declares no HCAs: GPU NIC
    count, MTU and one subnet per NIC (the GCP component's ranges), the NIC driver, and
    whether the receive-data-path manager must run (TCPX, TCPXO)."""
    gcp = spec.gcp
    if spec.fabric.kind != "gcp-gpudirect" or gcp is None:
        return []
    out = []
    for host in hosts:
        group = spec.hosts.get(host)
        known = gcp_machine(group.instance_type or "") if group else None
        if group is None or group.hcas or group.role != "compute" or known is None:
            continue
        out.append(
            GpuNicHost(
                host=host,
                machine_type=known.name,
                nics=known.gpu_nics,
                mtu=gcp.gpu_nic_mtu,
                subnets=gpu_subnet_cidrs(gcp, known.gpu_nics),
                driver=known.gpu_nic_driver,
                transport=known.transport,
                rxdm=known.rxdm,
            )
        )
    return out


#: Check family -> (the checks it holds, the parameter source they run over).
FAMILIES: dict[str, tuple[tuple[str, ...], str]] = {
    "gpu_nics": (("test_gpu_nics",), "gpu_nic_hosts"),
    "gvnic": (("test_gvnic_driver",), "gpu_nic_hosts"),
    "rxdm": (("test_rxdm_prolog",), "gpu_nic_hosts"),
}
#: Parameter source -> its parameters for a spec and the selected hosts.
PARAMETERS: dict[str, Callable[[ClusterSpec, list[str]], list[Any]]] = {
    "gpu_nic_hosts": gpu_nic_hosts
}
#: Families that run over part of their source.
SELECT: dict[str, Callable[[Any], bool]] = {
    "gvnic": lambda g: g.driver == "gve",
    "rxdm": lambda g: g.rxdm,
}
#: The suite's fixtures over each family's A3 instances (``test_gcp_gpudirect.py``).
FIXTURES: tuple[Fixture, ...] = (
    host_fixture("gpu_nic_host", "gpu_nics"),
    host_fixture("gvnic_host", "gvnic"),
    host_fixture("rxdm_host", "rxdm"),
)


def nccl_expectation(spec: ClusterSpec, host: str) -> dict[str, Any]:
    """What NCCL must use here (``fabric.verify.nccl.expectation``'s keywords): on a
    ``gcp-gpudirect`` fabric the machine type's transport (TCPX, TCPXO, RoCE)."""
    if spec.fabric.kind != "gcp-gpudirect":
        return {}
    known = gcp_machine(spec.hosts[host].instance_type or "")
    return {"transport": known.transport if known else None}


def not_generated(spec: ClusterSpec, params: Callable[[str], list[Any]]) -> dict[str, str]:
    """Why the GPU NIC families are not generated (``params``: a parameter source's values)."""
    kind = spec.fabric.kind
    if kind != "gcp-gpudirect":
        return dict.fromkeys(FAMILIES, f"fabric.kind is {kind}, not gcp-gpudirect")
    hosts = params("gpu_nic_hosts")
    if not hosts:
        reason = (
            "no selected A3 compute instance (fabric/targets/gcp/catalog.py) without declared HCAs"
        )
        return dict.fromkeys(FAMILIES, reason)
    out = {}
    if not any(h.driver == "gve" for h in hosts):
        out["gvnic"] = "no selected machine type has gVNIC GPU NICs (A3 Ultra: ConnectX RoCE)"
    if not any(h.rxdm for h in hosts):
        out["rxdm"] = "no selected machine type uses GPUDirect-TCPX(O) (A3 High, A3 Mega)"
    return out


# --- judging ---------------------------------------------------------------------------------


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
