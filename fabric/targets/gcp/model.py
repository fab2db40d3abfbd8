"""The GCP target's model additions: GPU NICs per machine type and the GPU subnets' ranges,
which the component creates, the hand-off configures and the checks expect."""

from __future__ import annotations

import ipaddress
from typing import TYPE_CHECKING, Any

from fabric.model.gpus import GPUDIRECT_PATHS
from fabric.spec import NodeGroup
from fabric.targets.gcp.catalog import gcp_machine
from fabric.targets.gcp.section import GcpSpec
from fabric.topology.cloud import GCE_PLACEMENT

if TYPE_CHECKING:
    from fabric.spec import ClusterSpec

#: First address block of the default GPU subnets, one /20 per GPU NIC.
DEFAULT_GPU_SUPERNET = ipaddress.IPv4Network("172.16.0.0/16")


def gpu_nic_count(group: NodeGroup) -> int:
    """GPU NICs of a compute group's machine type (0 for head nodes)."""
    known = gcp_machine(group.instance_type or "") if group.role == "compute" else None
    return known.gpu_nics if known else 0


def gpu_subnet_cidrs(settings: GcpSpec, count: int) -> list[str]:
    """The GPU subnets' ranges: the spec's, or one /20 per NIC out of 172.16.0.0/16."""
    if settings.gpu_subnet_cidrs:
        return [str(c) for c in settings.gpu_subnet_cidrs]
    return [str(c) for c in list(DEFAULT_GPU_SUPERNET.subnets(new_prefix=20))[:count]]


#: What each compute node runs to give its placement: its physical_host_topology metadata.
PLACEMENT_COMMAND = GCE_PLACEMENT


def health_config(spec: ClusterSpec, host: str) -> dict[str, Any]:
    """The health check's additions for an A3 VM: its GPU NICs' subnets and MTU, and the
    GPUDirect RDMA paths of A3 Ultra's RoCE (TCPX and TCPXO move GPU memory over TCP, with no
    peer memory); empty for a machine type the catalog does not list."""
    settings = spec.gcp
    if spec.fabric.kind != "gcp-gpudirect" or settings is None:
        return {}
    machine = gcp_machine(spec.hosts[host].instance_type or "")
    if machine is None:
        return {}
    nics = {
        "subnets": gpu_subnet_cidrs(settings, machine.gpu_nics),
        "mtu": settings.gpu_nic_mtu,
    }
    paths = GPUDIRECT_PATHS[::2] if machine.transport == "rdma-roce" else []
    return {"gpu_nics": nics, "gpudirect": paths}
