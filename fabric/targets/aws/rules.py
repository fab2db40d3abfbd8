"""The AWS target's spec rules: EFA, placement (a created or an existing group, a reservation's
group), Capacity Blocks, EC2 ids, catalogued instance types and their GPU and EFA counts, the
shared file systems AWS makes; and the stack config's ``aws:region`` (:func:`config_problems`)."""

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
        if not aws.capacity_reservation_id:  # a reservation outside any group places them
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
        group = c.spec.nodes[index]
        if aws.efa and group.hcas and len(group.hcas) != known.efa_interfaces:
            c.add(
                f"nodes[{index}].hcas",
                f"{len(group.hcas)} EFA devices declared, but {known.name} has"
                f" {known.efa_interfaces}; declare {known.efa_interfaces} or none",
                reads=[f"nodes[{index}].instance_type"],
            )


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


#: An existing placement group's id: ``pg-`` and 17 hex digits.
PG_ID = re.compile(r"pg-[0-9a-f]{17}")


def placement_group_is_existing(aws: Any) -> bool:
    """Whether ``aws.placement_group`` names a group that exists: an id, or a name marked
    ``placement_group_existing`` (ParallelCluster's ``PlacementGroup`` ``Id``/``Name``)."""
    group = aws.placement_group
    return group is not None and (aws.placement_group_existing or bool(PG_ID.fullmatch(group)))


def _group_name(group: str) -> str:
    """A placement group's name from its name or ARN (``...:placement-group/NAME``)."""
    return group.rsplit("placement-group/", 1)[-1]


def check_aws_capacity(c: Checker) -> None:
    """A reservation's instances launch into the reservation's own placement group: railyard
    reuses that group, and refuses another one (ParallelCluster's
    PlacementGroupCapacityReservationValidator warns of exactly this)."""
    aws = c.spec.aws
    if aws is None or c.spec.target != "aws" or not c.known("target"):
        return
    if aws.placement_group_existing and aws.placement_group is None:
        c.add(
            "aws.placement_group_existing",
            "true but no aws.placement_group: name the existing group, or drop it",
        )
    if aws.capacity_block or not aws.capacity_reservation_id:
        if aws.capacity_reservation_placement_group and not aws.capacity_reservation_id:
            c.add(
                "aws.capacity_reservation_placement_group",
                "set without aws.capacity_reservation_id: name the reservation, or drop it",
            )
        return
    reads = ["aws.capacity_reservation_id"]
    theirs = aws.capacity_reservation_placement_group
    ours = aws.placement_group
    if ours is not None and not placement_group_is_existing(aws):
        c.add(
            "aws.placement_group",
            f"railyard would create {ours!r}, which is not reservation"
            f" {aws.capacity_reservation_id}'s group: launches there find no reserved capacity."
            " Name the reservation's group and set placement_group_existing: true (and"
            " capacity_reservation_placement_group), or drop placement_group",
            reads=reads,
        )
        return
    if theirs is None or ours is None:
        return
    if PG_ID.fullmatch(ours):
        c.add(
            "aws.placement_group",
            f"{ours!r} is an id, the reservation's group {theirs!r} a name: write"
            f" placement_group: {_group_name(theirs)} with placement_group_existing: true",
            reads=["aws.capacity_reservation_placement_group"],
        )
    elif _group_name(ours) != _group_name(theirs):
        c.add(
            "aws.placement_group",
            f"{ours!r} is not {_group_name(theirs)!r}, the group reservation"
            f" {aws.capacity_reservation_id} sits in (aws.capacity_reservation_placement_group):"
            " instances outside it get no reserved capacity; name the same group",
            reads=["aws.capacity_reservation_placement_group", *reads],
        )


#: The shared file systems AWS creates (``storage.shared[].kind``) and their tiers: EFS
#: performance modes, FSx for Lustre deployment types (FSx API ``DeploymentType``).
AWS_STORAGE_TIERS: dict[str, tuple[str, ...]] = {
    "efs": ("GENERAL_PURPOSE", "MAX_IO"),
    "fsx_lustre": ("SCRATCH_1", "SCRATCH_2", "PERSISTENT_1", "PERSISTENT_2"),
}
#: FSx for Lustre capacity: 1200 GiB, 2400 GiB, then steps of 2400 GiB (SSD; FSx API
#: ``StorageCapacity``).
FSX_MIN_GIB, FSX_STEP_GIB = 1200, 2400


def check_aws_storage(c: Checker) -> None:
    """AWS makes EFS and FSx for Lustre (and mounts an existing nfs); each in one zone with
    the nodes, at a size and tier the service takes."""
    storage, aws = c.spec.storage, c.spec.aws
    if storage is None or aws is None or c.spec.target != "aws" or not c.known("target"):
        return
    for index, fs in enumerate(storage.shared):
        at = f"storage.shared[{index}]"
        if fs.kind in ("filestore", "managed_lustre"):
            c.add(
                f"{at}.kind",
                f"{fs.kind} is Google Cloud's; on AWS use efs or fsx_lustre (or nfs for a"
                " server that exists)",
            )
            continue
        if fs.kind not in AWS_STORAGE_TIERS:
            continue
        if aws.subnet_id is None and aws.availability_zone is None:
            c.add(
                "aws.availability_zone",
                f"{at} ({fs.kind}) is mounted through one zone's mount target: set the zone"
                f" the nodes and it share, e.g. {aws.region}a",
                reads=[f"{at}.kind"],
            )
        tiers = AWS_STORAGE_TIERS[fs.kind]
        if fs.tier is not None and fs.tier not in tiers:
            c.add(f"{at}.tier", f"{fs.tier!r} is no {fs.kind} tier; use one of {', '.join(tiers)}")
        if fs.kind == "efs" and fs.size_gib is not None:
            c.add(f"{at}.size_gib", "EFS grows as it is written and takes no size: drop size_gib")
        if fs.kind == "fsx_lustre":
            size = fs.size_gib
            if size is None or (size != FSX_MIN_GIB and size % FSX_STEP_GIB):
                c.add(
                    f"{at}.size_gib",
                    f"{size}: FSx for Lustre takes {FSX_MIN_GIB}, {FSX_STEP_GIB} or a multiple"
                    f" of {FSX_STEP_GIB} GiB, e.g. size_gib: {FSX_MIN_GIB}",
                )


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


#: The AWS rules, in the order their problems are reported.
RULES: tuple[Rule, ...] = (
    check_aws,
    check_aws_capacity,
    check_aws_ids,
    check_aws_instance_types,
    check_aws_networks,
    check_aws_bastion,
    check_aws_offline_installer,
    check_aws_storage,
)

#: Stack config keys the spec must agree with (``config_problems``), read by the program.
CONFIG_KEYS: tuple[str, ...] = ("aws:region",)
