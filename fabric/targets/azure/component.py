"""Azure target: ND H100 v5 / ND H200 v5 GPU nodes in one scale set, plus a head node.

Children: a resource group; a VNet with a public subnet (the head node) and a private compute
subnet whose egress, with ``egress.mode: nat``, is a NAT gateway (Standard public IP); a network
security group opening SSH to the head node from ``sshIngressCidr``; the head node(s) (a VM
each, a NIC with a public IP, cloud-init giving the declared host name, which slurm.conf's
SlurmctldHost needs); and the compute nodes in ONE Uniform scale set with
``singlePlacementGroup: true`` (InfiniBand reaches only VMs of one scale set, and there only
inside one placement group: fabric/targets/azure/rules.py cites Azure's docs), overprovisioning
off (no extra VMs join the fabric), fault domain count 1, accelerated networking on its Ethernet
NIC, Spot or a capacity reservation group as declared, Azure's Ubuntu-HPC image by default.
Which instance is which declared compute node, its address and its computer name are read
after creation (:mod:`fabric.targets.azure.dynamic_members`). Host keys are made by railyard
and pinned before the first connection (:mod:`fabric.targets.azure.dynamic_hostkeys`): the
head node's own, one shared by the scale set's instances (one customData boots them all).
Outputs: every target's (``TargetCluster``; no switches, no BMCs).

Host names: the head node gets its declared name at boot (cloud-init), which slurmctld needs
(SlurmctldHost). A Uniform scale set boots every instance with one cloud-config, and which
instance is which declared node is known only after Azure created them, so the compute nodes
keep the computer names Azure gives them, ``{computerNamePrefix}{instance id in base 36, six
digits}`` (``ndv5-000000``...); each host's ``computer_name`` is in the ``hosts`` output.
Slurm needs no more: nodes are named as declared (``NodeName=gpu01``, ``NodeAddr`` = the private
address, ``slurmd -N gpu01``) and every node resolves the declared names (/etc/hosts, the
cluster_hosts role), as on every target.
"""

from __future__ import annotations

import base64
from typing import Any

import pulumi
import pulumi_azure_native as azure_native
import yaml

from fabric.components.cloud import CloudCluster
from fabric.components.cloudinit import boot_cloud_config
from fabric.spec import ClusterSpec, EgressSpec, NodeGroup
from fabric.targets.azure.dynamic_hostkeys import HostKeyPair, ssh_keys_config
from fabric.targets.azure.dynamic_members import ScaleSetMembers
from fabric.targets.azure.section import AzureSpec

network = azure_native.network
compute = azure_native.compute

#: Tag keys railyard sets on everything it creates.
TAG_CLUSTER = "railyard-cluster"
TAG_ROLE = "railyard-role"


def _b64(text: str) -> str:
    """customData is base64 (Azure's API)."""
    return base64.b64encode(text.encode()).decode()


def scale_set_cloud_config(egress: EgressSpec) -> str:
    """The cloud-config every scale set instance boots with: the site proxy of ``egress.mode:
    proxy`` (as :func:`boot_cloud_config` writes it), and no host name (one config serves
    every instance)."""
    data = yaml.safe_load(boot_cloud_config("instance", egress).split("\n", 1)[1])
    kept = {k: v for k, v in data.items() if k in ("apt", "write_files")}
    return "#cloud-config\n" + (yaml.safe_dump(kept, sort_keys=False) if kept else "{}\n")


def with_host_key(cloud_config: str, pair: HostKeyPair) -> pulumi.Output[str]:
    """``cloud_config`` with the host key of ``pair`` (cloud-init ``ssh_keys``), base64 as
    customData takes it; a secret, as the private key is."""
    data = yaml.safe_load(cloud_config.split("\n", 1)[1]) or {}

    def render(keys: list[str]) -> str:
        merged = {**data, **ssh_keys_config(keys[0], keys[1])}
        return _b64("#cloud-config\n" + yaml.safe_dump(merged, sort_keys=False))

    return pulumi.Output.secret(pulumi.Output.all(pair.private_key, pair.public_key).apply(render))


def declared_key(pair: HostKeyPair) -> pulumi.Output[dict[str, Any]]:
    """The host-key source that pins ``pair``'s public key (``fabric.components.access``)."""
    return pair.public_key.apply(lambda key: {"declared": True, "keys": [key]})


