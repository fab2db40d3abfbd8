"""What a cloud node downloads during the hand-off, and what an offline image lacks.

With ``egress.mode: offline`` the nodes reach no mirror, registry or installer URL: the image
carries everything, and ``egress.image_provides`` says so (the offline contract). The needs
come from what the roles install: the slurm role's packages (munge everywhere, slurmctld on
the controller, slurmd on compute nodes), the NVIDIA driver on GPU nodes (declared GPUs, or
the machine type's), the fabric manager on NVSwitch nodes (gpu_node role), and what each
target's own roles and images need (``NEEDS`` and ``image_needs`` of its ``section.py``:
AWS's EFA installer, GCP's RxDM, TCPX kernel, gIB plugin...). The egress block is the
target's section's ``egress``. :func:`offline_image_lacks` is pure: the spec rule
``check_egress`` (fabric.spec.targets) runs it before anything is created, so the hand-off
never starts on an image that lacks a package it would have to download.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fabric.spec.gpus import group_gpus, has_nvswitch
from fabric.targets import hook, hooks

if TYPE_CHECKING:  # the validator (models) runs the rules, which call these: types only here
    from fabric.spec.models import ClusterSpec, EgressSpec

__all__ = ["NEEDS", "egress_of", "image_needs", "needs", "offline_image_lacks"]

#: What any node may need, whatever its target, and what it stands for.
NEEDS: dict[str, str] = {
    "munge": "the munge package (slurm role, every node)",
    "slurmctld": "the slurmctld and slurm-client packages (slurm role, the controller)",
    "slurmd": "the slurmd and slurm-client packages (slurm role, compute nodes)",
    "nvidia-driver": "the NVIDIA driver (GPU compute nodes)",
    "nvidia-fabricmanager": (
        "the NVIDIA fabric manager at the driver's version (gpu_node role, NVSwitch GPU nodes)"
    ),
    "nfs-client": "the NFS client, nfs-common (storage role: a shared nfs, efs or filestore)",
    "scratch-tools": "mdadm, xfsprogs and e2fsprogs (storage role: the local NVMe scratch)",
}

#: Shared file system kinds mounted over NFS (the storage role's client package).
_NFS_KINDS = {"nfs", "efs", "filestore"}


def needs() -> dict[str, str]:
    """Every name ``egress.image_provides`` may list, and what it stands for: the shared
    needs, then each target's own (``NEEDS`` of its ``section.py``)."""
    out = dict(NEEDS)
    for _, own in hooks("section", "NEEDS"):
        out.update(own)
    return out


def egress_of(spec: ClusterSpec) -> EgressSpec | None:
    """The egress block of the target's own section (None for targets without one)."""
    return getattr(spec.section, "egress", None)


def image_needs(spec: ClusterSpec) -> dict[str, list[str]]:
    """Per host, what the hand-off would download (names of :func:`needs`)."""
    own = hook(spec.target, "section", "image_needs")
    out: dict[str, list[str]] = {}
    controller = spec.slurm.controller
    for group in spec.nodes:
        gpus, gpu_type = group_gpus(spec.target, group)  # declared, or the machine's
        for host in group.hosts:
            wanted = ["munge"]
            if host == controller:
                wanted.append("slurmctld")
            if group.role == "compute":
                wanted.append("slurmd")
                if gpus:
                    wanted.append("nvidia-driver")
                if has_nvswitch(gpus, gpu_type):
                    wanted.append("nvidia-fabricmanager")
                if own is not None:
                    wanted += [n for n in own(spec, group) if n not in wanted]
            out[host] = wanted + _storage_needs(spec)
    return out


def _storage_needs(spec: ClusterSpec) -> list[str]:
    """What the storage role installs on every node for the spec's ``storage`` block."""
    storage = spec.storage
    if storage is None:
        return []
    wanted = ["nfs-client"] if any(fs.kind in _NFS_KINDS for fs in storage.shared) else []
    return wanted + (["scratch-tools"] if storage.scratch is not None else [])


def offline_image_lacks(spec: ClusterSpec) -> dict[str, list[str]]:
    """What the offline image lacks for the hand-off, per need, with the hosts needing it; empty
    unless ``egress.mode`` is ``offline``."""
    egress = egress_of(spec)
    if egress is None or egress.mode != "offline":
        return {}
    provided = set(egress.image_provides)
    lacks: dict[str, list[str]] = {}
    for host, wanted in image_needs(spec).items():
        for need in wanted:
            if need not in provided:
                lacks.setdefault(need, []).append(host)
    return lacks
