"""GCP target: A3 (a3-highgpu-8g) and A3 Mega (a3-megagpu-8g) with GPUDirect-TCPX(O).

Children: a system VPC and subnet (NIC 0, the management / SSH network), one VPC
and subnet per GPU NIC with the GPU MTU (8244), firewall rules allowing traffic
inside each network, a compact placement policy (COLLOCATED), and one instance
per host with gVNIC on every interface and ``on_host_maintenance: TERMINATE``.
Head nodes (login, controller) get the system NIC only and an external address.
Each instance's host key is pinned from its ``hostkeys/`` guest attributes (else at first
contact), through ``access.bastion`` when set (``fabric.components.access``).
GPU NIC counts come from :mod:`fabric.targets.gcp.catalog`. Outputs: every target's (``TargetCluster``;
``fabric`` carries the VPCs, also exported as ``networks``; no switches, no BMCs).

As Cluster Toolkit's A3 blueprints deploy (issue 40): each node boots from a disk type its
machine supports and from Google's base image for its A3 kind (catalog); every node runs as
one service account with the least roles (log and metric writers) or ``gcp.service_account``;
``gcp.access: os_login`` turns on OS Login instead of ``ssh-keys`` metadata; ``storage.shared``
Filestore and Managed Lustre instances are created on the system VPC and handed to the
``storage`` role as the host var ``storage_shared``; an A3's bundled local SSDs are declared
as NVMe scratch disks (``storage.scratch`` assembles them).
"""

from __future__ import annotations

import re
from typing import Any

import pulumi
import pulumi_gcp as gcp

from fabric.components.cloud import CloudCluster
from fabric.components.cloudinit import boot_cloud_config
from fabric.spec import ClusterSpec, NodeGroup
from fabric.spec.storage import SharedFileSystem
from fabric.spec.storage_rules import min_size_gib
from fabric.targets.gcp.catalog import GcpA3Blueprint, boot_disk_types, gcp_blueprint, gcp_machine
from fabric.targets.gcp.model import gpu_nic_count, gpu_subnet_cidrs
from fabric.targets.gcp.section import GcpSpec

#: Network tag of head nodes (the SSH firewall rule targets it).
HEAD_TAG = "railyard-head"
#: The nodes' service account's project roles: what the Ops Agent and DCGM exporter write.
#: Cluster Toolkit's a3high blueprint grants logging.logWriter, monitoring.metricWriter and
#: storage.objectAdmin (the last for its Cloud Storage mounts, which railyard does not make).
COMPUTE_ROLES = ("logging.logWriter", "monitoring.metricWriter")
#: Access scopes: the whole API, limited by the account's roles (the toolkit nodeset's default).
COMPUTE_SCOPES = ["https://www.googleapis.com/auth/cloud-platform"]
#: Mount options of created file systems (Cluster Toolkit's filestore and managed-lustre
#: modules' default ``mount_options``).
MOUNT_OPTIONS = "defaults,_netdev"


def cluster_image(spec: ClusterSpec) -> str:
    """``gcp.image``, else Google's base image for the compute nodes' A3 kind (catalog): one
    operating system on every node, so the Slurm packages match."""
    assert spec.gcp is not None
    if spec.gcp.image:
        return spec.gcp.image
    for group in spec.nodes:
        known = gcp_machine(group.instance_type or "") if group.role == "compute" else None
        if known is not None and known.image:
            return known.image
    raise ValueError("gcp.image: no compute node has a catalogued A3 kind; set an image")


def boot_disk_type(settings: GcpSpec, group: NodeGroup) -> str:
    """A node's boot disk type: ``gcp.boot_disk_type`` for compute nodes, else the catalog's
    default for its machine type (the spec rules refuse a type the machine lacks)."""
    supported = boot_disk_types(group.instance_type or "")
    if group.role == "compute" and settings.boot_disk_type:
        return settings.boot_disk_type
    if not supported:
        raise ValueError(f"{group.instance_type}: no boot disk type in the catalog")
    return supported[0]


def scratch_disks(group: NodeGroup) -> list[gcp.compute.InstanceScratchDiskArgs] | None:
    """An A3's bundled local SSDs as NVMe scratch disks: Compute Engine attaches them to the
    machine type anyway, and naming them keeps a later ``pulumi up`` from replacing the VM."""
    known = gcp_machine(group.instance_type or "")
    if group.role != "compute" or known is None or not known.local_ssds:
        return None
    return [
        gcp.compute.InstanceScratchDiskArgs(interface="NVME", size=known.local_ssd_gib)
        for _ in range(known.local_ssds)
    ]


