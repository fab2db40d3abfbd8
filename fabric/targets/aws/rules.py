"""The AWS target's spec rules: EFA, placement, Capacity Blocks, EC2 ids and catalogued
instance types; and the stack config's ``aws:region`` (:func:`config_problems`)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from fabric.spec.checker import Checker, Rule
from fabric.spec.common import catalogued_compute, check_head_node, check_machine, differing
from fabric.spec.constants import AWS_REGION_PATTERN
from fabric.spec.problems import Problem
from fabric.targets.aws.catalog import aws_efa_types, aws_instance

if TYPE_CHECKING:
    from fabric.spec.models import ClusterSpec


def check_aws(c: Checker) -> None:
    """EFA is on for the efa kind, GPUDirect RDMA runs over it, in a cluster placement group;
    a Capacity Block names its reservation, a given subnet its VPC; a head node exists."""
    aws = c.spec.aws
    if aws is None or c.spec.target != "aws" or not c.known("target"):
        return
    if not AWS_REGION_PATTERN.match(aws.region):
        c.add("aws.region", f"{aws.region!r} is not an AWS region name; write e.g. us-east-2")
    elif aws.availability_zone is not None and not re.fullmatch(
        re.escape(aws.region) + "[a-z]", aws.availability_zone
    ):
        c.add(
            "aws.availability_zone",
            f"{aws.availability_zone!r} is not a zone of region {aws.region}; write the region"
            f" and a letter, e.g. {aws.region}a, or fix aws.region",
            reads=["aws.region"],
        )
    if c.spec.fabric.kind == "efa" and not aws.efa:
        c.add("aws.efa", "fabric kind efa needs aws.efa: true", reads=["fabric.kind"])
    efa = ["aws.efa"]
    if aws.gpudirect_rdma and not aws.efa:
        c.add(
            "aws.gpudirect_rdma",
            "GPUDirect RDMA runs over EFA; set aws.efa: true or gpudirect_rdma: false",
            reads=efa,
        )
    if aws.efa and aws.placement_strategy != "cluster":
        c.add(
            "aws.placement_strategy",
            f"{aws.placement_strategy!r}: EFA clusters need placement_strategy: cluster",
            reads=efa,
        )
    if aws.capacity_block and aws.placement_group is not None:
        c.add(
            "aws.placement_group",
            "a Capacity Block places its instances itself; a placement group on top leads to"
            " insufficient-capacity errors (ParallelCluster's PlacementGroupCapacityTypeValidator):"
            " drop placement_group",
            reads=["aws.capacity_block"],
        )
    if aws.efa and aws.placement_group is None and not aws.capacity_block:
        c.add(
            "aws.placement_group",
            "EFA clusters need a cluster placement group name, e.g. railyard-pg",
            reads=efa,
        )
    if aws.efa_installer_url and not aws.efa_installer_checksum:
        c.add(
            "aws.efa_installer_checksum",
            "required with aws.efa_installer_url: write sha256:<hex> of the tarball "
            "(sha256sum aws-efa-installer-*.tar.gz)",
            reads=["aws.efa_installer_url"],
        )
    if aws.capacity_block and not aws.capacity_reservation_id:
        c.add(
            "aws.capacity_reservation_id",
            "capacity_block: true launches into a purchased Capacity Block; set its id, "
            "e.g. cr-0123456789abcdef0",
            reads=["aws.capacity_block"],
        )
    if aws.subnet_id and not aws.vpc_id:
        c.add(
            "aws.vpc_id",
            "subnet_id is set: also set the vpc_id it belongs to",
            reads=["aws.subnet_id"],
        )
    check_head_node(c, "{names: head1, role: login}")


#: EC2 resource ids: ``ami-`` and friends, then 8 or 17 hex digits.
_AWS_IDS = {
    "ami": ("ami", "ami-0123456789abcdef0"),
    "vpc_id": ("vpc", "vpc-0123456789abcdef0"),
    "subnet_id": ("subnet", "subnet-0123456789abcdef0"),
    "capacity_reservation_id": ("cr", "cr-0123456789abcdef0"),
}


def check_aws_ids(c: Checker) -> None:
    """The AMI, VPC, subnet and capacity reservation are EC2 ids (EC2 refuses anything else)."""
    aws = c.spec.aws
    if aws is None or c.spec.target != "aws" or not c.known("target"):
        return
    for name, (prefix, example) in _AWS_IDS.items():
        value = getattr(aws, name)
        if value is not None and not re.fullmatch(
            rf"{prefix}-([0-9a-f]{{8}}|[0-9a-f]{{17}})", value
        ):
            c.add(f"aws.{name}", f"{value!r} is not an EC2 {prefix} id, e.g. {example}")


def check_aws_instance_types(c: Checker) -> None:
    """Compute nodes on AWS name a catalogued (EFA, with EFA on) type and its GPU count."""
    aws = c.spec.aws
    if aws is None or c.spec.target != "aws" or not c.known("target"):
        return
    efa_types = ", ".join(aws_efa_types())
    for index, known in catalogued_compute(
        c,
        aws_instance,
        "target aws needs an instance type for compute nodes, e.g. p5.48xlarge",
        f"is not a known EFA instance type; use one of {efa_types}" if aws.efa else None,
        ["aws.efa"],
    ):
        if aws.efa and not known.efa:
            c.add(
                f"nodes[{index}].instance_type",
                f"{known.name} has no EFA; use one of {efa_types}",
                reads=["aws.efa"],
            )
        check_machine(c, index, known)


def config_problems(config: Mapping[str, Any], spec: ClusterSpec) -> list[Problem]:
    """The AWS provider's region (``aws:region``, which the instances use) is set and equals
    ``aws.region``."""
    if spec.aws is None:
        return []
    region = spec.aws.region
    if "aws:region" not in config:
        return [
            Problem(
                "config aws:region",
                f"missing: the AWS provider needs it; set aws:region: {region}"
                f" (pulumi config set aws:region {region})",
            )
        ]
    return differing(config, [("aws:region", "aws.region", region)])


#: The AWS rules, in the order their problems are reported.
def check_aws_networks(c: Checker) -> None:
    """The subnets lie in the VPC, the head node's public subnet apart from the compute nodes'
    private one; management is the instances' subnet, which carries SSH."""
    spec, aws = c.spec, c.spec.aws
    if aws is None or spec.target != "aws" or aws.vpc_id is not None:
        return
    vpc = ["aws.vpc_cidr"]
    if not aws.subnet_cidr.subnet_of(aws.vpc_cidr):
        c.add(
            "aws.subnet_cidr",
            f"{aws.subnet_cidr} is outside aws.vpc_cidr {aws.vpc_cidr}; pick a subnet of it",
            reads=vpc,
        )
    public = aws.public_subnet_cidr
    if not public.subnet_of(aws.vpc_cidr):
        c.add(
            "aws.public_subnet_cidr",
            f"{public} is outside aws.vpc_cidr {aws.vpc_cidr}; pick a subnet of it",
            reads=vpc,
        )
    elif public.overlaps(aws.subnet_cidr):
        c.add(
            "aws.public_subnet_cidr",
            f"{public} overlaps aws.subnet_cidr {aws.subnet_cidr}; the head node's public"
            " subnet and the compute nodes' private one are apart",
            reads=["aws.subnet_cidr"],
        )
    if not spec.management.subnet.subnet_of(aws.vpc_cidr):
        c.add(
            "management.subnet",
            f"{spec.management.subnet} is outside aws.vpc_cidr {aws.vpc_cidr}; on AWS the"
            " management network is the instances' subnet, e.g. aws.subnet_cidr",
            reads=vpc,
        )


