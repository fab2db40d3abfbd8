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

    @property
    def rxdm(self) -> bool:
        """True when GPUDirect-TCPX(O) needs the receive-data-path manager (A3 High, A3 Mega)."""
        return self.transport in ("gpudirect-tcpx", "gpudirect-tcpxo")


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
    ),
    GcpMachineType(
        "a3-ultragpu-8g",
        gpus=8,
        gpu_type="h200",
        gpu_nics=8,
        gpu_nic_mtu=8896,
        transport="rdma-roce",
    ),
)


def gcp_machine(machine_type: str) -> GcpMachineType | None:
    """The catalog entry for a Compute Engine machine type, or None when it is not listed."""
    return next((t for t in _GCP if t.name == machine_type), None)


def gcp_gpu_machine_types() -> list[str]:
    """Names of the listed Compute Engine GPU machine types, for error messages."""
    return [t.name for t in _GCP]


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
