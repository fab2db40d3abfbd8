"""What a cloud node downloads during the hand-off, and what an offline image lacks.

With ``egress.mode: offline`` the nodes reach no mirror, registry or installer URL: the image
carries everything, and ``egress.image_provides`` says so (the offline contract). The needs
come from what the roles install: the slurm role's packages (munge everywhere, slurmctld on
the controller, slurmd on compute nodes), the efa role's installer (``efa``), the
gcp_gpudirect role's docker and RxDM container image (A3 High and Mega), the rdma_stack
role's distro packages (A3 Ultra's ConnectX NICs), the NVIDIA driver on GPU nodes, and what
Cluster Toolkit's A3 images carry that no role installs (the TCPX kernel, the dmabuf import
helper and aperture devices, the gIB plugin: fabric.targets.gcp.catalog.GcpA3Blueprint).
:func:`offline_image_lacks` is pure: the spec rule ``check_egress`` (fabric.spec.targets)
runs it before anything is created, so the hand-off never starts on an image that lacks a
package it would have to download.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fabric.targets.gcp.catalog import gcp_blueprint, gcp_machine

if TYPE_CHECKING:  # the validator (models) runs the rules, which call these: types only here
    from fabric.spec.models import ClusterSpec, EgressSpec

__all__ = ["NEEDS", "egress_of", "image_needs", "offline_image_lacks"]

#: Every name ``egress.image_provides`` may list, and what it stands for.
NEEDS: dict[str, str] = {
    "munge": "the munge package (slurm role, every node)",
    "slurmctld": "the slurmctld and slurm-client packages (slurm role, the controller)",
    "slurmd": "the slurmd and slurm-client packages (slurm role, compute nodes)",
    "nvidia-driver": "the NVIDIA driver (GPU compute nodes)",
    "efa": "the EFA software: aws-efa-installer's kernel module, libfabric and aws-ofi-nccl",
    "docker": "docker and the NVIDIA container toolkit (gcp_gpudirect role: the RxDM)",
    "rxdm-image": "the GPUDirect-TCPX(O) RxDM and NCCL plugin container images, pulled",
    "rdma-core": "rdma-core and ibverbs-utils (rdma_stack role, A3 Ultra's ConnectX NICs)",
    "tcpx-kernel": "the TCPX kernel linux-gcp-tcpx (A3 High; Cluster Toolkit's image builds it)",
    "dmabuf-import-helper": "the dmabuf-import-helper DKMS module (A3 Mega)",
    "aperture-devices": "the udev rule exposing /dev/aperture_devices (A3 Mega)",
    "nccl-gib": "Google's gIB NCCL plugin under /usr/local/gib (A3 Ultra)",
}


def egress_of(spec: ClusterSpec) -> EgressSpec | None:
    """The egress block of a cloud spec (None for targets without one)."""
    if spec.target == "aws" and spec.aws is not None:
        return spec.aws.egress
    if spec.target == "gcp" and spec.gcp is not None:
        return spec.gcp.egress
    return None


def image_needs(spec: ClusterSpec) -> dict[str, list[str]]:
    """Per host, what the hand-off would download (names of :data:`NEEDS`)."""
    out: dict[str, list[str]] = {}
    controller = spec.slurm.controller
    for group in spec.nodes:
        for host in group.hosts:
            needs = ["munge"]
            if host == controller:
                needs.append("slurmctld")
            if group.role == "compute":
                needs.append("slurmd")
                if group.gpus:
                    needs.append("nvidia-driver")
                if spec.target == "aws" and spec.aws is not None and spec.aws.efa:
                    needs.append("efa")
                machine = gcp_machine(group.instance_type or "")
                if spec.target == "gcp" and machine is not None:
                    needs += ["docker", "rxdm-image"] if machine.rxdm else ["rdma-core"]
                    blueprint = gcp_blueprint(machine.name)
                    needs += (
                        [n for n in blueprint.image_needs if n not in needs] if blueprint else []
                    )
            out[host] = needs
    return out


def offline_image_lacks(spec: ClusterSpec) -> dict[str, list[str]]:
    """What the offline image lacks for the hand-off, per need, with the hosts needing it; empty
    unless ``egress.mode`` is ``offline``."""
    egress = egress_of(spec)
    if egress is None or egress.mode != "offline":
        return {}
    provided = set(egress.image_provides)
    lacks: dict[str, list[str]] = {}
    for host, needs in image_needs(spec).items():
        for need in needs:
            if need not in provided:
                lacks.setdefault(need, []).append(host)
    return lacks
