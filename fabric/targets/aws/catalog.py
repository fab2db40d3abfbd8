"""The AWS target's catalog: EC2 instance types, their GPUs and EFA interfaces.

A small, hand-kept table. A type that is missing here is unknown, not "without EFA": add it
with its source. Sources (public documentation):

- EFA-capable types and interface counts: "Maximize network bandwidth on Amazon EC2
  instances with multiple network cards",
  https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa-acc-inst-types.html
  (P5 and P5e: up to 32 network cards, one EFA each) and the EC2 API field
  ``NetworkInfo.EfaInfo.MaximumEfaInterfaces``
  (``aws ec2 describe-instance-types --instance-types TYPE``).
- trn1.32xlarge: 8 EFA devices, trn1n.32xlarge: 16 — AWS Neuron docs,
  "How to prepare trn1.32xlarge for multi-node execution".
- GPUDirect RDMA over EFA (device RDMA): "only p4 and p5 instances support both EFA and NVIDIA
  GPUDirect RDMA" — aws/aws-ofi-nccl doc/efa-env-var.md (section "Sample Presets", commit
  2daf7d303aa139a03140aa530957d10521e4478d), which also gives the job environment
  (``FI_PROVIDER=efa``, ``FI_EFA_USE_DEVICE_RDMA=1``; harmless with libfabric >= 1.18).
- Instance store (local NVMe count x size, GB): EC2 User Guide, "Instance store volume limits
  for EC2 instances" (instance-store-volumes.html) and the accelerated computing specifications
  (ac.html): p5.48xlarge, p5e.48xlarge and p5en.48xlarge 8 x 3840 GB NVMe SSD; p4d.24xlarge and
  p4de.24xlarge 8 x 1000 GB; trn1.32xlarge and trn1n.32xlarge 4 x 1900 GB; g5.xlarge 1 x 250 GB;
  c6i.2xlarge and m5.large none (EBS only).
- Zones: not listed. Which zones offer a type changes; ``aws ec2 describe-instance-type-offerings
  --location-type availability-zone --filters Name=instance-type,Values=TYPE`` is the source.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class AwsInstanceType:
    """An EC2 instance type: its accelerators and how many EFA interfaces it takes."""

    name: str
    gpus: int
    gpu_type: str | None
    efa_interfaces: int
    gpudirect_rdma: bool = False
    local_nvme: int = 0
    local_nvme_gb: int = 0

    @property
    def efa(self) -> bool:
        """True when the type supports EFA at all."""
        return self.efa_interfaces > 0


_AWS: tuple[AwsInstanceType, ...] = (
    AwsInstanceType(
        "p5.48xlarge", gpus=8, gpu_type="h100", efa_interfaces=32, gpudirect_rdma=True,
        local_nvme=8, local_nvme_gb=3840,
    ),
    AwsInstanceType(
        "p5e.48xlarge", gpus=8, gpu_type="h200", efa_interfaces=32, gpudirect_rdma=True,
        local_nvme=8, local_nvme_gb=3840,
    ),
    AwsInstanceType(
        "p5en.48xlarge", gpus=8, gpu_type="h200", efa_interfaces=16, gpudirect_rdma=True,
        local_nvme=8, local_nvme_gb=3840,
    ),
    AwsInstanceType(
        "p4d.24xlarge", gpus=8, gpu_type="a100", efa_interfaces=4, gpudirect_rdma=True,
        local_nvme=8, local_nvme_gb=1000,
    ),
    AwsInstanceType(
        "p4de.24xlarge", gpus=8, gpu_type="a100", efa_interfaces=4, gpudirect_rdma=True,
        local_nvme=8, local_nvme_gb=1000,
    ),
    AwsInstanceType(
        "trn1.32xlarge", gpus=0, gpu_type=None, efa_interfaces=8, local_nvme=4, local_nvme_gb=1900
    ),
    AwsInstanceType(
        "trn1n.32xlarge", gpus=0, gpu_type=None, efa_interfaces=16, local_nvme=4,
        local_nvme_gb=1900,
    ),
    AwsInstanceType(
        "g5.xlarge", gpus=1, gpu_type="a10g", efa_interfaces=0, local_nvme=1, local_nvme_gb=250
    ),
    AwsInstanceType("c6i.2xlarge", gpus=0, gpu_type=None, efa_interfaces=0),
    AwsInstanceType("m5.large", gpus=0, gpu_type=None, efa_interfaces=0),
)  # fmt: skip


def aws_instance(instance_type: str) -> AwsInstanceType | None:
    """The catalog entry for an EC2 instance type, or None when it is not listed."""
    return next((t for t in _AWS if t.name == instance_type), None)


def aws_efa_types() -> list[str]:
    """Names of the listed EC2 types that support EFA, for error messages."""
    return [t.name for t in _AWS if t.efa]


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


#: Job environment on EFA instances (aws/aws-ofi-nccl doc/efa-env-var.md, commit
#: 2daf7d303aa139a03140aa530957d10521e4478d: "FI_PROVIDER=efa, FI_EFA_USE_DEVICE_RDMA=1"):
#: libfabric's efa provider, and device RDMA where the instance supports it (p4, p5). The one
#: place: the hand-off's task prolog (``fabric.targets.aws.handoff``) and the nccl checks' runs
#: (``fabric.verify.nccl_run``) read it.
EFA_JOB_ENV: dict[str, str] = {"FI_PROVIDER": "efa"}
EFA_DEVICE_RDMA_ENV: dict[str, str] = {"FI_EFA_USE_DEVICE_RDMA": "1"}


def efa_job_env(device_rdma: bool) -> dict[str, str]:
    """Every job's environment on an EFA instance; ``device_rdma`` where the type and the spec
    have GPUDirect RDMA (p4, p5)."""
    return EFA_JOB_ENV | (EFA_DEVICE_RDMA_ENV if device_rdma else {})


#: The target's machine lookup (shared code asks ``hook(target, "catalog", "machine")``).
machine = aws_instance

#: Fabric kind -> the environment nccl-tests runs get on it (the nccl checks, ``fabric.verify.nccl_run``).
NCCL_ENV: dict[str, dict[str, str]] = {"efa": efa_job_env(device_rdma=True)}


#: The vendor-maintained images each machine kind boots by default, resolved at ``pulumi up``
#: from their public SSM parameters (``aws ssm get-parameter --name NAME``); an explicit
#: ``aws.ami`` wins. GPU machines: AWS's Deep Learning Base OSS Nvidia Driver GPU AMI (Ubuntu
#: 22.04), which carries the NVIDIA open kernel module (the dma-buf path of GPUDirect RDMA),
#: GDRCopy, EFA and aws-ofi-nccl (DLAMI developer guide, the release notes
#: of "Deep Learning Base OSS Nvidia Driver GPU AMI (Ubuntu 22.04)": efa_version,
#: ofi_nccl_version, gdr_copy; its SSM parameter as the guide's "Query AMI ID with SSM" names it).
#: Machines without a GPU (the head node): Canonical's Ubuntu 22.04 server image, the same OS.
IMAGE_PARAMETERS: dict[str, str] = {
    "gpu": "/aws/service/deeplearning/ami/x86_64/base-oss-nvidia-driver-gpu-ubuntu-22.04/latest/ami-id",
    "cpu": "/aws/service/canonical/ubuntu/server/22.04/stable/current/amd64/hvm/ebs-gp2/ami-id",
}

#: The root volume type the DLAMI is published for (its release notes: ebs_volume_type gp3),
#: the default of ``aws.root_volume_type``.
ROOT_VOLUME_TYPE = "gp3"


def image_kind(instance_type: str) -> str:
    """``gpu`` for a catalogued type with GPUs, else ``cpu``: the key of IMAGE_PARAMETERS."""
    known = aws_instance(instance_type)
    return "gpu" if known is not None and known.gpus > 0 else "cpu"