def lustre_mount(fs: SharedFileSystem, mount_point: str | None) -> dict[str, Any]:
    """The ``storage_shared`` entry of a Managed Lustre instance from its ``mount_point``
    (``10.90.1.4@tcp:/lustrefs``), split as Cluster Toolkit's managed-lustre module does."""
    if not mount_point or ":/" not in mount_point:
        raise ValueError(f"Managed Lustre {fs.name}: no mount point reported ({mount_point!r})")
    server, export = mount_point.split(":", 1)
    return _shared(fs, server, export)


def filestore_mount(fs: SharedFileSystem, networks: Any, share: str) -> dict[str, Any]:
    """The ``storage_shared`` entry of a Filestore instance: its first address, ``/<share>``."""
    addresses = ((networks or [{}])[0] or {}).get("ip_addresses") or []
    if not addresses:
        raise ValueError(f"Filestore {fs.name}: no address reported")
    return _shared(fs, addresses[0], f"/{share}")


def _shared(fs: SharedFileSystem, server: str, export: str) -> dict[str, Any]:
    """One ``storage_shared`` entry (the storage role's input)."""
    return {
        "name": fs.name,
        "kind": fs.kind,
        "server": server,
        "export": export,
        "mount": fs.mount,
        "options": fs.options or MOUNT_OPTIONS,
    }


def with_host_vars(inventory: dict[str, Any], host_vars: dict[str, Any]) -> dict[str, Any]:
    """``inventory`` with ``host_vars`` added to every host."""
    hosts = inventory["all"]["hosts"]
    return {
        **inventory,
        "all": {**inventory["all"], "hosts": {h: {**v, **host_vars} for h, v in hosts.items()}},
    }


def compute_scheduling(settings: GcpSpec) -> gcp.compute.InstanceSchedulingArgs:
    """A compute VM's scheduling for ``gcp.provisioning``: GPUs terminate on host maintenance;
    Spot and DWS flex-start VMs are not restarted (flex-start: deleted after
    ``max_run_duration``, as Cluster Toolkit's nodeset sets its termination action)."""
    if settings.provisioning == "spot":
        return gcp.compute.InstanceSchedulingArgs(
            on_host_maintenance="TERMINATE",
            automatic_restart=False,
            preemptible=True,
            provisioning_model="SPOT",
            instance_termination_action="STOP",
        )
    if settings.provisioning == "flex-start":
        return gcp.compute.InstanceSchedulingArgs(
            on_host_maintenance="TERMINATE",
            automatic_restart=False,
            provisioning_model="FLEX_START",
            instance_termination_action="DELETE",
            max_run_duration=gcp.compute.InstanceSchedulingMaxRunDurationArgs(
                seconds=settings.max_run_duration or 0
            ),
        )
    return gcp.compute.InstanceSchedulingArgs(
        on_host_maintenance="TERMINATE", automatic_restart=True, provisioning_model="STANDARD"
    )


def reservation_affinity(settings: GcpSpec) -> gcp.compute.InstanceReservationAffinityArgs:
    """Consume the named specific reservation (provisioning: reservation); otherwise none, so
    an on-demand, Spot or flex-start VM never eats into a reservation meant for another."""
    if settings.provisioning == "reservation" and settings.reservation:
        return gcp.compute.InstanceReservationAffinityArgs(
            type="SPECIFIC_RESERVATION",
            specific_reservation=gcp.compute.InstanceReservationAffinitySpecificReservationArgs(
                key="compute.googleapis.com/reservation-name", values=[settings.reservation]
            ),
        )
    return gcp.compute.InstanceReservationAffinityArgs(type="NO_RESERVATION")


def cluster_blueprint(spec: ClusterSpec) -> GcpA3Blueprint | None:
    """The blueprint facts of the spec's A3 compute nodes (validate allows one A3 kind per
    spec: its GPU subnets serve every compute group)."""
    for group in spec.nodes:
        found = gcp_blueprint(group.instance_type or "") if group.role == "compute" else None
        if found is not None:
            return found
    return None


