"""The AWS target's hand-off variables: the efa role on EFA instances and the job environment
EFA needs (found by ``fabric.handoff.vars`` through the registry). The shared file systems'
addresses are known only once made: the component puts them in the inventory as host vars
(``storage_shared``, ``storage_scratch_layout``; ``fabric.targets.aws.storage``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fabric.targets.aws.catalog import aws_instance, efa_job_env

if TYPE_CHECKING:
    from fabric.spec import ClusterSpec


def role_vars(spec: ClusterSpec) -> dict[str, Any]:
    """The efa role on EFA instances (``kind: efa``): installer from the spec, GPUDirect RDMA
    (its dma-buf path checked, never nvidia_peermem) when ``aws.gpudirect_rdma``, ptrace for the shared-memory path; the EFA
    devices each host must show, from the instance catalog (``railyard_efa_hosts``, host ->
    device count: site.yml runs the role on these hosts only)."""
    aws = spec.aws
    if spec.fabric.kind != "efa" or aws is None or not aws.efa:
        return {}
    hosts: dict[str, int] = {}
    for host, group in spec.hosts.items():
        known = aws_instance(group.instance_type or "")
        if group.role == "compute" and known is not None and known.efa:
            hosts[host] = known.efa_interfaces
    out: dict[str, Any] = {
        "railyard_efa_hosts": hosts,
        "efa_gpudirect_rdma": aws.gpudirect_rdma,
        "efa_ptrace_scope": 0,
    }
    if aws.efa_installer_url:  # with its checksum: the spec's target rules require both
        out["efa_installer_url"] = aws.efa_installer_url
        out["efa_installer_checksum"] = aws.efa_installer_checksum
    if aws.efa_installer_version:
        out["efa_installer_version"] = aws.efa_installer_version
    return out


def job_environment(spec: ClusterSpec) -> dict[str, dict[str, dict[str, str]]]:
    """Per EFA compute host, the job environment (every job): libfabric's efa provider, and
    device RDMA where the instance and the spec have it."""
    out: dict[str, dict[str, dict[str, str]]] = {}
    if spec.fabric.kind != "efa" or spec.aws is None or not spec.aws.efa:
        return out
    for host, group in spec.hosts.items():
        known = aws_instance(group.instance_type or "")
        if group.role == "compute" and known is not None and known.efa:
            rdma = known.gpudirect_rdma and spec.aws.gpudirect_rdma
            out[host] = {"all": efa_job_env(rdma), "multinode": {}}
    return out
