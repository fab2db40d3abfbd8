"""AWS target: EFA GPU instances in a cluster placement group, plus a head node.

Children: a VPC and subnet (or the existing ones named in ``spec.aws``), a cluster
placement group, one security group that lets its members talk freely in both
directions (EFA's OS-bypass traffic needs a self-referencing ingress *and*
egress rule), one launch template per compute node group carrying every EFA
interface of the instance type (counts from :mod:`fabric.targets.aws.catalog`), and one
instance per host. Non-compute nodes (login, controller) become plain instances
in the same subnet and security group: the head node.

As AWS ParallelCluster does it (issue 40): an existing placement group is reused by id or
name; every node boots its machine kind's vendor image (the DLAMI's public SSM parameter,
catalog ``IMAGE_PARAMETERS``) unless ``aws.ami`` names one, from a gp3 root volume, with an
instance profile (:mod:`.identity`); the shared file systems (:mod:`.storage`) reach every node
as the host var ``storage_shared``, the instance store as ``storage_scratch_layout``; a launch
without capacity says so once (:mod:`.capacity`).

Each instance's host key is pinned from its console output's SSH HOST KEY block (else at first
contact), through ``access.bastion`` when set (``fabric.components.access``). Outputs: every
target's (``TargetCluster``; no switches, no BMCs).
"""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_aws as aws

from fabric.components.cloud import CloudCluster
from fabric.components.cloudinit import boot_cloud_config
from fabric.spec import ClusterSpec, NodeGroup
from fabric.targets.aws.capacity import capacity_hook, error_hooks_available
from fabric.targets.aws.catalog import IMAGE_PARAMETERS, aws_efa_only, aws_instance, image_kind
from fabric.targets.aws.identity import NodeIdentity, NodeIdentityArgs
from fabric.targets.aws.rules import PG_ID, placement_group_is_existing
from fabric.targets.aws.section import AwsSpec
from fabric.targets.aws.storage import SharedStorage, SharedStorageArgs, scratch_layout

#: EC2 tag keys railyard sets on everything it creates.
TAG_CLUSTER = "railyard:cluster"
TAG_ROLE = "railyard:role"


def efa_interface_count(group: NodeGroup, settings: AwsSpec) -> int:
    """How many EFA interfaces an instance of ``group`` gets (0 without EFA)."""
    known = aws_instance(group.instance_type or "")
    if not settings.efa or known is None:
        return 0
    return known.efa_interfaces


def efa_network_interfaces(
    count: int, subnet_id: pulumi.Input[str], security_group_id: pulumi.Input[str]
) -> list[aws.ec2.LaunchTemplateNetworkInterfaceArgs]:
    """One EFA interface per network card: device index 0 on card 0, 1 on the others."""
    return [
        aws.ec2.LaunchTemplateNetworkInterfaceArgs(
            network_card_index=card,
            device_index=0 if card == 0 else 1,
            interface_type="efa",
            subnet_id=subnet_id,
            security_groups=[security_group_id],
            delete_on_termination="true",
            description=f"railyard EFA {card}",
        )
        for card in range(count)
    ]


def efa_only_network_interfaces(
    count: int, subnet_id: pulumi.Input[str], security_group_id: pulumi.Input[str]
) -> list[aws.ec2.LaunchTemplateNetworkInterfaceArgs]:
    """The EFA guide's layout: an ENA primary (card 0, device 0: the instance's one IP address)
    and one ``efa-only`` interface per card (card 0 at device index 1, the others at 0)."""
    common = {
        "subnet_id": subnet_id,
        "security_groups": [security_group_id],
        "delete_on_termination": "true",
    }
    primary = aws.ec2.LaunchTemplateNetworkInterfaceArgs(
        network_card_index=0,
        device_index=0,
        interface_type="interface",
        description="railyard ENA primary",
        **common,
    )
    return [
        primary,
        *(
            aws.ec2.LaunchTemplateNetworkInterfaceArgs(
                network_card_index=card,
                device_index=1 if card == 0 else 0,
                interface_type="efa-only",
                description=f"railyard EFA-only {card}",
                **common,
            )
            for card in range(count)
        ),
    ]


