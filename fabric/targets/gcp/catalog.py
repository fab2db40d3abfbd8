"""The GCP target's catalog: Compute Engine GPU machine types and Cluster Toolkit's blueprints.

A small, hand-kept table. A type that is missing here is unknown: add it with its source.
Sources (public documentation):

- A3 High: 8 H100 and up to 4 GPU NICs; A3 Mega: up to 8 GPU NICs —
  https://cloud.google.com/kubernetes-engine/docs/how-to/gpu-bandwidth-gpudirect-tcpx
  and https://cloud.google.com/compute/docs/gpus/gpudirect (GPU NIC VPCs use MTU 8244).
- A3 Ultra: 8 H200, each with a dedicated ConnectX-7 RoCE NIC —
  https://cloud.google.com/compute/docs/accelerator-optimized-machines#a3-ultra-vms
  (RoCE VPC networks use MTU 8896).
- A3 GPU NIC names and the control NIC as Cluster Toolkit's A3 blueprints use them (Ubuntu/Debian
  predictable names): GoogleCloudPlatform/cluster-toolkit
  examples/machine-learning/a3-highgpu-8g/nccl-tests/run-nccl-tests.sh and
  a3-megagpu-8g/nccl-tests/run-nccl-tests.sh (commit 1047080375afbb44da4b596be314634e7486af4a):
  ``NCCL_SOCKET_IFNAME=enp0s12``, GPU NICs ``enp6s0,enp12s0,enp134s0,enp140s0`` (A3 High) and
  ``enp6s0,enp7s0,enp13s0,enp14s0,enp134s0,enp135s0,enp141s0,enp142s0`` (A3 Mega); the blueprints
  set ``bandwidth_tier: gvnic_enabled`` (gVNIC, kernel driver ``gve``).
- Boot disk types (issue 40), the first the default: the types Cluster Toolkit's A3 Slurm
  blueprints give each machine (commit 1047080375afbb44da4b596be314634e7486af4a,
  examples/machine-learning/: a3high-slurm-blueprint.yaml and a3mega-slurm-blueprint.yaml
  ``disk_type: pd-ssd``; a3ultra-slurm-blueprint.yaml ``disk_type: hyperdisk-balanced``; their
  login and controller nodes ``pd-balanced``), then the others Compute Engine lists for the
  series (https://cloud.google.com/compute/docs/accelerator-optimized-machines, "Supported
  disk types"; https://cloud.google.com/compute/docs/disks/hyperdisks). Compute Engine's own
  default, pd-standard, is not among A3's.
- Images: the base images the blueprints build from, by family (a3high: ``ubuntu-os-cloud``
  ``ubuntu-2204-lts``; a3mega and a3ultra: ``ubuntu-os-accelerator-images``
  ``ubuntu-accelerator-2404-amd64-with-nvidia-580-v20260522``, of the family named without the
  date).
- Local SSD: 16 (A3 High, A3 Mega) and 32 (A3 Ultra) NVMe disks of 375 GiB, bundled with the
  machine: modules/compute/gke-node-pool/disk_definitions.tf (``local_ssd_count_*``) and
  https://cloud.google.com/compute/docs/gpus ("Bundled (6000 GB)" for a3-highgpu-8g).
- Zones: https://cloud.google.com/compute/docs/gpus/gpu-regions-zones is the authority; listed
  here are only the zones a public Google file runs the machine type in:
  cluster-toolkit tools/cloud-build/daily-tests/builds/ml-a3-highgpu-slurm.yaml (us-west1-a),
  examples/gke-a3-highgpu/gke-a3-highgpu.yaml (us-central1-c),
  daily-tests/builds/ml-a3-megagpu-slurm-ubuntu.yaml (us-west4-a),
  daily-tests/builds/ml-a3-ultragpu-slurm.yaml (europe-west1-b); and
  GoogleCloudPlatform/ai-infra-cluster-provisioning test/pr/a3/ and test/pr/a3-mega/
  terraform/modules/cluster/mig/input/multi.tfvars (us-central1-a). Add a zone with its source.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class GcpMachineType:
    """A Compute Engine machine type: its GPUs and its GPU-to-GPU NICs."""

    name: str
    gpus: int
    gpu_type: str
    gpu_nics: int
    gpu_nic_mtu: int
    transport: Literal["gpudirect-tcpx", "gpudirect-tcpxo", "rdma-roce"]
    control_nic: str | None = None
    gpu_nic_names: tuple[str, ...] = ()
    gpu_nic_driver: str | None = None
    boot_disk_types: tuple[str, ...] = ()
    image: str = ""
    local_ssds: int = 0
    local_ssd_gib: int = 375
    zones: tuple[str, ...] = ()

    @property
    def rxdm(self) -> bool:
        """True when GPUDirect-TCPX(O) needs the receive-data-path manager (A3 High, A3 Mega)."""
        return self.transport in ("gpudirect-tcpx", "gpudirect-tcpxo")


#: Google's base images the A3 blueprints build from, by family (see the module's sources).
_UBUNTU_2204 = "projects/ubuntu-os-cloud/global/images/family/ubuntu-2204-lts"
_ACCELERATOR_2404 = (
    "projects/ubuntu-os-accelerator-images/global/images/family/"
    "ubuntu-accelerator-2404-amd64-with-nvidia-580"
)

_GCP: tuple[GcpMachineType, ...] = (
    GcpMachineType(
        "a3-highgpu-8g",
        gpus=8,
        gpu_type="h100",
        gpu_nics=4,
        gpu_nic_mtu=8244,
        transport="gpudirect-tcpx",
        control_nic="enp0s12",
        gpu_nic_names=("enp6s0", "enp12s0", "enp134s0", "enp140s0"),
        gpu_nic_driver="gve",
        boot_disk_types=("pd-ssd", "pd-balanced", "hyperdisk-balanced"),
        image=_UBUNTU_2204,
        local_ssds=16,
        zones=("us-central1-a", "us-central1-c", "us-west1-a"),
    ),
    GcpMachineType(
        "a3-megagpu-8g",
        gpus=8,
        gpu_type="h100",
        gpu_nics=8,
        gpu_nic_mtu=8244,
        transport="gpudirect-tcpxo",
        control_nic="enp0s12",
        gpu_nic_names=(
            "enp6s0",
            "enp7s0",
            "enp13s0",
            "enp14s0",
            "enp134s0",
            "enp135s0",
            "enp141s0",
            "enp142s0",
        ),
        gpu_nic_driver="gve",
        boot_disk_types=("pd-ssd", "pd-balanced", "hyperdisk-balanced"),
        image=_ACCELERATOR_2404,
        local_ssds=16,
        zones=("us-central1-a", "us-west4-a"),
    ),
    GcpMachineType(
        "a3-ultragpu-8g",
        gpus=8,
        gpu_type="h200",
        gpu_nics=8,
        gpu_nic_mtu=8896,
        transport="rdma-roce",
        boot_disk_types=("hyperdisk-balanced", "hyperdisk-extreme"),
        image=_ACCELERATOR_2404,
        local_ssds=32,
        zones=("europe-west1-b",),
    ),
)


def gcp_machine(machine_type: str) -> GcpMachineType | None:
    """The catalog entry for a Compute Engine machine type, or None when it is not listed."""
    return next((t for t in _GCP if t.name == machine_type), None)


def gcp_gpu_machine_types() -> list[str]:
    """Names of the listed Compute Engine GPU machine types, for error messages."""
    return [t.name for t in _GCP]


#: Boot disk types of the head node series (login, controller, bastion), the first the
#: default: the a3high and a3mega blueprints' login and controller nodes (c2-standard-4,
#: c2-standard-8) boot from pd-balanced; N4 and C4 take Hyperdisk only
#: (https://cloud.google.com/compute/docs/general-purpose-machines, "Supported disk types").
_HEAD_SERIES: dict[str, tuple[str, ...]] = {
    series: ("pd-balanced", "pd-ssd", "pd-standard")
    for series in ("e2", "n1", "n2", "n2d", "c2", "c2d")
} | {
    "c3": ("pd-balanced", "pd-ssd", "hyperdisk-balanced"),
    "n4": ("hyperdisk-balanced",),
    "c4": ("hyperdisk-balanced",),
}


def boot_disk_types(machine_type: str) -> tuple[str, ...]:
    """The boot disk types a machine type supports, its default first; () when not listed."""
    known = gcp_machine(machine_type)
    if known is not None:
        return known.boot_disk_types
    return _HEAD_SERIES.get(machine_type.split("-", 1)[0], ())


def head_series() -> list[str]:
    """The head node series the catalog lists boot disk types for, for error messages."""
    return sorted(_HEAD_SERIES)


def gcp_zones(machine_type: str) -> tuple[str, ...]:
    """The catalogued zones that offer a GPU machine type."""
    known = gcp_machine(machine_type)
    return known.zones if known is not None else ()


def gcp_regions() -> list[str]:
    """Every region of a catalogued zone."""
    return sorted({zone.rsplit("-", 1)[0] for t in _GCP for zone in t.zones})


@dataclass(frozen=True)
class GcpA3Blueprint:
    """How Cluster Toolkit's Slurm blueprint of an A3 kind builds its networks and image.

    Sources: GoogleCloudPlatform/cluster-toolkit at commit
    1047080375afbb44da4b596be314634e7486af4a, examples/machine-learning/
    a3-highgpu-8g/a3high-slurm-blueprint.yaml, a3-megagpu-8g/a3mega-slurm-blueprint.yaml,
    a3-ultragpu-8g/a3ultra-slurm-blueprint.yaml, and modules/network/{vpc,multivpc,gpu-rdma-vpc}:

    - A3 High / Mega: a system VPC at MTU 8244 with Private Google Access (``sysnet``), then 4
      / 8 GPU VPCs of one /20 subnet each (``multivpc``), gVNIC on every NIC
      (``bandwidth_tier: gvnic_enabled``). A3 High's image runs the TCPX kernel
      (``install_tcpx_kernel.yml``: ``linux-gcp-tcpx``, held, the default GRUB entry); A3 Mega's
      the dmabuf import helper (``install_dmabuf.yml``: DKMS ``dmabuf-import-helper``) and the
      aperture devices (``aperture_devices.yml``: a udev rule bind-mounting them under
      ``/dev/aperture_devices``, slurmd waiting for them). Both run docker for the RxDM.
    - A3 Ultra: two gVNIC VPCs at MTU 8896 (``net-0``, ``net-1``), then one VPC with the zone's
      RoCE network profile (``networkProfiles/<zone>-vpc-roce``, routing REGIONAL, MTU 8896, no
      firewall rules) holding 8 subnets, one per ``MRDMA`` NIC (``gpu-rdma-vpc``); NCCL through
      Google's gIB plugin (``nccl-gib`` under ``/usr/local/gib``, its environment from
      ``/usr/local/gib/scripts/set_nccl_env.sh``); the nodeset sets ``enable_placement: false``.
    """

    machine_type: str
    system_mtu: int
    gvnic_networks: int
    gpu_nic_type: Literal["GVNIC", "MRDMA"]
    rdma_network_profile: str | None
    nccl_plugin: Literal["tcpx", "tcpxo", "gib"]
    image_needs: tuple[str, ...]


_GCP_BLUEPRINTS: tuple[GcpA3Blueprint, ...] = (
    GcpA3Blueprint(
        "a3-highgpu-8g",
        system_mtu=8244,
        gvnic_networks=1,
        gpu_nic_type="GVNIC",
        rdma_network_profile=None,
        nccl_plugin="tcpx",
        image_needs=("tcpx-kernel", "docker"),
    ),
    GcpA3Blueprint(
        "a3-megagpu-8g",
        system_mtu=8244,
        gvnic_networks=1,
        gpu_nic_type="GVNIC",
        rdma_network_profile=None,
        nccl_plugin="tcpxo",
        image_needs=("dmabuf-import-helper", "aperture-devices", "docker"),
    ),
    GcpA3Blueprint(
        "a3-ultragpu-8g",
        system_mtu=8896,
        gvnic_networks=2,
        gpu_nic_type="MRDMA",
        rdma_network_profile="vpc-roce",
        nccl_plugin="gib",
        image_needs=("nccl-gib",),
    ),
)


def gcp_blueprint(machine_type: str) -> GcpA3Blueprint | None:
    """Cluster Toolkit's blueprint facts for an A3 machine type, or None."""
    return next((b for b in _GCP_BLUEPRINTS if b.machine_type == machine_type), None)


#: The target's machine lookup (shared code asks ``hook(target, "catalog", "machine")``).
machine = gcp_machine
