"""The Azure target's hand-off: no role of its own, and the NCCL environment ND v5 jobs get
(found by ``fabric.handoff.vars`` through the registry, which asks every target: each function
answers only for an Azure spec).

What the hand-off installs on Azure's Ubuntu-HPC image, and what it only checks: the image
carries the NVIDIA driver, DOCA/MOFED (the InfiniBand stack), NCCL and nccl-tests,
nvidia-peermem, the fabric manager, and the ND v5 topology file with /etc/nccl.conf
(Azure/azhpc-images ubuntu/ubuntu-22.x/ubuntu-22.04-hpc/install.sh, customizations/ndv5.sh).
No Azure role installs any of these; the shared roles run as on any InfiniBand target (the
rdma_stack role's distribution packages are the names the image's DOCA/MOFED packages carry),
the subnet_manager role starts nothing (the SM is ``external``), and the checks then judge
ports, rates, the SM and NCCL on what the image brought.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fabric.targets.azure.catalog import NDV5_JOB_ENV, azure_size

if TYPE_CHECKING:
    from fabric.spec import ClusterSpec


def role_vars(spec: ClusterSpec) -> dict[str, Any]:
    """No role of the target's own: the HPC image carries what AWS's efa role installs."""
    del spec
    return {}


def job_environment(spec: ClusterSpec) -> dict[str, dict[str, dict[str, str]]]:
    """Per ND v5 compute host of an Azure spec, every job's environment: the settings Azure's
    image puts in /etc/nccl.conf (topology file, relaxed ordering), set explicitly so a job's
    own NCCL (a container's) gets them too, plus the GPUs in PCI order and NCCL's bootstrap on
    ``eth0`` (fabric/targets/azure/catalog.py, ``NDV5_JOB_ENV``)."""
    out: dict[str, dict[str, dict[str, str]]] = {}
    if spec.azure is None or spec.fabric.kind != "infiniband":
        return out
    for host, group in spec.hosts.items():
        known = azure_size(group.instance_type or "")
        if group.role == "compute" and known is not None and known.nccl_topology:
            out[host] = {"all": dict(NDV5_JOB_ENV), "multinode": {}}
    return out
