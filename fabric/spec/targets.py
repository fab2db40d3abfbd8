"""The target rules: what each target (lab, baremetal, aws, gcp) needs of a spec.

These run with the general rules (fabric.spec.rules) in ClusterSpec's validator, so
``python -m fabric validate`` refuses what ``pulumi up`` would refuse: cloud machine
types and placement, head nodes, bare-metal BMC endpoints and fixed addresses. The
components run them again (fabric.spec.rules.provision_problems) before creating
anything. Stack config that is not part of the spec (the bare-metal boot targets) is
checked by :func:`baremetal_settings_problems`, which the bare-metal component calls.
"""

from __future__ import annotations

from typing import Protocol

from fabric.catalog import aws_efa_types, aws_instance, gcp_gpu_machine_types, gcp_machine
from fabric.spec.checker import Checker, Rule
from fabric.spec.constants import BOOT_TARGETS
from fabric.spec.problems import Problem

__all__ = [
    "TARGET_RULES",
    "BootSettings",
    "baremetal_settings_problems",
    "check_aws",
    "check_aws_instance_types",
    "check_baremetal",
    "check_gcp",
    "check_lab",
]

#: Where a node group's role is read.
_ROLES = "nodes[*].role"


# --- lab -----------------------------------------------------------------------------------


def check_lab(c: Checker) -> None:
    """The lab's Redfish emulator and ibsim listen on different ports."""
    lab = c.spec.lab
    if lab is not None and lab.bmc_port == lab.ibsim_port:
        c.add(
            "lab.ibsim_port",
            f"{lab.ibsim_port} is also lab.bmc_port; use two different ports",
            reads=["lab.bmc_port"],
        )


# --- bare metal ----------------------------------------------------------------------------


def check_baremetal(c: Checker) -> None:
    """Every bare-metal node has a Redfish endpoint and a fixed address; the BMC password is a
    Pulumi secret, sent over https unless verify_tls is off; managed switches have addresses."""
    spec = c.spec
    if spec.target != "baremetal" or not c.known("target"):
        return
    bmc = spec.bmc
    if bmc is None:
        c.add("bmc", "target baremetal needs a bmc block with endpoints")
    else:
        if bmc.password is None:
            c.add(
                "bmc.password",
                "set {config: bmcPassword} and `pulumi config set --secret bmcPassword ...`",
            )
        for host in c.hosts:
            if host not in bmc.endpoints:
                c.add(f"bmc.endpoints.{host}", "every node needs a Redfish endpoint url")
            if host not in spec.management.addresses:
                c.add(f"management.addresses.{host}", "every bare-metal node needs a fixed address")
        for host, endpoint in bmc.endpoints.items():
            if endpoint.url.startswith("http://") and bmc.verify_tls:
                c.add(
                    f"bmc.endpoints.{host}.url",
                    "plain http sends the BMC password unencrypted; use https://, or set "
                    "bmc.verify_tls: false to accept it knowingly (lab BMCs)",
                    reads=["bmc.verify_tls"],
                )
    for index, switch in enumerate(spec.fabric.switches):
        if switch.os != "unmanaged" and not switch.address:
            c.add(
                f"fabric.switches[{index}].address",
                f"{switch.os} switch {switch.name!r} needs a management address",
                reads=[f"fabric.switches[{index}].os", f"fabric.switches[{index}].name"],
            )


class BootSettings(Protocol):
    """The bare-metal provisioning settings read from stack config, not from the spec
    (fabric.components.baremetal.BareMetalSettings)."""

    @property
    def boot_target(self) -> str: ...

    @property
    def settle_target(self) -> str: ...


def baremetal_settings_problems(settings: BootSettings) -> list[Problem]:
    """Problems of the bare-metal stack config: boot targets Redfish does not know."""
    problems = []
    for key, value in (
        ("bootTarget", settings.boot_target),
        ("settleBootTarget", settings.settle_target),
    ):
        if value not in BOOT_TARGETS:
            problems.append(
                Problem(
                    f"config railyard:{key}", f"{value!r}; use one of {', '.join(BOOT_TARGETS)}"
                )
            )
    return problems


# --- clouds --------------------------------------------------------------------------------


def check_aws(c: Checker) -> None:
    """EFA is on for the efa kind, GPUDirect RDMA runs over it, in a cluster placement group;
    a Capacity Block names its reservation, a given subnet its VPC; a head node exists."""
    aws = c.spec.aws
    if aws is None or c.spec.target != "aws" or not c.known("target"):
        return
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
    if aws.efa and aws.placement_group is None:
        c.add(
            "aws.placement_group",
            "EFA clusters need a cluster placement group name, e.g. railyard-pg",
            reads=efa,
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
                    f"{group.instance_type!r} is not in fabric/catalog.py; EFA types known:"
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


def check_gcp(c: Checker) -> None:
    """Compute nodes use a known A3 machine type whose GPU NICs match the GPU subnets; head
    nodes name a machine type, and there is one; the zone is in the region."""
    gcp = c.spec.gcp
    if gcp is None or c.spec.target != "gcp" or not c.known("target"):
        return
    if not gcp.zone.startswith(gcp.region + "-"):
        c.add("gcp.zone", f"{gcp.zone!r} is not in region {gcp.region!r}", reads=["gcp.region"])
    if gcp.gpu_nic_mtu != c.spec.fabric.mtu:
        c.add(
            "gcp.gpu_nic_mtu",
            f"{gcp.gpu_nic_mtu} differs from fabric.mtu {c.spec.fabric.mtu}; set them equal",
            reads=["fabric.mtu"],
        )
    subnets_reported = False
    for index, group in enumerate(c.spec.nodes):
        path = f"nodes[{index}]"
        if group.role != "compute" or not c.known(f"{path}.role"):
            continue
        known = gcp_machine(group.instance_type) if group.instance_type else None
        if known is None:
            c.add(
                f"{path}.instance_type",
                f"{group.instance_type!r} is not a known GPU machine type; use one of"
                f" {', '.join(gcp_gpu_machine_types())}",
            )
            continue
        machine = [f"{path}.instance_type"]
        if group.gpus and group.gpus != known.gpus:
            c.add(
                f"{path}.gpus",
                f"{group.gpus} GPUs, but {known.name} has {known.gpus}",
                reads=machine,
            )
        subnets = len(gcp.gpu_subnet_cidrs)
        if subnets and subnets != known.gpu_nics and not subnets_reported:
            c.add(
                "gcp.gpu_subnet_cidrs",
                f"{subnets} subnets, but {known.name} has {known.gpu_nics} GPU NICs; list one each",
                reads=machine,
            )
            subnets_reported = True
    for index, group in enumerate(c.spec.nodes):
        path = f"nodes[{index}]"
        if group.role != "compute" and not group.instance_type and c.known(f"{path}.role"):
            c.add(f"{path}.instance_type", "set a machine type, e.g. n2-standard-8")
    if not any(group.role != "compute" for group in c.spec.nodes) and c.known(_ROLES):
        c.add(
            "nodes",
            "declare a head node, e.g. - {names: head1, role: login, "
            "instance_type: n2-standard-8}; compute nodes have no external address",
        )


#: The target rules, in the order their problems are reported (after the general rules).
TARGET_RULES: tuple[Rule, ...] = (
    check_lab,
    check_baremetal,
    check_aws,
    check_aws_instance_types,
    check_gcp,
)
