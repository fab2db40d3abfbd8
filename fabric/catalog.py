"""Facts about cloud machine types that the spec and the cloud components need.

A small, hand-kept table: GPU count and RDMA-capable interfaces per type. A type
that is missing here is unknown, not "without EFA": add it with its source.

Sources (public documentation):

- AWS EFA-capable types and interface counts: "Maximize network bandwidth on
  Amazon EC2 instances with multiple network cards",
  https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa-acc-inst-types.html
  (P5 and P5e: up to 32 network cards, one EFA each) and the EC2 API field
  ``NetworkInfo.EfaInfo.MaximumEfaInterfaces``
  (``aws ec2 describe-instance-types --instance-types TYPE``).
- trn1.32xlarge: 8 EFA devices, trn1n.32xlarge: 16 — AWS Neuron docs,
  "How to prepare trn1.32xlarge for multi-node execution".
- GCP A3 High: 8 H100 and up to 4 GPU NICs; A3 Mega: up to 8 GPU NICs —
  https://cloud.google.com/kubernetes-engine/docs/how-to/gpu-bandwidth-gpudirect-tcpx
  and https://cloud.google.com/compute/docs/gpus/gpudirect (GPU NIC VPCs use MTU 8244).
- GCP A3 Ultra: 8 H200, each with a dedicated ConnectX-7 RoCE NIC —
  https://cloud.google.com/compute/docs/accelerator-optimized-machines#a3-ultra-vms
  (RoCE VPC networks use MTU 8896).
- GPUDirect RDMA over EFA (device RDMA): "only p4 and p5 instances support both EFA and NVIDIA
  GPUDirect RDMA" — aws/aws-ofi-nccl doc/efa-env-var.md (section "Sample Presets", commit
  2daf7d303aa139a03140aa530957d10521e4478d), which also gives the job environment
  (``FI_PROVIDER=efa``, ``FI_EFA_USE_DEVICE_RDMA=1``; harmless with libfabric >= 1.18).
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
class AwsInstanceType:
    """An EC2 instance type: its accelerators and how many EFA interfaces it takes."""

    name: str
    gpus: int
    gpu_type: str | None
    efa_interfaces: int
    gpudirect_rdma: bool = False

    @property
    def efa(self) -> bool:
        """True when the type supports EFA at all."""
        return self.efa_interfaces > 0


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


_AWS: tuple[AwsInstanceType, ...] = (
    AwsInstanceType("p5.48xlarge", gpus=8, gpu_type="h100", efa_interfaces=32, gpudirect_rdma=True),
    AwsInstanceType(
        "p5e.48xlarge", gpus=8, gpu_type="h200", efa_interfaces=32, gpudirect_rdma=True
    ),
    AwsInstanceType(
        "p5en.48xlarge", gpus=8, gpu_type="h200", efa_interfaces=16, gpudirect_rdma=True
    ),
    AwsInstanceType("p4d.24xlarge", gpus=8, gpu_type="a100", efa_interfaces=4, gpudirect_rdma=True),
    AwsInstanceType(
        "p4de.24xlarge", gpus=8, gpu_type="a100", efa_interfaces=4, gpudirect_rdma=True
    ),
    AwsInstanceType("trn1.32xlarge", gpus=0, gpu_type=None, efa_interfaces=8),
    AwsInstanceType("trn1n.32xlarge", gpus=0, gpu_type=None, efa_interfaces=16),
    AwsInstanceType("g5.xlarge", gpus=1, gpu_type="a10g", efa_interfaces=0),
    AwsInstanceType("c6i.2xlarge", gpus=0, gpu_type=None, efa_interfaces=0),
    AwsInstanceType("m5.large", gpus=0, gpu_type=None, efa_interfaces=0),
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


def aws_instance(instance_type: str) -> AwsInstanceType | None:
    """The catalog entry for an EC2 instance type, or None when it is not listed."""
    return next((t for t in _AWS if t.name == instance_type), None)


def gcp_machine(machine_type: str) -> GcpMachineType | None:
    """The catalog entry for a Compute Engine machine type, or None when it is not listed."""
    return next((t for t in _GCP if t.name == machine_type), None)


def aws_efa_types() -> list[str]:
    """Names of the listed EC2 types that support EFA, for error messages."""
    return [t.name for t in _AWS if t.efa]


def gcp_gpu_machine_types() -> list[str]:
    """Names of the listed Compute Engine GPU machine types, for error messages."""
    return [t.name for t in _GCP]


# --- NCCL bandwidth targets (issue 28) --------------------------------------------------------
#
# Every number below is quoted from its source; ``fabric.verify.nccl`` judges against them.
#
# - Single node, all-reduce bus bandwidth at 16 GiB over NVLink, NCCL's default algorithm
#   (NVLS, NVLink SHARP, on 8x H100/H200): Azure's node health checks,
#   Azure/azurehpc-health-checks ``conf/nd96isr_h100_v5.conf`` at commit
#   7e6ac7796e4398d2a6b0b29ca39f1060f0a993cb (``check_nccl_allreduce 460.0 1 ... 16G``),
#   ``conf/nd96isr_h200_v5.conf`` at 13fa400b10f5cb8d900cf02ea0cdda958a2082b9 (``431.0``) and
#   ``conf/nd96amsr_a100_v4.conf`` at 2a20aecf0371335db7741a498a836b910d716d15 (``228.0``).
#   NVIDIA's peak for comparison: "On 8 GPUs, you should reach a peak busBw of ~480GB/s" (H100,
#   NVLS; ~370 GB/s with NCCL_ALGO=RING): sjeaugey, NVIDIA/nccl-tests issue 212, 2024-05-06.
# - Across nodes, per NIC, all-reduce bus bandwidth with the Ring algorithm (Tree, NVLS-Tree and
#   CollNet report inflated busbw on two nodes, so multi-node runs pin ``NCCL_ALGO=Ring``):
#   "CX-7 NICs at NDR rate (400Gbps) should achieve up to 48-49GB/s per NIC" (AddyLaddy,
#   NVIDIA/nccl-tests issue 267, 2025-01-23); "We usually consider 24GB/s is the peak
#   performance per 200G NIC (12 GB/s for 100G NICs)" (sjeaugey, NVIDIA/nccl-tests issue 119,
#   2022-11-17); ring busbw across nodes is the NICs' sum: one HDR NIC under 8 GPUs gives
#   "24GB/s inter-node" (sjeaugey, NVIDIA/nccl issue 412, 2023-04-24). The floor railyard
#   judges is 96 % of that peak (NDR: 46.08 GB/s per NIC, the "46-48 GB/s" of NVIDIA's
#   guidance), per NIC of the node.
# - Per rail, ``ib_write_bw --use_cuda`` (GPUDirect RDMA) between two nodes: Azure's
#   ``check_ib_bw_gdr 380`` (NDR 400, ``nd96isr_h100_v5.conf`` above) and ``check_ib_bw_gdr
#   185.0`` (HDR 200, ``nd96amsr_a100_v4.conf`` above), in Gb/s.


@dataclass(frozen=True)
class BusBwTarget:
    """A minimum NCCL bus bandwidth (GB/s): the collective, the algorithm it holds for, the
    message size to read it at, and where the number comes from."""

    min_busbw: float
    collective: str
    algorithm: str
    size: str
    source: str


_AZURE_NHC = "Azure/azurehpc-health-checks"

#: (GPU type, GPUs per node) -> single-node all-reduce floor at 16 GiB, NCCL's default algorithm.
_SINGLE_NODE: dict[tuple[str, int], BusBwTarget] = {
    ("h100", 8): BusBwTarget(
        460.0,
        "all_reduce",
        "NCCL default (NVLS on 8x H100)",
        "16G",
        f"{_AZURE_NHC} conf/nd96isr_h100_v5.conf @ 7e6ac779: check_nccl_allreduce 460.0 ... 16G",
    ),
    ("h200", 8): BusBwTarget(
        431.0,
        "all_reduce",
        "NCCL default (NVLS on 8x H200)",
        "16G",
        f"{_AZURE_NHC} conf/nd96isr_h200_v5.conf @ 13fa400b: check_nccl_allreduce 431.0 1 16G",
    ),
    ("a100", 8): BusBwTarget(
        228.0,
        "all_reduce",
        "NCCL default (Ring/Tree on 8x A100)",
        "16G",
        f"{_AZURE_NHC} conf/nd96amsr_a100_v4.conf @ 2a20aecf: check_nccl_allreduce 228.0 ... 16G",
    ),
}

#: Link rate (Gb/s) -> NVIDIA's peak all-reduce bus bandwidth per NIC (GB/s) across nodes.
NIC_PEAK_BUSBW: dict[int, tuple[float, str]] = {
    400: (48.0, "NVIDIA/nccl-tests issue 267 (AddyLaddy, 2025-01-23): 48-49 GB/s per NDR NIC"),
    200: (24.0, "NVIDIA/nccl-tests issue 119 (sjeaugey, 2022-11-17): 24 GB/s per 200G NIC"),
    100: (12.0, "NVIDIA/nccl-tests issue 119 (sjeaugey, 2022-11-17): 12 GB/s per 100G NIC"),
}

#: The share of NVIDIA's per-NIC peak a multi-node run must reach (NDR: 46.08 GB/s per NIC).
NIC_FLOOR_SHARE = 0.96

#: Link rate (Gb/s) -> ib_write_bw --use_cuda floor (Gb/s) per rail, and its source.
GPUDIRECT_WRITE_FLOOR: dict[int, tuple[float, str]] = {
    400: (380.0, f"{_AZURE_NHC} conf/nd96isr_h100_v5.conf @ 7e6ac779: check_ib_bw_gdr 380"),
    200: (185.0, f"{_AZURE_NHC} conf/nd96amsr_a100_v4.conf @ 2a20aecf: check_ib_bw_gdr 185.0"),
}


def single_node_allreduce(gpu_type: str | None, gpus: int) -> BusBwTarget | None:
    """The single-node all-reduce floor for ``gpus`` GPUs of ``gpu_type``, or None when no
    source gives one (then the bandwidth is reported, not judged)."""
    return _SINGLE_NODE.get(((gpu_type or "").lower(), gpus))


def multi_node_allreduce(rate_gbps: int, nics: int) -> BusBwTarget | None:
    """The multi-node all-reduce floor (Ring) for nodes with ``nics`` NICs of ``rate_gbps``."""
    peak = NIC_PEAK_BUSBW.get(rate_gbps)
    if peak is None or nics < 1:
        return None
    per_nic, source = peak
    return BusBwTarget(
        round(per_nic * NIC_FLOOR_SHARE * nics, 2),
        "all_reduce",
        "Ring (NCCL_ALGO=Ring: Tree and NVLS-Tree inflate two-node busbw)",
        "8G",
        f"{NIC_FLOOR_SHARE:.0%} of {per_nic} GB/s x {nics} NICs; {source}",
    )


def gpudirect_write_floor(rate_gbps: int) -> tuple[float, str] | None:
    """The per-rail ib_write_bw --use_cuda floor (Gb/s) and its source, or None."""
    return GPUDIRECT_WRITE_FLOOR.get(rate_gbps)


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


#: EC2 types launched as the EFA user guide recommends for multi-card EFA instances: an ENA
#: primary interface (network card 0, device index 0; it carries the instance's IP address)
#: and one ``efa-only`` interface per network card (card 0 at device index 1, every other card
#: at device index 0), which take no IP address. Source: EC2 User Guide, "Maximize network
#: bandwidth on Amazon EC2 instances with multiple network cards" (efa-acc-inst-types), its basic
#: configuration and its "EFA configuration for P5 and P5e instances" section. Types not listed
#: keep one ``efa`` interface (EFA with ENA) per card.
_AWS_EFA_ONLY = frozenset({"p5.48xlarge", "p5e.48xlarge"})


def aws_efa_only(instance_type: str) -> bool:
    """Whether the type is launched with an ENA primary plus ``efa-only`` interfaces."""
    return instance_type in _AWS_EFA_ONLY
