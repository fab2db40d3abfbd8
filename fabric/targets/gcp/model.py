"""The GCP target's model additions: GPU NICs per machine type and the GPU subnets' ranges,
which the component creates, the hand-off configures and the checks expect."""

from __future__ import annotations

import ipaddress

from fabric.spec import GcpSpec, NodeGroup
from fabric.targets.gcp.catalog import gcp_machine

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
