"""The ``azure:`` section of a spec (spec layer): the settings only target azure has.
``fabric.spec.models`` adds it to ClusterSpec as the optional field ``azure`` (``MODEL``).

No ``FABRIC_KIND``: Azure's ND v5 fabric is InfiniBand, the kind every InfiniBand target shares
(the rules require it). No ``MAX_MTU``: the fabric's MTU is an InfiniBand MTU, which the shared
rules judge; the VNet's Ethernet MTU is not the fabric's.
"""

from __future__ import annotations

import ipaddress
from typing import Any, Literal

from pydantic import Field

from fabric.spec.blocks import EgressSpec, Model

__all__ = ["MODEL", "AzureImage", "AzureSpec"]


class AzureImage(Model):
    """A marketplace image reference (``publisher:offer:sku:version``)."""

    publisher: str = "microsoft-dsvm"
    offer: str = "ubuntu-hpc"
    sku: str = "2204"
    version: str = "latest"


class AzureSpec(Model):
    """Azure target: ND H100 v5 / ND H200 v5 in one scale set (one InfiniBand fabric)."""

    location: str = Field(description="Azure region, e.g. eastus; equals azure-native:location")
    resource_group: str = Field(
        min_length=1, max_length=90, description="the resource group railyard creates"
    )
    vnet_cidr: ipaddress.IPv4Network = ipaddress.IPv4Network("10.0.0.0/16")
    subnet_cidr: ipaddress.IPv4Network = Field(
        default=ipaddress.IPv4Network("10.0.0.0/20"),
        description="the compute nodes' private subnet (the management network)",
    )
    public_subnet_cidr: ipaddress.IPv4Network = Field(
        default=ipaddress.IPv4Network("10.0.16.0/24"),
        description="the head node's subnet (it gets a public address)",
    )
    image: AzureImage = Field(
        default_factory=AzureImage,
        description="boot image; default Azure's Ubuntu-HPC 22.04 (microsoft-dsvm:ubuntu-hpc:"
        "2204:latest): the NVIDIA driver, DOCA/MOFED, NCCL and the ND v5 topology file",
    )
    admin_user: str = Field(
        default="azureuser",
        pattern=r"^[a-z_][a-z0-9_-]{0,31}$",
        description="the VMs' admin login (set management.ssh_user to it)",
    )
    head_vm_size: str = Field(
        default="Standard_D8s_v5", description="head node size when its group names none"
    )
    capacity: Literal["standard", "spot", "reservation"] = Field(
        default="standard",
        description="compute capacity: on demand, Spot, or a capacity reservation group",
    )
    capacity_reservation_group: str | None = Field(
        default=None,
        pattern=r"^/subscriptions/[^/]+/resourceGroups/[^/]+/providers/"
        r"Microsoft\.Compute/capacityReservationGroups/[^/]+$",
        description="the capacity reservation group's resource id (capacity: reservation)",
    )
    max_scale_set_size: int = Field(
        default=100,
        ge=1,
        le=300,
        description="VMs one single-placement-group scale set takes: 100, or what Azure "
        "support raised it to (at most 300)",
    )
    egress: EgressSpec = Field(default_factory=EgressSpec)

    @property
    def region(self) -> str:
        """The location, under the name the shared steps read a cloud's region by (the hand-off
        renders Slurm's topology from the provider's placement where a section has one)."""
        return self.location


MODEL = AzureSpec

#: What an Azure node may need from an offline image besides the shared needs: nothing. The
#: Ubuntu-HPC image carries the InfiniBand stack (DOCA/MOFED), NCCL, nvidia-peermem and the ND
#: v5 topology file; the hand-off installs none of them (Azure/azhpc-images
#: ubuntu/ubuntu-22.x/ubuntu-22.04-hpc/install.sh).
NEEDS: dict[str, str] = {}


def image_needs(spec: Any, group: Any) -> list[str]:
    """What a compute group downloads during the hand-off on Azure beyond the shared needs
    (munge, slurmd, the NVIDIA driver): nothing."""
    del spec, group
    return []
