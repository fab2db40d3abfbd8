"""The ``aws:`` section of a spec (spec layer): the settings only target aws has.
``fabric.spec.models`` adds it to ClusterSpec as the optional field ``aws`` (``MODEL``)."""

from __future__ import annotations

import ipaddress
from typing import Any, Literal

from pydantic import Field

from fabric.spec.blocks import EgressSpec, Model
from fabric.targets.aws.catalog import ROOT_VOLUME_TYPE

__all__ = ["DEFAULT_IAM_POLICIES", "MODEL", "AwsSpec"]

#: The nodes' role's managed policies by default: the SSM agent the DLAMI ships (its release
#: notes' ssm_agent_version) registers the node for Session Manager, a way in when SSH is down.
#: The nodes call no AWS API for railyard; ``iam_policies: []`` leaves the role bare.
DEFAULT_IAM_POLICIES = ("arn:aws:iam::aws:policy/AmazonSSMManagedInstanceCore",)


class AwsSpec(Model):
    """AWS target: EFA instances in a cluster placement group."""

    region: str
    availability_zone: str | None = None
    vpc_id: str | None = Field(default=None, description="existing VPC; a new one if unset")
    vpc_cidr: ipaddress.IPv4Network = ipaddress.IPv4Network("10.0.0.0/16")
    subnet_id: str | None = None
    subnet_cidr: ipaddress.IPv4Network = ipaddress.IPv4Network("10.0.0.0/20")
    placement_group: str | None = Field(
        default=None,
        description="cluster placement group: a name railyard creates, or an existing group's "
        "id (pg-...) or, with placement_group_existing, its name (reused, none created)",
    )
    placement_group_existing: bool = Field(
        default=False,
        description="placement_group names a group that exists (e.g. a reservation's); no new one",
    )
    placement_strategy: Literal["cluster", "spread", "partition"] = "cluster"
    ami: str | None = Field(
        default=None,
        description="an AMI id for every node; unset: each machine kind's vendor image, "
        "resolved from its public SSM parameter at pulumi up (catalog IMAGE_PARAMETERS)",
    )
    root_volume_gib: int = Field(
        default=200, strict=True, ge=8, le=16384, description="each node's root EBS volume"
    )
    root_volume_type: Literal["gp3", "gp2", "io1", "io2"] = Field(
        default=ROOT_VOLUME_TYPE,
        description="the root volume's EBS type (one an instance boots from: not st1, sc1); "
        "the DLAMI is published for gp3",
    )
    instance_profile: str | None = Field(
        default=None,
        pattern=r"^[\w+=,.@-]{1,128}$",
        description="an existing IAM instance profile's name; unset: railyard creates a role "
        "and profile with iam_policies",
    )
    iam_policies: list[str] = Field(
        default_factory=lambda: list(DEFAULT_IAM_POLICIES),
        description="managed policy ARNs on the nodes' role (default: SSM core, for Session "
        "Manager); add CloudWatchAgentServerPolicy when you run the CloudWatch agent",
    )
    key_name: str
    efa: bool = True
    gpudirect_rdma: bool = True
    efa_installer_url: str | None = Field(
        default=None,
        pattern=r"^https?://\S+$",
        description="aws-efa-installer tarball on your mirror; unset: the AMI must carry EFA",
    )
    efa_installer_version: str | None = Field(
        default=None,
        pattern=r"^\d+\.\d+\.\d+$",
        description="that tarball's version, e.g. 1.38.0; another installed version is replaced",
    )
    efa_installer_checksum: str | None = Field(
        default=None,
        pattern=r"^sha256:[0-9a-fA-F]{64}$",
        description="sha256:<hex> of the tarball; required with efa_installer_url",
    )
    ofi_nccl_version: str | None = Field(
        default=None,
        pattern=r"^\d+\.\d+\.\d+$",
        description="the aws-ofi-nccl release the installer or AMI carries, e.g. 1.13.2: NCCL "
        "must load that plugin (its log's NET/OFI Initializing aws-ofi-nccl line, nccl checks)",
    )
    capacity_reservation_id: str | None = None
    capacity_reservation_placement_group: str | None = Field(
        default=None,
        description="the cluster placement group the reservation sits in, as EC2 describes it "
        "(its name, or the ARN's name part): placement_group must name the same group",
    )
    capacity_block: bool = False
    head_instance_type: str = "c6i.2xlarge"
    public_subnet_cidr: ipaddress.IPv4Network = Field(
        default=ipaddress.IPv4Network("10.0.16.0/24"),
        description="the head node's public subnet (egress nat: the NAT gateway's too)",
    )
    egress: EgressSpec = Field(default_factory=EgressSpec)


MODEL = AwsSpec
#: The one fabric kind target aws supports, and which only it has.
FABRIC_KIND = "efa"
#: The largest MTU an AWS VPC carries (bytes): jumbo frames.
MAX_MTU = 9001

#: What an AWS node may need from an offline image besides the shared needs.
NEEDS: dict[str, str] = {
    "efa": "the EFA software: aws-efa-installer's kernel module, libfabric and aws-ofi-nccl",
}


def image_needs(spec: Any, group: Any) -> list[str]:
    """What a compute group downloads during the hand-off on AWS: EFA, when declared."""
    del group
    return ["efa"] if spec.aws is not None and spec.aws.efa else []
