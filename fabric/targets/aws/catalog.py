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

    @property
    def efa(self) -> bool:
        """True when the type supports EFA at all."""
        return self.efa_interfaces > 0


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
