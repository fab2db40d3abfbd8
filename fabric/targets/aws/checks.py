"""The AWS target's check families (EFA instances of an ``efa`` fabric that declare no HCAs):
what each instance must show, from the instance catalog, and the judging the suite's
``fabric/verify/checks/test_efa.py`` asserts on.

The family table (``fabric.verify.families``) finds this module through the registry:
``FAMILIES`` (family -> its checks and the parameter source), ``PARAMETERS`` (source -> the
parameters of a spec's selected hosts), ``SELECT`` (a family running over part of its source),
``not_generated`` (why a family is not generated) and ``FIXTURES`` (the suite's fixtures the
testinfra module takes). The suite's ``test_efa.py`` reads the judging here through
``fabric.verify.families.checks_part("efa")``, the NCCL check its expectation through
``nccl_expectation``.
The judging functions are pure over tool output (``fi_info``, instance metadata); output that
cannot be read raises :class:`fabric.verify.harness.HarnessError`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from fabric.parsers.fi_info import FiInfoReport
from fabric.targets.aws.catalog import aws_instance
from fabric.verify.families.base import Fixture, host_fixture
from fabric.verify.harness_error import HarnessError

if TYPE_CHECKING:
    from fabric.spec import ClusterSpec


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True)


class EfaHost(_Frozen):
    """An EFA instance and what it must show, from the instance catalog (``fabric.targets.aws.catalog``)."""

    host: str
    instance_type: str
    devices: int
    gpudirect_rdma: bool
    placement_group: str | None = None

    @property
    def id(self) -> str:
        """Test id: the host."""
        return self.host


def efa_hosts(spec: ClusterSpec, hosts: list[str]) -> list[EfaHost]:
    """Selected EFA instances of an ``efa`` fabric that declares no HCAs: the catalog's
    device count, GPUDirect RDMA where both the spec (``aws.gpudirect_rdma``) and the type
    support it, and the declared cluster placement group."""
    aws = spec.aws
    if spec.fabric.kind != "efa" or aws is None or not aws.efa:
        return []
    out = []
    for host in hosts:
        group = spec.hosts.get(host)
        known = aws_instance(group.instance_type or "") if group else None
        if group is None or group.hcas or known is None or not known.efa:
            continue
        placement = aws.placement_group if aws.placement_strategy == "cluster" else None
        out.append(
            EfaHost(
                host=host,
                instance_type=known.name,
                devices=known.efa_interfaces,
                gpudirect_rdma=aws.gpudirect_rdma and known.gpudirect_rdma,
                placement_group=placement,
            )
        )
    return out


#: Check family -> (the checks it holds, the parameter source they run over).
FAMILIES: dict[str, tuple[tuple[str, ...], str]] = {
    "efa": (("test_efa_devices", "test_efa_provider"), "efa_hosts"),
    "efa_gpudirect": (("test_efa_gpudirect_rdma",), "efa_hosts"),
    "placement_group": (("test_placement_group",), "efa_hosts"),
}
#: Parameter source -> its parameters for a spec and the selected hosts.
PARAMETERS: dict[str, Callable[[ClusterSpec, list[str]], list[Any]]] = {"efa_hosts": efa_hosts}
#: Families that run over part of their source.
SELECT: dict[str, Callable[[Any], bool]] = {
    "efa_gpudirect": lambda e: e.gpudirect_rdma,
    "placement_group": lambda e: bool(e.placement_group),
}
#: The suite's fixtures over each family's EFA hosts (``test_efa.py``).
FIXTURES: tuple[Fixture, ...] = (
    host_fixture("efa_host", "efa"),
    host_fixture("efa_gpudirect_host", "efa_gpudirect"),
    host_fixture("placement_host", "placement_group"),
)


def nccl_expectation(spec: ClusterSpec, host: str) -> dict[str, Any]:
    """What NCCL must use here (``fabric.verify.nccl.expectation``'s keywords): GPUDirect RDMA
    as declared, the aws-ofi-nccl release the instances carry."""
    aws = spec.aws
    if aws is None:
        return {}
    return {"gdr": aws.gpudirect_rdma, "plugin_version": aws.ofi_nccl_version}


def not_generated(spec: ClusterSpec, params: Callable[[str], list[Any]]) -> dict[str, str]:
    """Why the EFA families are not generated (``params``: a parameter source's values)."""
    out: dict[str, str] = {}
    kind = spec.fabric.kind
    hosts = params("efa_hosts")
    if kind != "efa":
        out["efa"] = f"fabric.kind is {kind}, not efa"
    elif spec.aws is None or not spec.aws.efa:
        out["efa"] = "aws.efa is false: the instances get no EFA interface"
    elif not hosts:
        out["efa"] = (
            "no selected instance of an EFA type from fabric/targets/aws/catalog.py without"
            " declared HCAs"
        )
    if "efa" in out:
        return out | {"efa_gpudirect": out["efa"], "placement_group": out["efa"]}
    if not any(h.gpudirect_rdma for h in hosts):
        out["efa_gpudirect"] = (
            "aws.gpudirect_rdma is false"
            if spec.aws and not spec.aws.gpudirect_rdma
            else "no selected instance type supports GPUDirect RDMA over EFA (p4, p5)"
        )
    if not any(h.placement_group for h in hosts):
        out["placement_group"] = (
            "no cluster placement group declared (aws.placement_group with "
            "placement_strategy cluster)"
        )
    return out


# --- judging ---------------------------------------------------------------------------------

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