def check_aws_bastion(c: Checker) -> None:
    """A bastion named as a node of an existing VPC gets no public address from railyard."""
    bastion, aws = c.spec.access.bastion, c.spec.aws
    if bastion is None or aws is None or c.spec.target != "aws" or not aws.vpc_id:
        return
    group = c.spec.hosts.get(bastion.host) if c.all_hosts_known else None
    if group is None or group.role == "compute" or not c.known("target"):
        return
    c.add(
        "access.bastion.host",
        f"{bastion.host} gets no public address in an existing VPC (aws.vpc_id); name a"
        " bastion address the controller reaches",
        reads=["aws.vpc_id"],
    )


def check_aws_offline_installer(c: Checker) -> None:
    """With egress mode offline the nodes reach no installer URL: EFA comes with the AMI."""
    aws = c.spec.aws
    if aws is None or c.spec.target != "aws" or aws.egress.mode != "offline":
        return
    if aws.efa_installer_url and c.all_hosts_known:
        c.add(
            "aws.efa_installer_url",
            "egress mode offline reaches no installer URL; bake EFA into the AMI and drop it",
            reads=["aws.egress.mode"],
        )


RULES: tuple[Rule, ...] = (
    check_aws,
    check_aws_ids,
    check_aws_instance_types,
    check_aws_networks,
    check_aws_bastion,
    check_aws_offline_installer,
)

#: Stack config keys the spec must agree with (``config_problems``), read by the program.
CONFIG_KEYS: tuple[str, ...] = ("aws:region",)
