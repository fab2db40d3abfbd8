"""The AWS target's spec rules: EFA, placement, Capacity Blocks, EC2 ids and catalogued
instance types; and the stack config's ``aws:region`` (:func:`config_problems`)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from fabric.spec.checker import Checker, Rule
from fabric.spec.common import ROLES_READ as _ROLES
from fabric.spec.common import check_gpu_type, differing
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
    if not any(group.role != "compute" for group in c.spec.nodes) and c.known(_ROLES):
        c.add(
            "nodes",
            "declare a head node, e.g. - {names: head1, role: login}; the compute "
            "nodes have no public address",
        )


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
    for index, group in enumerate(c.spec.nodes):
        path = f"nodes[{index}]"
        if group.role != "compute" or not c.known(f"{path}.role"):
            continue
        if group.instance_type is None:
            c.add(
                f"{path}.instance_type",
                "target aws needs an instance type for compute nodes, e.g. p5.48xlarge",
            )
            continue
        known = aws_instance(group.instance_type)
        if known is None:
            if aws.efa:
                c.add(
                    f"{path}.instance_type",
                    f"{group.instance_type!r} is not a known EFA instance type; use one of"
                    f" {', '.join(aws_efa_types())}",
                    reads=["aws.efa"],
                )
            continue
        if aws.efa and not known.efa:
            c.add(
                f"{path}.instance_type",
                f"{known.name} has no EFA; use one of {', '.join(aws_efa_types())}",
                reads=["aws.efa"],
            )
        if group.gpus and group.gpus != known.gpus:
            c.add(
                f"{path}.gpus",
                f"{group.gpus} GPUs, but {known.name} has {known.gpus}",
                reads=[f"{path}.instance_type"],
            )
        check_gpu_type(c, index, known.name, known.gpu_type)


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
RULES: tuple[Rule, ...] = (check_aws, check_aws_ids, check_aws_instance_types)