def rdma_network_profile(settings: GcpSpec, blueprint: GcpA3Blueprint) -> str:
    """The zone's RoCE network profile URL, as Cluster Toolkit's a3-ultra blueprint names it."""
    return (
        f"https://www.googleapis.com/compute/beta/projects/{settings.project}/global/"
        f"networkProfiles/{settings.zone}-{blueprint.rdma_network_profile}"
    )


class GcpCluster(CloudCluster):
    """An A3 / A3 Mega cluster on Compute Engine, described by a railyard cluster spec."""

    hosts: pulumi.Output[dict[str, Any]]
    networks: pulumi.Output[dict[str, Any]]

    def __init__(
        self, name: str, spec: ClusterSpec, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("gcp", name, spec, opts)
        assert spec.gcp is not None  # checked by CloudCluster
        self._gcp = spec.gcp
        config = self._config

        nics = max(gpu_nic_count(group) for group in spec.nodes)
        blueprint = cluster_blueprint(spec)
        system = self._vpc(
            "sys",
            str(self._gcp.system_subnet_cidr),
            mtu=blueprint.system_mtu if blueprint else None,
        )
        cidrs = gpu_subnet_cidrs(self._gcp, nics)
        second: list[tuple[gcp.compute.Network, gcp.compute.Subnetwork]] = []
        if blueprint is not None and blueprint.rdma_network_profile:
            second = [self._vpc("net-1", str(self._gcp.second_subnet_cidr), blueprint.system_mtu)]
            gpus = self._rdma_vpc(cidrs, blueprint)
        else:
            gpus = [
                self._vpc(f"gpu-{i}", cidr, mtu=self._gcp.gpu_nic_mtu)
                for i, cidr in enumerate(cidrs)
            ]
        self._nic_type = blueprint.gpu_nic_type if blueprint else "GVNIC"
        self._ssh_rule(system[0], config.get("sshIngressCidr"))
        self._cloud_nat(system[0])
        policy = self._placement_policy()
        self._image = cluster_image(spec)
        self._account, grants = self._service_account()
        shared = self._shared_file_systems(system[0])

        instances: dict[str, gcp.compute.Instance] = {}
        facts: dict[str, dict[str, Any]] = {}
        for group in spec.nodes:
            count = gpu_nic_count(group)
            extra = second if count else []
            for host in group.hosts:
                instances[host] = self._instance(
                    host, group, system[1], gpus[:count], policy, config, extra, grants
                )
                facts[host] = {
                    "role": group.role,
                    "machine_type": group.instance_type,
                    "nic_count": 1 + len(extra) + count,
                    "gpu_nics": count,
                    "gpu_nic_mtu": self._gcp.gpu_nic_mtu if count else None,
                }

        networks = pulumi.Output.all(
            **{
                net_name: pulumi.Output.all(name=net.name, mtu=net.mtu, cidr=sub.ip_cidr_range)
                for net_name, (net, sub) in {
                    "sys": system,
                    **dict(zip(["net-1"], second, strict=False)),
                    **{f"gpu-{i}": pair for i, pair in enumerate(gpus)},
                }.items()
            }
        )
        hosts = pulumi.Output.all(
            **{
                host: inst.network_interfaces.apply(lambda n, f=facts[host]: {**f, **_addresses(n)})
                for host, inst in instances.items()
            }
        )
        inventory = self._inventory(
            private={
                h: i.network_interfaces.apply(lambda n: _addresses(n)["private_ip"])
                for h, i in instances.items()
            },
            public={
                h: i.network_interfaces.apply(lambda n: _addresses(n)["public_ip"])
                for h, i in instances.items()
            },
            sources={
                h: {"cloud": "gcp", "name": h, "zone": self._gcp.zone, "project": self._gcp.project}
                for h in instances
            },
        )
        if shared is not None:
            inventory = pulumi.Output.all(inventory, shared).apply(
                lambda v: with_host_vars(v[0], {"storage_shared": v[1]})
            )
        self.export(
            spec,
            inventory=inventory,
            hosts=hosts,
            fabric=networks.apply(lambda n: {"kind": spec.fabric.kind, "networks": n}),
            networks=networks,
        )

    def _vpc(
        self, suffix: str, cidr: str, mtu: int | None
    ) -> tuple[gcp.compute.Network, gcp.compute.Subnetwork]:
        """A custom-mode VPC with one subnet in the region and an allow-internal rule."""
        prefix, settings = self._gcp.network_prefix, self._gcp
        network = gcp.compute.Network(
            f"{self._name}-{suffix}",
            name=f"{prefix}-{suffix}",
            project=settings.project,
            auto_create_subnetworks=False,
            mtu=mtu,
            opts=self._child,
        )
        subnet = gcp.compute.Subnetwork(
            f"{self._name}-{suffix}-subnet",
            name=f"{prefix}-{suffix}-subnet",
            project=settings.project,
            region=settings.region,
            network=network.id,
            ip_cidr_range=cidr,
            private_ip_google_access=True,
            opts=self._child,
        )
        gcp.compute.Firewall(
            f"{self._name}-{suffix}-internal",
            name=f"{prefix}-{suffix}-internal",
            project=settings.project,
            network=network.id,
            direction="INGRESS",
            source_ranges=[cidr],
            allows=[
                gcp.compute.FirewallAllowArgs(protocol="tcp"),
                gcp.compute.FirewallAllowArgs(protocol="udp"),
                gcp.compute.FirewallAllowArgs(protocol="icmp"),
            ],
            opts=self._child,
        )
        return network, subnet

    def _rdma_vpc(
        self, cidrs: list[str], blueprint: GcpA3Blueprint
    ) -> list[tuple[gcp.compute.Network, gcp.compute.Subnetwork]]:
        """A3 Ultra's RDMA network as Cluster Toolkit's gpu-rdma-vpc builds it: one VPC with
        the zone's RoCE network profile, regional routing, the GPU MTU and one subnet per MRDMA
        NIC; no firewall rules (the profile takes none)."""
        prefix, settings = self._gcp.network_prefix, self._gcp
        network = gcp.compute.Network(
            f"{self._name}-rdma",
            name=f"{prefix}-rdma",
            project=settings.project,
            auto_create_subnetworks=False,
            mtu=settings.gpu_nic_mtu,
            routing_mode="REGIONAL",
            network_profile=rdma_network_profile(settings, blueprint),
            opts=self._child,
        )
        return [
            (
                network,
                gcp.compute.Subnetwork(
                    f"{self._name}-rdma-{i}-subnet",
                    name=f"{prefix}-rdma-{i}-subnet",
                    project=settings.project,
                    region=settings.region,
                    network=network.id,
                    ip_cidr_range=cidr,
                    opts=self._child,
                ),
            )
            for i, cidr in enumerate(cidrs)
        ]

    def _ssh_rule(self, network: gcp.compute.Network, cidr: str | None) -> None:
        """SSH to head nodes from ``cidr`` (config sshIngressCidr), when set."""
        if not cidr:
            return
        gcp.compute.Firewall(
            f"{self._name}-head-ssh",
            name=f"{self._gcp.network_prefix}-head-ssh",
            project=self._gcp.project,
            network=network.id,
            direction="INGRESS",
            source_ranges=[cidr],
            target_tags=[HEAD_TAG],
            allows=[gcp.compute.FirewallAllowArgs(protocol="tcp", ports=["22"])],
            opts=self._child,
        )

    def _cloud_nat(self, network: gcp.compute.Network) -> None:
        """Cloud NAT for the system network (``egress.mode: nat``): a router and a NAT for
        every subnet range, as Cluster Toolkit's vpc module creates them; compute nodes have no
        external address and reach package mirrors and registries through it."""
        if self._gcp.egress.mode != "nat":
            return
        router = gcp.compute.Router(
            f"{self._name}-router",
            name=f"{self._gcp.network_prefix}-router",
            project=self._gcp.project,
            region=self._gcp.region,
            network=network.id,
            opts=self._child,
        )
        gcp.compute.RouterNat(
            f"{self._name}-nat",
            name=f"{self._gcp.network_prefix}-nat",
            project=self._gcp.project,
            region=self._gcp.region,
            router=router.name,
            nat_ip_allocate_option="AUTO_ONLY",
            source_subnetwork_ip_ranges_to_nat="ALL_SUBNETWORKS_ALL_IP_RANGES",
            log_config=gcp.compute.RouterNatLogConfigArgs(enable=True, filter="ERRORS_ONLY"),
            opts=self._child,
        )

    def _placement_policy(self) -> gcp.compute.ResourcePolicy | None:
        """A compact placement policy for the compute nodes (gcp.compact_placement)."""
        if not self._gcp.compact_placement:
            return None
        return gcp.compute.ResourcePolicy(
            f"{self._name}-compact",
            name=f"{self._gcp.network_prefix}-compact",
            project=self._gcp.project,
            region=self._gcp.region,
            group_placement_policy=gcp.compute.ResourcePolicyGroupPlacementPolicyArgs(
                collocation="COLLOCATED"
            ),
            opts=self._child,
        )

    def _instance(
        self,
        host: str,
        group: NodeGroup,
        system_subnet: gcp.compute.Subnetwork,
        gpu_networks: list[tuple[gcp.compute.Network, gcp.compute.Subnetwork]],
        policy: gcp.compute.ResourcePolicy | None,
        config: pulumi.Config,
        second: list[tuple[gcp.compute.Network, gcp.compute.Subnetwork]],
        grants: list[pulumi.Resource],
    ) -> gcp.compute.Instance:
        """One VM: system NIC first, A3 Ultra's second gVNIC, then one NIC per GPU network
        (gVNIC; MRDMA on A3 Ultra); its boot disk, image, service account, login mode and
        local SSDs as the module docstring says."""
        compute = group.role == "compute"
        interfaces = [
            gcp.compute.InstanceNetworkInterfaceArgs(
                subnetwork=system_subnet.id,
                nic_type="GVNIC",
                access_configs=None
                if compute
                else [gcp.compute.InstanceNetworkInterfaceAccessConfigArgs()],
            ),
            *(
                gcp.compute.InstanceNetworkInterfaceArgs(subnetwork=subnet.id, nic_type="GVNIC")
                for _, subnet in second
            ),
            *(
                gcp.compute.InstanceNetworkInterfaceArgs(
                    subnetwork=subnet.id, nic_type=self._nic_type
                )
                for _, subnet in gpu_networks
            ),
        ]
        metadata = {
            "enable-guest-attributes": "TRUE",  # the guest agent publishes hostkeys/
            # cloud-init images: the host name (the instance name gives it on every image) and
            # the proxy of egress.mode proxy
            "user-data": boot_cloud_config(host, self._gcp.egress),
        }
        if self._gcp.access == "os_login":
            metadata["enable-oslogin"] = "TRUE"  # keys come from the users' OS Login profiles
        elif key := config.get("sshPublicKey"):
            metadata["ssh-keys"] = f"{self._spec.management.ssh_user}:{key}"
        return gcp.compute.Instance(
            f"{self._name}-{host}",
            name=host,
            project=self._gcp.project,
            zone=self._gcp.zone,
            machine_type=group.instance_type,
            boot_disk=gcp.compute.InstanceBootDiskArgs(
                initialize_params=gcp.compute.InstanceBootDiskInitializeParamsArgs(
                    image=self._image,
                    size=config.get_int("bootDiskSizeGb") or 200,
                    type=boot_disk_type(self._gcp, group),
                )
            ),
            scratch_disks=scratch_disks(group),
            service_account=gcp.compute.InstanceServiceAccountArgs(
                email=self._account, scopes=COMPUTE_SCOPES
            ),
            network_interfaces=interfaces,
            scheduling=compute_scheduling(self._gcp) if compute else None,
            reservation_affinity=reservation_affinity(self._gcp) if compute else None,
            resource_policies=policy.self_link if compute and policy else None,
            tags=None if compute else [HEAD_TAG],
            metadata=metadata,
            labels={"railyard-cluster": self._spec.name, "railyard-role": group.role},
            opts=pulumi.ResourceOptions(parent=self, depends_on=grants),
        )

    def _service_account(self) -> tuple[pulumi.Input[str], list[pulumi.Resource]]:
        """The nodes' service account: ``gcp.service_account``, or one created with
        COMPUTE_ROLES on the project (Cluster Toolkit's ``compute_sa``,
        modules/project/service-account); its email and the role grants."""
        settings = self._gcp
        if settings.service_account:
            return settings.service_account, []
        account = gcp.serviceaccount.Account(
            f"{self._name}-nodes",
            account_id=f"{settings.network_prefix[:24].rstrip('-')}-nodes",
            project=settings.project,
            display_name=f"railyard {self._spec.name} nodes",
            opts=self._child,
        )
        member = account.email.apply(lambda email: f"serviceAccount:{email}")
        grants: list[pulumi.Resource] = [
            gcp.projects.IAMMember(
                f"{self._name}-nodes-{role.split('.')[-1]}",
                project=settings.project,
                role=f"roles/{role}",
                member=member,
                opts=self._child,
            )
            for role in COMPUTE_ROLES
        ]
        return account.email, grants

    def _shared_file_systems(
        self, network: gcp.compute.Network
    ) -> pulumi.Output[list[dict[str, Any]]] | None:
        """Each ``storage.shared`` entry as the storage role mounts it: Filestore and Managed
        Lustre created on the system VPC, an NFS server as declared; None without any."""
        storage = self._spec.storage
        if storage is None or not storage.shared:
            return None
        entries: list[pulumi.Input[dict[str, Any]]] = []
        access: gcp.servicenetworking.Connection | None = None
        for fs in storage.shared:
            if fs.kind == "filestore":
                entries.append(self._filestore(fs, network))
            elif fs.kind == "managed_lustre":
                access = access or self._private_service_access(network)
                entries.append(self._lustre(fs, network, access))
            else:  # nfs (the spec rules refuse efs and fsx_lustre on GCP)
                entries.append(_shared(fs, fs.server or "", fs.export))
        return pulumi.Output.all(*entries).apply(list)

    def _filestore(self, fs: SharedFileSystem, network: gcp.compute.Network) -> Any:
        """A Filestore instance as Cluster Toolkit's filestore module makes it: one share,
        direct peering with the VPC, IPv4; zonal, or regional for REGIONAL and ENTERPRISE."""
        settings = self._gcp
        tier = fs.tier or "BASIC_HDD"  # the filestore module's default tier
        share = fs.name.replace("-", "_")[:16]
        instance = gcp.filestore.Instance(
            f"{self._name}-fs-{fs.name}",
            name=f"{settings.network_prefix}-{fs.name}",
            project=settings.project,
            location=settings.region if tier in ("REGIONAL", "ENTERPRISE") else settings.zone,
            tier=tier,
            file_shares=gcp.filestore.InstanceFileSharesArgs(
                name=share, capacity_gb=fs.size_gib or min_size_gib("filestore", tier)
            ),
            networks=[
                gcp.filestore.InstanceNetworkArgs(
                    network=network.name, modes=["MODE_IPV4"], connect_mode="DIRECT_PEERING"
                )
            ],
            labels={"railyard-cluster": self._spec.name},
            opts=self._child,
        )
        return instance.networks.apply(lambda n: filestore_mount(fs, n, share))

    def _private_service_access(
        self, network: gcp.compute.Network
    ) -> gcp.servicenetworking.Connection:
        """Private service access on the system VPC, which Managed Lustre needs (Cluster
        Toolkit's private-service-access module): a reserved range and the peering."""
        settings = self._gcp
        reserved = gcp.compute.GlobalAddress(
            f"{self._name}-psa",
            name=f"{settings.network_prefix}-psa",
            project=settings.project,
            purpose="VPC_PEERING",
            address_type="INTERNAL",
            prefix_length=20,
            network=network.id,
            opts=self._child,
        )
        return gcp.servicenetworking.Connection(
            f"{self._name}-psa",
            network=network.id,
            service="servicenetworking.googleapis.com",
            reserved_peering_ranges=[reserved.name],
            opts=self._child,
        )

    def _lustre(
        self,
        fs: SharedFileSystem,
        network: gcp.compute.Network,
        access: gcp.servicenetworking.Connection,
    ) -> Any:
        """A Managed Lustre instance as Cluster Toolkit's managed-lustre module makes it."""
        settings = self._gcp
        instance = gcp.lustre.Instance(
            f"{self._name}-lustre-{fs.name}",
            instance_id=f"{settings.network_prefix}-{fs.name}",
            project=settings.project,
            location=settings.zone,
            network=network.id,
            filesystem=re.sub(r"[^a-z0-9]", "", fs.name)[:8],
            capacity_gib=str(fs.size_gib or 36000),
            per_unit_storage_throughput=fs.tier or "500",
            labels={"railyard-cluster": self._spec.name},
            opts=pulumi.ResourceOptions(parent=self, depends_on=[access]),
        )
        return instance.mount_point.apply(lambda m: lustre_mount(fs, m))


def _addresses(interfaces: list[dict[str, Any]] | None) -> dict[str, str | None]:
    """The private (NIC 0) and external addresses of an instance's interfaces."""
    first = (interfaces or [{}])[0] or {}
    access = (first.get("access_configs") or [{}])[0] or {}
    return {"private_ip": first.get("network_ip"), "public_ip": access.get("nat_ip")}
