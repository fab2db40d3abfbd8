"""The AWS target's model additions (model layer): what a node runs to give its placement, and
the health check's configuration of an EFA instance without declared HCAs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fabric.model.gpus import GPUDIRECT_PATHS
from fabric.targets.aws.catalog import aws_instance
from fabric.topology.cloud import IMDS_INSTANCE_ID

if TYPE_CHECKING:
    from fabric.spec import ClusterSpec

__all__ = ["PLACEMENT_COMMAND", "health_config"]

#: What each compute node runs to give its placement: its instance id from IMDSv2.
PLACEMENT_COMMAND = IMDS_INSTANCE_ID


def health_config(spec: ClusterSpec, host: str) -> dict[str, Any]:
    """The health check's additions for an EFA instance: the catalog's EFA device count and
    the GPUDirect RDMA paths where the type and the spec have it; empty for a type without
    EFA or a spec without it."""
    settings = spec.aws
    if spec.fabric.kind != "efa" or settings is None or not settings.efa:
        return {}
    known = aws_instance(spec.hosts[host].instance_type or "")
    if known is None or not known.efa:
        return {}
    gdr = settings.gpudirect_rdma and known.gpudirect_rdma
    return {
        "efa": {"devices": known.efa_interfaces},
        "gpudirect": GPUDIRECT_PATHS if gdr else [],
    }
