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
"""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_gcp as gcp

from fabric.components.cloud import CloudCluster
from fabric.components.cloudinit import boot_cloud_config
from fabric.spec import ClusterSpec, NodeGroup
from fabric.targets.gcp.catalog import GcpA3Blueprint, gcp_blueprint
from fabric.targets.gcp.model import gpu_nic_count, gpu_subnet_cidrs
from fabric.targets.gcp.section import GcpSpec

#: Network tag of head nodes (the SSH firewall rule targets it).
HEAD_TAG = "railyard-head"


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

        instances: dict[str, gcp.compute.Instance] = {}
        facts: dict[str, dict[str, Any]] = {}
        for group in spec.nodes:
            count = gpu_nic_count(group)
            extra = second if count else []
            for host in group.hosts:
                instances[host] = self._instance(
                    host, group, system[1], gpus[:count], policy, config, second=extra
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
        second: list[tuple[gcp.compute.Network, gcp.compute.Subnetwork]] | None = None,
    ) -> gcp.compute.Instance:
        """One VM: system NIC first, A3 Ultra's second gVNIC, then one NIC per GPU network
        (gVNIC; MRDMA on A3 Ultra)."""
        second = second or []
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
        if key := config.get("sshPublicKey"):
            metadata["ssh-keys"] = f"{self._spec.management.ssh_user}:{key}"
        return gcp.compute.Instance(
            f"{self._name}-{host}",
            name=host,
            project=self._gcp.project,
            zone=self._gcp.zone,
            machine_type=group.instance_type,
            boot_disk=gcp.compute.InstanceBootDiskArgs(
                initialize_params=gcp.compute.InstanceBootDiskInitializeParamsArgs(
                    image=self._gcp.image,
                    size=config.get_int("bootDiskSizeGb") or 200,
                    type=config.get("bootDiskType"),
                )
            ),
            network_interfaces=interfaces,
            scheduling=compute_scheduling(self._gcp) if compute else None,
            reservation_affinity=reservation_affinity(self._gcp) if compute else None,
            resource_policies=policy.self_link if compute and policy else None,
            tags=None if compute else [HEAD_TAG],
            metadata=metadata,
            labels={"railyard-cluster": self._spec.name, "railyard-role": group.role},
            opts=self._child,
        )


def _addresses(interfaces: list[dict[str, Any]] | None) -> dict[str, str | None]:
    """The private (NIC 0) and external addresses of an instance's interfaces."""
    first = (interfaces or [{}])[0] or {}
    access = (first.get("access_configs") or [{}])[0] or {}
    return {"private_ip": first.get("network_ip"), "public_ip": access.get("nat_ip")}
