"""The Azure target's spec rules: one InfiniBand fabric in one scale set of one catalogued ND v5
size, run by Azure's subnet manager; the VNet's subnets; capacity; and the stack config's
``azure-native:location`` and SSH key (:func:`config_problems`).

What Azure refuses or what would silently split the fabric (sources):

- InfiniBand reaches only VMs of the same scale set or availability set, and a scale set only
  within one placement group: "In a virtual machine scale set, ensure that you limit the
  deployment to a single placement group for InfiniBand communication within the scale set ...
  set the singlePlacementGroup property to true ... the maximum scale set size that can be spun
  up with singlePlacementGroup=true is capped at 100 VMs by default ... can be increased to
  300" — Azure docs, "Set up InfiniBand", Cluster configuration options
  (https://learn.microsoft.com/azure/virtual-machines/setup-infiniband); the ND v5 size pages:
  InfiniBand connections "are automatically configured between VMs occupying the same virtual
  machine scale set" (fabric/targets/azure/catalog.py). So every compute node is in the one
  scale set (one size: a Uniform scale set has one SKU), at most ``azure.max_scale_set_size``.
- Flexible orchestration has no InfiniBand ("Infiniband Networking: Flexible No; Uniform Yes,
  single placement group only") — MicrosoftDocs/azure-docs articles/virtual-machine-scale-sets/
  virtual-machine-scale-sets-orchestration-modes.md (commit
  53f11ed00600fa34083e216934510e2136ee6431): the component uses Uniform.
- Azure configures the fabric itself (the connections "are automatically configured", the size
  pages above): its subnet manager is Azure's, so ``subnet_managers`` entries are
  ``mode: external`` and railyard starts no OpenSM.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from fabric.spec.checker import Checker, Rule
from fabric.spec.common import catalogued_compute, check_head_node, check_machine, differing
from fabric.spec.networks import overlaps
from fabric.spec.problems import Problem
from fabric.spec.storage_rules import check_storage_kinds
from fabric.targets.azure.catalog import azure_ib_sizes, azure_size

if TYPE_CHECKING:
    from fabric.spec.models import ClusterSpec

#: An Azure region's programmatic name (``eastus``, ``westeurope``, ``southcentralus``).
_LOCATION = re.compile(r"^[a-z]+[0-9]?[a-z]*[0-9]?$")
#: A resource group name: letters, digits, ``_ ( ) - .``, not ending in a period.
_RESOURCE_GROUP = re.compile(r"^[-\w().]*[-\w()]$")


def _mine(c: Checker) -> bool:
    """Whether the spec is an Azure spec whose target is known."""
    return c.spec.azure is not None and c.spec.target == "azure" and c.known("target")


def check_azure(c: Checker) -> None:
    """The location and resource group are Azure names, the admin user is the SSH user, a head
    node exists, and the capacity names its reservation only when it uses one."""
    if not _mine(c):
        return
    azure = c.spec.azure
    assert azure is not None
    if not _LOCATION.match(azure.location):
        c.add(
            "azure.location",
            f"{azure.location!r} is not an Azure region name; write it as the CLI lists it"
            " (az account list-locations -o table), e.g. eastus",
        )
    if not _RESOURCE_GROUP.match(azure.resource_group):
        c.add(
            "azure.resource_group",
            f"{azure.resource_group!r}: use letters, digits, _ ( ) - and ., not ending in a period",
        )
    if c.spec.management.ssh_user != azure.admin_user:
        c.add(
            "management.ssh_user",
            f"{c.spec.management.ssh_user!r} differs from azure.admin_user"
            f" {azure.admin_user!r}, the only login the VMs get; set them equal",
            reads=["azure.admin_user"],
        )
    mode = ["azure.capacity"]
    if azure.capacity == "reservation" and azure.capacity_reservation_group is None:
        c.add(
            "azure.capacity_reservation_group",
            "capacity: reservation needs the capacity reservation group's resource id, e.g."
            " /subscriptions/<id>/resourceGroups/<rg>/providers/Microsoft.Compute/"
            "capacityReservationGroups/<name>",
            reads=mode,
        )
    if azure.capacity != "reservation" and azure.capacity_reservation_group is not None:
        c.add(
            "azure.capacity_reservation_group",
            f"capacity is {azure.capacity}: the group is not used; set capacity: reservation"
            " or drop it (Spot VMs take no capacity reservation)",
            reads=mode,
        )
    check_head_node(c, "{names: head1, role: controller}")


def check_azure_fabric(c: Checker) -> None:
    """An InfiniBand fabric, run by Azure's subnet manager, laid out by Azure: no managed
    OpenSM or switch SM, no declared switches, tree or cables."""
    if not _mine(c) or not c.known("fabric.kind"):
        return
    fabric = c.spec.fabric
    if fabric.kind != "infiniband":
        c.add(
            "fabric.kind",
            f"{fabric.kind!r}: the ND v5 sizes' fabric is InfiniBand; set kind: infiniband",
        )
        return
    ib = fabric.infiniband
    for index, sm in enumerate(ib.subnet_managers if ib else []):
        if sm.mode != "external":
            c.add(
                f"fabric.infiniband.subnet_managers[{index}].mode",
                f"{sm.mode}: Azure runs this fabric's subnet manager, railyard none; declare"
                " it as {mode: external, node_description: ...}",
            )
    for field, what in (
        ("topology", "a fat tree"),
        ("switches", "switches"),
        ("cabling", "cables"),
    ):
        if getattr(fabric, field):
            c.add(
                f"fabric.{field}",
                f"Azure lays out and runs the InfiniBand fabric: railyard cannot know {what}"
                " of it; remove it",
            )


def check_azure_sizes(c: Checker) -> None:
    """Every compute node is one catalogued ND v5 size (one Uniform scale set has one size),
    with its GPUs and InfiniBand ports as the catalog lists them, at most
    ``azure.max_scale_set_size`` of them (one placement group); only compute nodes declare
    HCAs (the head node is outside the scale set, off the fabric)."""
    if not _mine(c):
        return
    azure = c.spec.azure
    assert azure is not None
    sizes = ", ".join(azure_ib_sizes())
    first: tuple[int, str] | None = None
    for index, known in catalogued_compute(
        c,
        azure_size,
        f"target azure needs a VM size for compute nodes, e.g. {azure_ib_sizes()[0]}",
        f"is not a known InfiniBand GPU size; use one of {sizes}",
    ):
        check_machine(c, index, known)
        if first is None:
            first = (index, known.name)
        elif known.name != first[1]:
            c.add(
                f"nodes[{index}].instance_type",
                f"{known.name} differs from nodes[{first[0]}].instance_type {first[1]}: the"
                " compute nodes share InfiniBand only inside one scale set, which has one size;"
                " use one size",
                reads=[f"nodes[{first[0]}].instance_type"],
            )
        _check_hcas(c, index, known.ib_devices, known.ib_rate_gbps)
    if not c.all_hosts_known:
        return
    compute = c.spec.hosts_with_role("compute")
    if len(compute) > azure.max_scale_set_size:
        c.add(
            "nodes",
            f"{len(compute)} compute nodes, but one scale set in a single placement group"
            f" (InfiniBand's limit) takes {azure.max_scale_set_size}: declare fewer, or ask"
            " Azure support to raise the limit (up to 300) and set azure.max_scale_set_size",
            reads=["azure.max_scale_set_size"],
        )
    for index, group in enumerate(c.spec.nodes):
        if group.role != "compute" and group.hcas:
            c.add(
                f"nodes[{index}].hcas",
                f"{group.role} nodes are outside the compute scale set, so off its InfiniBand"
                " fabric; remove their hcas",
            )


def _check_hcas(c: Checker, index: int, devices: tuple[str, ...], rate: int) -> None:
    """A compute group's declared HCAs are the size's InfiniBand devices, at its rate."""
    for hca_index, hca in enumerate(c.spec.nodes[index].hcas):
        path = f"nodes[{index}].hcas[{hca_index}]"
        if hca.device not in devices:
            c.add(
                f"{path}.device",
                f"{hca.device!r} is not one of the size's InfiniBand devices as Azure's HPC"
                f" image names them ({devices[0]} ... {devices[-1]})",
            )
        if hca.link_layer != "InfiniBand" or hca.rate_gbps != rate:
            c.add(
                f"{path}.rate_gbps",
                f"{hca.link_layer} {hca.rate_gbps} Gb/s, but the size's ports are InfiniBand"
                f" at {rate} Gb/s (NDR): set link_layer: InfiniBand, rate_gbps: {rate}",
            )


def check_azure_networks(c: Checker) -> None:
    """The subnets lie in the VNet and apart; management is the compute subnet (SSH)."""
    spec, azure = c.spec, c.spec.azure
    if azure is None or spec.target != "azure":
        return
    vnet = ["azure.vnet_cidr"]
    for field in ("subnet_cidr", "public_subnet_cidr"):
        net = getattr(azure, field)
        if not net.subnet_of(azure.vnet_cidr):
            c.add(
                f"azure.{field}",
                f"{net} is outside azure.vnet_cidr {azure.vnet_cidr}; pick a subnet of it",
                reads=vnet,
            )
    overlaps(
        c,
        [
            ("azure.subnet_cidr", "azure.subnet_cidr", azure.subnet_cidr),
            ("azure.public_subnet_cidr", "azure.public_subnet_cidr", azure.public_subnet_cidr),
        ],
    )
    if spec.management.subnet != azure.subnet_cidr:
        c.add(
            "management.subnet",
            f"{spec.management.subnet} differs from azure.subnet_cidr {azure.subnet_cidr}; on"
            " Azure the management network is the compute nodes' subnet: set them equal",
            reads=["azure.subnet_cidr"],
        )


def config_problems(config: Mapping[str, Any], spec: ClusterSpec) -> list[Problem]:
    """The provider's location (``azure-native:location``) is set and equals
    ``azure.location``; ``railyard:sshPublicKey`` is set (the VMs take SSH keys only)."""
    if spec.azure is None:
        return []
    location = spec.azure.location
    problems: list[Problem] = []
    if "azure-native:location" not in config:
        problems.append(
            Problem(
                "config azure-native:location",
                f"missing: the Azure provider needs it; set azure-native:location: {location}"
                f" (pulumi config set azure-native:location {location})",
            )
        )
    else:
        problems += differing(config, [("azure-native:location", "azure.location", location)])
    if not config.get("railyard:sshPublicKey"):
        problems.append(
            Problem(
                "config railyard:sshPublicKey",
                "missing: the VMs take SSH keys only (no password); set the public key of"
                " railyard:sshPrivateKeyFile (pulumi config set sshPublicKey 'ssh-ed25519 ...')",
            )
        )
    return problems


#: The Azure rules, in the order their problems are reported.
def check_azure_storage(c: Checker) -> None:
    """railyard creates no Azure file system yet: an existing NFS server only."""
    check_storage_kinds(c, "azure", ("nfs",))


RULES: tuple[Rule, ...] = (
    check_azure,
    check_azure_fabric,
    check_azure_sizes,
    check_azure_networks,
    check_azure_storage,
)

#: Stack config keys the spec must agree with (``config_problems``), read by the program.
CONFIG_KEYS: tuple[str, ...] = ("azure-native:location", "railyard:sshPublicKey")
