"""The ``gcp:`` section of a spec (spec layer): the settings only target gcp has.
``fabric.spec.models`` adds it to ClusterSpec as the optional field ``gcp`` (``MODEL``)."""

from __future__ import annotations

import ipaddress
from typing import Any, Literal

from pydantic import Field

from fabric.spec.blocks import EgressSpec, Model
from fabric.targets.gcp.catalog import gcp_blueprint, gcp_machine

__all__ = ["MODEL", "GcpSpec"]


class GcpSpec(Model):
    """GCP target: A3 / A3 Mega with GPUDirect-TCPX(O)."""

    project: str
    region: str
    zone: str
    image: str | None = Field(
        default=None,
        description="boot image of every node; default Google's base image family for the "
        "compute nodes' A3 kind (fabric/targets/gcp/catalog.py)",
    )
    boot_disk_type: str | None = Field(
        default=None,
        pattern=r"^[a-z][a-z-]{1,30}$",
        description="the compute nodes' boot disk type; default the catalog's for the machine "
        "type (A3 High and Mega: pd-ssd, A3 Ultra: hyperdisk-balanced)",
    )
    access: Literal["metadata_keys", "os_login"] = Field(
        default="metadata_keys",
        description="how SSH logins are granted: metadata_keys (the ssh-keys metadata of "
        "config sshPublicKey) or os_login (enable-oslogin; the IAM role compute.osAdminLogin)",
    )
    service_account: str | None = Field(
        default=None,
        pattern=r"^[a-z][a-z0-9-]{4,28}[a-z0-9]@[a-z0-9.-]+\.iam\.gserviceaccount\.com$",
        description="an existing service account for every node; default one railyard creates "
        "with the roles logging.logWriter and monitoring.metricWriter",
    )
    network_prefix: str = "railyard"
    gpu_nic_mtu: int = 8244
    gpu_subnet_cidrs: list[ipaddress.IPv4Network] = Field(default_factory=list)
    system_subnet_cidr: ipaddress.IPv4Network = ipaddress.IPv4Network("10.128.0.0/20")
    second_subnet_cidr: ipaddress.IPv4Network = Field(
        default=ipaddress.IPv4Network("10.129.0.0/20"),
        description="A3 Ultra's second gVNIC network (NIC 1), as Cluster Toolkit's net-1",
    )
    compact_placement: bool = True
    egress: EgressSpec = Field(default_factory=EgressSpec)
    provisioning: Literal["standard", "reservation", "flex-start", "spot"] = Field(
        default="standard",
        description="compute capacity: on demand, a specific reservation, DWS flex-start or Spot",
    )
    reservation: str | None = Field(
        default=None,
        pattern=r"^(projects/[a-z0-9-]+/reservations/)?[a-z]([-a-z0-9]*[a-z0-9])?"
        r"(/reservationBlocks/[a-z0-9-]+(/reservationSubBlocks/[a-z0-9-]+)?)?$",
        description="the specific reservation (provisioning: reservation), name or path",
    )
    max_run_duration: int | None = Field(
        default=None,
        ge=600,
        le=604800,
        description="seconds a DWS flex-start VM runs (provisioning: flex-start), 600-604800",
    )


MODEL = GcpSpec
#: The one fabric kind target gcp supports, and which only it has.
FABRIC_KIND = "gcp-gpudirect"
#: The largest MTU a GCP VPC carries (bytes).
MAX_MTU = 8896

#: What a GCP node may need from an offline image besides the shared needs.
NEEDS: dict[str, str] = {
    "docker": "docker and the NVIDIA container toolkit (gcp_gpudirect role: the RxDM)",
    "rxdm-image": "the GPUDirect-TCPX(O) RxDM and NCCL plugin container images, pulled",
    "rdma-core": "rdma-core and ibverbs-utils (rdma_stack role, A3 Ultra's ConnectX NICs)",
    "tcpx-kernel": "the TCPX kernel linux-gcp-tcpx (A3 High; Cluster Toolkit's image builds it)",
    "dmabuf-import-helper": "the dmabuf-import-helper DKMS module (A3 Mega)",
    "aperture-devices": "the udev rule exposing /dev/aperture_devices (A3 Mega)",
    "nccl-gib": "Google's gIB NCCL plugin under /usr/local/gib (A3 Ultra)",
}


def image_needs(spec: Any, group: Any) -> list[str]:
    """What a compute group downloads during the hand-off on GCP: the RxDM (TCPX, TCPXO) or
    rdma-core (A3 Ultra's RoCE), then what Cluster Toolkit's image for its A3 kind carries."""
    del spec
    machine = gcp_machine(group.instance_type or "")
    if machine is None:
        return []
    out = ["docker", "rxdm-image"] if machine.rxdm else ["rdma-core"]
    blueprint = gcp_blueprint(machine.name)
    return out + [n for n in blueprint.image_needs if n not in out] if blueprint else out