def image_reference(settings: AzureSpec) -> compute.ImageReferenceArgs:
    """The marketplace image (default: microsoft-dsvm:ubuntu-hpc:2204:latest)."""
    image = settings.image
    return compute.ImageReferenceArgs(
        publisher=image.publisher, offer=image.offer, sku=image.sku, version=image.version
    )


def linux_configuration(settings: AzureSpec, key: str) -> compute.LinuxConfigurationArgs:
    """SSH keys only: the stack's ``sshPublicKey`` for the admin user."""
    return compute.LinuxConfigurationArgs(
        disable_password_authentication=True,
        ssh=compute.SshConfigurationArgs(
            public_keys=[
                compute.SshPublicKeyArgs(
                    path=f"/home/{settings.admin_user}/.ssh/authorized_keys", key_data=key
                )
            ]
        ),
    )


def compute_name_prefix(spec: ClusterSpec) -> str:
    """The scale set's computer name prefix: the cluster's name and a hyphen, at most 15
    characters (Azure's REST reference: "Computer name prefixes must be 1 to 15 characters
    long")."""
    return f"{spec.name[:14]}-"


class AzureCluster(CloudCluster):
    """An ND v5 InfiniBand cluster on Azure, described by a railyard cluster spec."""

    hosts: pulumi.Output[dict[str, Any]]

    def __init__(
        self, name: str, spec: ClusterSpec, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("azure", name, spec, opts)
        assert spec.azure is not None  # checked by CloudCluster
        self._azure = spec.azure
        self._tags = {TAG_CLUSTER: spec.name}
        self._key = self._config.get("sshPublicKey") or ""

        group = azure_native.resources.ResourceGroup(
            f"{name}-rg",
            resource_group_name=self._azure.resource_group,
            location=self._azure.location,
            tags=self._tags,
            opts=self._child,
        )
        self._rg = group.name
        compute_subnet, public_subnet = self._network()
        head_nsg = self._head_nsg(self._config.get("sshIngressCidr"))

        private: dict[str, pulumi.Input[str]] = {}
        public: dict[str, pulumi.Input[str | None]] = {}
        facts: dict[str, pulumi.Input[dict[str, Any]]] = {}
        sources: dict[str, pulumi.Input[dict[str, Any]] | None] = {}
        for group_spec in spec.nodes:
            if group_spec.role == "compute":
                continue
            for host in group_spec.hosts:
                pair = HostKeyPair(f"{name}-{host}-hostkey", opts=self._child)
                sources[host] = declared_key(pair)
                nic, address = self._head(host, group_spec, public_subnet, head_nsg, pair)
                private[host] = nic.ip_configurations.apply(_private_address)
                public[host] = address.ip_address
                facts[host] = pulumi.Output.all(
                    private_ip=private[host], public_ip=address.ip_address
                ).apply(
                    lambda o, g=group_spec: {
                        "role": g.role,
                        "vm_size": g.instance_type or self._azure.head_vm_size,
                        **o,
                    }
                )

        compute_key = HostKeyPair(f"{name}-compute-hostkey", opts=self._child)
        members = self._scale_set(spec, compute_subnet, compute_key)
        for group_spec in spec.nodes:
            if group_spec.role != "compute":
                continue
            for host in group_spec.hosts:
                member = members.members.apply(lambda m, h=host: (m or {})[h])
                private[host] = member.apply(lambda m: m["private_ip"])
                public[host] = None
                sources[host] = declared_key(compute_key)
                facts[host] = member.apply(
                    lambda m, g=group_spec: {
                        "role": g.role,
                        "vm_size": g.instance_type,
                        "scale_set": self._scale_set_name,
                        "instance_id": m["instance_id"],
                        "computer_name": m["computer_name"],
                        "private_ip": m["private_ip"],
                        "public_ip": None,
                    }
                )

        inventory = self._inventory(private=private, public=public, sources=sources)
        self.export(spec, inventory=inventory, hosts=pulumi.Output.all(**facts))

    def _network(self) -> tuple[network.Subnet, network.Subnet]:
        """The VNet, its private compute subnet (behind a NAT gateway with ``egress.mode:
        nat``) and the head node's public subnet."""
        settings = self._azure
        vnet = network.VirtualNetwork(
            f"{self._name}-vnet",
            resource_group_name=self._rg,
            location=settings.location,
            address_space=network.AddressSpaceArgs(address_prefixes=[str(settings.vnet_cidr)]),
            tags=self._tags,
            opts=self._child,
        )
        nat = None
        if settings.egress.mode == "nat":
            address = self._public_ip(f"{self._name}-nat-ip")
            nat = network.NatGateway(
                f"{self._name}-nat",
                resource_group_name=self._rg,
                location=settings.location,
                sku=network.NatGatewaySkuArgs(name="Standard"),
                public_ip_addresses=[network.SubResourceArgs(id=address.id)],
                tags=self._tags,
                opts=self._child,
            )
        compute_subnet = network.Subnet(
            f"{self._name}-subnet",
            resource_group_name=self._rg,
            virtual_network_name=vnet.name,
            address_prefix=str(settings.subnet_cidr),
            nat_gateway=network.SubResourceArgs(id=nat.id) if nat is not None else None,
            opts=self._child,
        )
        public_subnet = network.Subnet(
            f"{self._name}-public-subnet",
            resource_group_name=self._rg,
            virtual_network_name=vnet.name,
            address_prefix=str(settings.public_subnet_cidr),
            # one after the other: a precaution against two concurrent changes to one VNet
            opts=pulumi.ResourceOptions(parent=self, depends_on=[compute_subnet]),
        )
        return compute_subnet, public_subnet

    def _public_ip(self, name: str) -> network.PublicIPAddress:
        """A static Standard-SKU public address (the NAT gateway's, a head node's)."""
        return network.PublicIPAddress(
            name,
            resource_group_name=self._rg,
            location=self._azure.location,
            sku=network.PublicIPAddressSkuArgs(name="Standard"),
            public_ip_allocation_method="Static",
            tags=self._tags,
            opts=self._child,
        )

    def _head_nsg(self, cidr: str | None) -> network.NetworkSecurityGroup:
        """The head node's security group: SSH from ``cidr`` (config sshIngressCidr), when set;
        without it the head node takes no inbound traffic (Azure docs, "Public IP addresses":
        a Standard SKU public IP is secure by default, closed to inbound traffic until a network
        security group allows it)."""
        rules = (
            [
                network.SecurityRuleArgs(
                    name="ssh-in",
                    priority=100,
                    direction="Inbound",
                    access="Allow",
                    protocol="Tcp",
                    source_address_prefix=cidr,
                    source_port_range="*",
                    destination_address_prefix="*",
                    destination_port_range="22",
                    description="SSH from sshIngressCidr",
                )
            ]
            if cidr
            else []
        )
        return network.NetworkSecurityGroup(
            f"{self._name}-head-nsg",
            resource_group_name=self._rg,
            location=self._azure.location,
            security_rules=rules,
            tags=self._tags,
            opts=self._child,
        )

    def _head(
        self,
        host: str,
        group: NodeGroup,
        subnet: network.Subnet,
        nsg: network.NetworkSecurityGroup,
        key: HostKeyPair,
    ) -> tuple[network.NetworkInterface, network.PublicIPAddress]:
        """A head (login / controller) VM: a public address, its declared host name and its
        host key at boot."""
        settings = self._azure
        address = self._public_ip(f"{self._name}-{host}-ip")
        nic = network.NetworkInterface(
            f"{self._name}-{host}-nic",
            resource_group_name=self._rg,
            location=settings.location,
            ip_configurations=[
                network.NetworkInterfaceIPConfigurationArgs(
                    name="ipconfig",
                    primary=True,
                    private_ip_allocation_method="Dynamic",
                    subnet=network.SubnetArgs(id=subnet.id),
                    public_ip_address=network.PublicIPAddressArgs(id=address.id),
                )
            ],
            network_security_group=network.NetworkSecurityGroupArgs(id=nsg.id),
            tags=self._tags,
            opts=self._child,
        )
        compute.VirtualMachine(
            f"{self._name}-{host}",
            vm_name=host,
            resource_group_name=self._rg,
            location=settings.location,
            hardware_profile=compute.HardwareProfileArgs(
                vm_size=group.instance_type or settings.head_vm_size
            ),
            os_profile=compute.OSProfileArgs(
                computer_name=host,
                admin_username=settings.admin_user,
                custom_data=with_host_key(boot_cloud_config(host, settings.egress), key),
                linux_configuration=linux_configuration(settings, self._key),
            ),
            storage_profile=compute.StorageProfileArgs(
                image_reference=image_reference(settings),
                os_disk=compute.OSDiskArgs(
                    create_option="FromImage", caching="ReadWrite", delete_option="Delete"
                ),
            ),
            network_profile=compute.NetworkProfileArgs(
                network_interfaces=[
                    compute.NetworkInterfaceReferenceArgs(
                        id=nic.id, primary=True, delete_option="Delete"
                    )
                ]
            ),
            tags={**self._tags, TAG_ROLE: group.role},
            opts=self._child,
        )
        return nic, address

    def _scale_set(
        self, spec: ClusterSpec, subnet: network.Subnet, key: HostKeyPair
    ) -> ScaleSetMembers:
        """The compute nodes' one scale set (one host key for all its instances), and which
        instance is which host."""
        settings = self._azure
        hosts = spec.hosts_with_role("compute")
        size = next(g.instance_type for g in spec.nodes if g.role == "compute")
        self._scale_set_name = f"{spec.name}-compute"
        spot = settings.capacity == "spot"
        reservation = (
            compute.CapacityReservationProfileArgs(
                capacity_reservation_group=compute.SubResourceArgs(
                    id=settings.capacity_reservation_group
                )
            )
            if settings.capacity == "reservation"
            else None
        )
        scale_set = compute.VirtualMachineScaleSet(
            f"{self._name}-compute",
            vm_scale_set_name=self._scale_set_name,
            resource_group_name=self._rg,
            location=settings.location,
            sku=compute.SkuArgs(name=size, tier="Standard", capacity=len(hosts)),
            orchestration_mode="Uniform",
            single_placement_group=True,
            overprovision=False,
            platform_fault_domain_count=1,
            upgrade_policy=compute.UpgradePolicyArgs(mode="Manual"),
            virtual_machine_profile=compute.VirtualMachineScaleSetVMProfileArgs(
                os_profile=compute.VirtualMachineScaleSetOSProfileArgs(
                    computer_name_prefix=compute_name_prefix(spec),
                    admin_username=settings.admin_user,
                    custom_data=with_host_key(scale_set_cloud_config(settings.egress), key),
                    linux_configuration=linux_configuration(settings, self._key),
                ),
                storage_profile=compute.VirtualMachineScaleSetStorageProfileArgs(
                    image_reference=image_reference(settings),
                    os_disk=compute.VirtualMachineScaleSetOSDiskArgs(
                        create_option="FromImage", caching="ReadWrite"
                    ),
                ),
                network_profile=compute.VirtualMachineScaleSetNetworkProfileArgs(
                    network_interface_configurations=[
                        compute.VirtualMachineScaleSetNetworkConfigurationArgs(
                            name="eth0",
                            primary=True,
                            enable_accelerated_networking=True,
                            ip_configurations=[
                                compute.VirtualMachineScaleSetIPConfigurationArgs(
                                    name="ipconfig",
                                    primary=True,
                                    subnet=compute.ApiEntityReferenceArgs(id=subnet.id),
                                )
                            ],
                        )
                    ]
                ),
                priority="Spot" if spot else "Regular",
                eviction_policy="Delete" if spot else None,
                billing_profile=compute.BillingProfileArgs(max_price=-1) if spot else None,
                capacity_reservation=reservation,
            ),
            tags={**self._tags, TAG_ROLE: "compute"},
            opts=self._child,
        )
        return ScaleSetMembers(
            f"{self._name}-members",
            resource_group=self._rg,
            scale_set=scale_set.name,
            scale_set_id=scale_set.id,
            capacity=len(hosts),
            hosts=hosts,
            computer_name_prefix=compute_name_prefix(spec),
            timeout=self._config.get_float("hostKeyTimeout") or 900.0,
            opts=self._child,
        )


def _private_address(configs: list[Any] | None) -> str | None:
    """The private address of a NIC's first IP configuration."""
    first = (configs or [{}])[0] or {}
    get = first.get if isinstance(first, dict) else lambda k, f=first: getattr(f, k, None)
    return get("private_ip_address")