def launch_interfaces(
    group: NodeGroup,
    settings: AwsSpec,
    subnet_id: pulumi.Input[str],
    security_group_id: pulumi.Input[str],
) -> list[aws.ec2.LaunchTemplateNetworkInterfaceArgs]:
    """A compute group's interfaces: ENA + ``efa-only`` where the catalog says the type takes
    them (fabric.targets.aws.catalog.aws_efa_only), else one ``efa`` interface per card."""
    count = efa_interface_count(group, settings)
    if count and aws_efa_only(group.instance_type or ""):
        return efa_only_network_interfaces(count, subnet_id, security_group_id)
    return efa_network_interfaces(count, subnet_id, security_group_id)


class AwsCluster(CloudCluster):
    """An EFA cluster on EC2, described by a railyard cluster spec."""

    hosts: pulumi.Output[dict[str, Any]]

    def __init__(
        self, name: str, spec: ClusterSpec, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("aws", name, spec, opts)
        assert spec.aws is not None  # checked by CloudCluster
        self._aws = spec.aws
        self._tags = {TAG_CLUSTER: spec.name}

        vpc_id, subnet_id, head_subnet_id, public = self._network()
        sg = self._security_group(vpc_id)
        head_sgs = [sg.id, *self._head_ssh(vpc_id, self._config.get("sshIngressCidr"))]
        # none with a Capacity Block, which places its instances itself; none for a group
        # that exists (a reservation's), which the launch template names
        self.placement_group = (
            aws.ec2.PlacementGroup(
                f"{name}-pg",
                name=self._aws.placement_group,
                strategy=self._aws.placement_strategy,
                tags=self._tags,
                opts=self._child,
            )
            if self._aws.placement_group and not placement_group_is_existing(self._aws)
            else None
        )
        self._images: dict[str, pulumi.Input[str]] = {}
        self._profile: pulumi.Input[str] = (
            self._aws.instance_profile
            or NodeIdentity(
                f"{name}-nodes",
                NodeIdentityArgs(policies=list(self._aws.iam_policies), tags=self._tags),
                opts=self._child,
            ).profile_name
        )
        storage_vars = self._storage(vpc_id, subnet_id, sg.id)

        instances: dict[str, aws.ec2.Instance] = {}
        facts: dict[str, dict[str, Any]] = {}
        for index, group in enumerate(spec.nodes):
            if group.role == "compute":
                template = self._launch_template(index, group, subnet_id, sg.id)
                made = {h: self._compute(h, group, template) for h in group.hosts}
            else:
                made = {
                    h: self._head(h, group, head_subnet_id, head_sgs, public) for h in group.hosts
                }
            instances.update(made)
            for host in group.hosts:
                facts[host] = {
                    "role": group.role,
                    "instance_type": group.instance_type or self._aws.head_instance_type,
                    "efa_interfaces": efa_interface_count(group, self._aws)
                    if group.role == "compute"
                    else 0,
                }

        hosts = pulumi.Output.all(
            **{
                host: pulumi.Output.all(
                    private_ip=inst.private_ip, public_ip=inst.public_ip, instance_id=inst.id
                ).apply(lambda o, f=facts[host]: {**f, **o})
                for host, inst in instances.items()
            }
        )
        inventory = self._inventory(
            private={h: i.private_ip for h, i in instances.items()},
            public={h: i.public_ip for h, i in instances.items()},
            sources={
                h: i.id.apply(
                    lambda id_: {"cloud": "aws", "instance_id": id_, "region": self._aws.region}
                )
                for h, i in instances.items()
            },
        )
        inventory = pulumi.Output.all(inventory, storage_vars).apply(
            lambda v: with_host_vars(v[0], v[1])
        )
        self.export(spec, inventory=inventory, hosts=hosts)

    def _network(self) -> tuple[pulumi.Input[str], pulumi.Input[str], pulumi.Input[str], bool]:
        """The VPC id, the compute and head subnet ids, and whether the head node gets a public
        address. A new VPC has ParallelCluster's layout: the head node in a public subnet (an
        internet gateway route), the compute nodes in a private one whose default route, with
        ``egress.mode: nat``, leads to a NAT gateway in the public subnet (else none)."""
        if self._aws.vpc_id and self._aws.subnet_id:
            return self._aws.vpc_id, self._aws.subnet_id, self._aws.subnet_id, False
        vpc_id: pulumi.Input[str]
        if self._aws.vpc_id:
            vpc_id = self._aws.vpc_id
        else:
            vpc = aws.ec2.Vpc(
                f"{self._name}-vpc",
                cidr_block=str(self._aws.vpc_cidr),
                enable_dns_hostnames=True,
                enable_dns_support=True,
                tags=self._tags,
                opts=self._child,
            )
            vpc_id = vpc.id
        subnet = aws.ec2.Subnet(
            f"{self._name}-subnet",
            vpc_id=vpc_id,
            cidr_block=str(self._aws.subnet_cidr),
            availability_zone=self._aws.availability_zone,
            tags=self._tags,
            opts=self._child,
        )
        if self._aws.vpc_id:
            return vpc_id, subnet.id, subnet.id, False
        public = aws.ec2.Subnet(
            f"{self._name}-public-subnet",
            vpc_id=vpc_id,
            cidr_block=str(self._aws.public_subnet_cidr),
            availability_zone=self._aws.availability_zone,
            tags=self._tags,
            opts=self._child,
        )
        gateway = aws.ec2.InternetGateway(
            f"{self._name}-igw", vpc_id=vpc_id, tags=self._tags, opts=self._child
        )
        table = aws.ec2.RouteTable(
            f"{self._name}-rt",
            vpc_id=vpc_id,
            routes=[aws.ec2.RouteTableRouteArgs(cidr_block="0.0.0.0/0", gateway_id=gateway.id)],
            tags=self._tags,
            opts=self._child,
        )
        aws.ec2.RouteTableAssociation(
            f"{self._name}-rta", subnet_id=public.id, route_table_id=table.id, opts=self._child
        )
        routes = []
        if self._aws.egress.mode == "nat":
            address = aws.ec2.Eip(
                f"{self._name}-nat-eip", domain="vpc", tags=self._tags, opts=self._child
            )
            nat = aws.ec2.NatGateway(
                f"{self._name}-nat",
                allocation_id=address.allocation_id,
                subnet_id=public.id,
                connectivity_type="public",
                tags=self._tags,
                opts=pulumi.ResourceOptions(parent=self, depends_on=[gateway]),
            )
            routes = [aws.ec2.RouteTableRouteArgs(cidr_block="0.0.0.0/0", nat_gateway_id=nat.id)]
        private = aws.ec2.RouteTable(
            f"{self._name}-private-rt", vpc_id=vpc_id, routes=routes, tags=self._tags,
            opts=self._child,
        )  # fmt: skip
        aws.ec2.RouteTableAssociation(
            f"{self._name}-private-rta",
            subnet_id=subnet.id,
            route_table_id=private.id,
            opts=self._child,
        )
        return vpc_id, subnet.id, public.id, True

    def _security_group(self, vpc_id: pulumi.Input[str]) -> aws.ec2.SecurityGroup:
        """The cluster security group: all traffic between members, both ways; egress out."""
        sg = aws.ec2.SecurityGroup(
            f"{self._name}-efa-sg",
            vpc_id=vpc_id,
            description=f"railyard {self._spec.name}: all traffic between members (EFA)",
            tags=self._tags,
            opts=self._child,
        )
        aws.vpc.SecurityGroupIngressRule(
            f"{self._name}-efa-in-self",
            security_group_id=sg.id,
            referenced_security_group_id=sg.id,
            ip_protocol="-1",
            description="EFA: all traffic from members",
            opts=self._child,
        )
        aws.vpc.SecurityGroupEgressRule(
            f"{self._name}-efa-out-self",
            security_group_id=sg.id,
            referenced_security_group_id=sg.id,
            ip_protocol="-1",
            description="EFA: all traffic to members",
            opts=self._child,
        )
        aws.vpc.SecurityGroupEgressRule(
            f"{self._name}-out-any",
            security_group_id=sg.id,
            cidr_ipv4="0.0.0.0/0",
            ip_protocol="-1",
            description="package mirrors and the EFA installer",
            opts=self._child,
        )
        return sg

    def _head_ssh(self, vpc_id: pulumi.Input[str], cidr: str | None) -> list[pulumi.Output[str]]:
        """A security group opening SSH to the head node from ``cidr`` (config sshIngressCidr)."""
        if not cidr:
            return []
        sg = aws.ec2.SecurityGroup(
            f"{self._name}-head-ssh-sg",
            vpc_id=vpc_id,
            description=f"railyard {self._spec.name}: SSH to the head node",
            tags=self._tags,
            opts=self._child,
        )
        aws.vpc.SecurityGroupIngressRule(
            f"{self._name}-head-ssh-in",
            security_group_id=sg.id,
            cidr_ipv4=cidr,
            ip_protocol="tcp",
            from_port=22,
            to_port=22,
            description="SSH from sshIngressCidr",
            opts=self._child,
        )
        return [sg.id]

    def _launch_template(
        self,
        index: int,
        group: NodeGroup,
        subnet_id: pulumi.Input[str],
        sg_id: pulumi.Input[str],
    ) -> aws.ec2.LaunchTemplate:
        """The launch template of a compute group: AMI, key, EFA NICs, placement, capacity."""
        settings = self._aws
        reservation = None
        if settings.capacity_reservation_id:
            reservation = aws.ec2.LaunchTemplateCapacityReservationSpecificationArgs(
                capacity_reservation_target=aws.ec2.LaunchTemplateCapacityReservationSpecificationCapacityReservationTargetArgs(
                    capacity_reservation_id=settings.capacity_reservation_id
                )
            )
        market = (
            aws.ec2.LaunchTemplateInstanceMarketOptionsArgs(market_type="capacity-block")
            if settings.capacity_block
            else None
        )
        return aws.ec2.LaunchTemplate(
            f"{self._name}-lt-{index}",
            image_id=self._image(group.instance_type or ""),
            instance_type=group.instance_type,
            key_name=settings.key_name,
            network_interfaces=launch_interfaces(group, settings, subnet_id, sg_id),
            placement=self._placement(),
            capacity_reservation_specification=reservation,
            instance_market_options=market,
            metadata_options=aws.ec2.LaunchTemplateMetadataOptionsArgs(
                http_tokens="required", http_endpoint="enabled"
            ),
            tags=self._tags,
            opts=self._child,
        )

    def _placement(self) -> aws.ec2.LaunchTemplatePlacementArgs:
        """The compute nodes' zone and placement group: the one railyard made, or an existing
        one by id (``pg-...``) or by name."""
        settings = self._aws
        group_id = group_name = None
        if self.placement_group is not None:
            group_name = self.placement_group.name
        elif placement_group_is_existing(settings):
            group = settings.placement_group or ""
            if PG_ID.fullmatch(group):
                group_id = group
            else:
                group_name = group
        return aws.ec2.LaunchTemplatePlacementArgs(
            group_id=group_id, group_name=group_name, availability_zone=settings.availability_zone
        )

    def _image(self, instance_type: str) -> pulumi.Input[str]:
        """``aws.ami``, else the machine kind's vendor image from its public SSM parameter,
        read once per kind at ``pulumi up``."""
        if self._aws.ami:
            return self._aws.ami
        kind = image_kind(instance_type)
        if kind not in self._images:
            self._images[kind] = aws.ssm.get_parameter_output(
                name=IMAGE_PARAMETERS[kind], opts=pulumi.InvokeOutputOptions(parent=self)
            ).value
        return self._images[kind]

    def _root_volume(self) -> aws.ec2.InstanceRootBlockDeviceArgs:
        """The root EBS volume: the spec's size and type (gp3, as the DLAMI is published)."""
        return aws.ec2.InstanceRootBlockDeviceArgs(
            volume_size=self._aws.root_volume_gib,
            volume_type=self._aws.root_volume_type,
            encrypted=True,
            delete_on_termination=True,
        )

    def _storage(
        self, vpc_id: pulumi.Input[str], subnet_id: pulumi.Input[str], sg_id: pulumi.Input[str]
    ) -> pulumi.Output[dict[str, dict[str, Any]]]:
        """Host vars per host: ``storage_shared`` (the file systems made here, and nfs) and
        ``storage_scratch_layout`` (the instance store), each only where the spec has it."""
        spec = self._spec
        storage = spec.storage
        entries: pulumi.Input[list[dict[str, str]]] = []
        if storage is not None and storage.shared:
            entries = SharedStorage(
                f"{self._name}-storage",
                SharedStorageArgs(
                    shared=list(storage.shared),
                    vpc_id=vpc_id,
                    vpc_cidr=None if self._aws.vpc_id else str(self._aws.vpc_cidr),
                    subnet_id=subnet_id,
                    cluster_sg_id=sg_id,
                    tags=self._tags,
                ),
                opts=self._child,
            ).entries

        def per_host(shared: list[dict[str, str]]) -> dict[str, dict[str, Any]]:
            out: dict[str, dict[str, Any]] = {}
            for host, group in spec.hosts.items():
                vars_: dict[str, Any] = {"storage_shared": shared} if shared else {}
                layout = scratch_layout(
                    storage, group.instance_type or self._aws.head_instance_type
                )
                if layout is not None:
                    vars_["storage_scratch_layout"] = layout
                out[host] = vars_
            return out

        return pulumi.Output.from_input(entries).apply(per_host)

    def _compute(
        self, host: str, group: NodeGroup, template: aws.ec2.LaunchTemplate
    ) -> aws.ec2.Instance:
        """One GPU instance from its group's launch template; a launch without capacity says
        so once (:func:`fabric.targets.aws.capacity.capacity_hook`)."""
        opts = self._child
        if error_hooks_available():
            hook = pulumi.ErrorHook(
                f"{self._name}-{host}-capacity",
                capacity_hook(
                    host, group.instance_type or "", self._aws.availability_zone, group.hosts
                ),
            )
            opts = pulumi.ResourceOptions(
                parent=self, hooks=pulumi.ResourceHookBinding(on_error=[hook])
            )
        return aws.ec2.Instance(
            f"{self._name}-{host}",
            launch_template=aws.ec2.InstanceLaunchTemplateArgs(
                id=template.id, version=template.latest_version.apply(str)
            ),
            root_block_device=self._root_volume(),
            iam_instance_profile=self._profile,
            user_data=boot_cloud_config(host, self._aws.egress),
            tags={**self._tags, TAG_ROLE: group.role, "Name": host},
            opts=opts,
        )

    def _head(
        self,
        host: str,
        group: NodeGroup,
        subnet_id: pulumi.Input[str],
        security_groups: list[pulumi.Input[str]],
        public: bool,
    ) -> aws.ec2.Instance:
        """A head (login / controller) instance: no EFA, same subnet and security group."""
        return aws.ec2.Instance(
            f"{self._name}-{host}",
            ami=self._image(group.instance_type or self._aws.head_instance_type),
            instance_type=group.instance_type or self._aws.head_instance_type,
            root_block_device=self._root_volume(),
            iam_instance_profile=self._profile,
            key_name=self._aws.key_name,
            subnet_id=subnet_id,
            vpc_security_group_ids=security_groups,
            associate_public_ip_address=public or None,
            user_data=boot_cloud_config(host, self._aws.egress),
            metadata_options=aws.ec2.InstanceMetadataOptionsArgs(
                http_tokens="required", http_endpoint="enabled"
            ),
            tags={**self._tags, TAG_ROLE: group.role, "Name": host},
            opts=self._child,
        )


def with_host_vars(
    inventory: dict[str, Any], host_vars: dict[str, dict[str, Any]]
) -> dict[str, Any]:
    """``inventory`` with each host's vars added (the shared file systems, the scratch)."""
    hosts = inventory["all"]["hosts"]
    for host, vars_ in host_vars.items():
        if host in hosts:
            hosts[host] = {**hosts[host], **vars_}
    return inventory
