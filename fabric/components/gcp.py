"""GCP target: A3 (a3-highgpu-8g) and A3 Mega (a3-megagpu-8g) with GPUDirect-TCPX(O).

Children: a system VPC and subnet (NIC 0, the management / SSH network), one VPC
and subnet per GPU NIC with the GPU MTU (8244), firewall rules allowing traffic
inside each network, a compact placement policy (COLLOCATED), and one instance
per host with gVNIC on every interface and ``on_host_maintenance: TERMINATE``.
Head nodes (login, controller) get the system NIC only and an external address.
Each instance's host key is pinned from its ``hostkeys/`` guest attributes (else at first
contact), through ``access.bastion`` when set (``fabric.components.access``).
GPU NIC counts come from :mod:`fabric.catalog`. Outputs: every target's (``TargetCluster``;
``fabric`` carries the VPCs, also exported as ``networks``; no switches, no BMCs).
"""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_gcp as gcp

from fabric.components.access import pinned_inventory
from fabric.components.target import TargetCluster
from fabric.model.gcp import gpu_nic_count, gpu_subnet_cidrs
from fabric.spec import ClusterSpec, NodeGroup, SpecError, provision_problems

#: Network tag of head nodes (the SSH firewall rule targets it).
HEAD_TAG = "railyard-head"


class GcpCluster(TargetCluster):
    """An A3 / A3 Mega cluster on Compute Engine, described by a railyard cluster spec."""

    hosts: pulumi.Output[dict[str, Any]]
    networks: pulumi.Output[dict[str, Any]]

    def __init__(
        self, name: str, spec: ClusterSpec, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        problems = provision_problems(spec, "gcp")  # what validate checks, and the target
        if problems:
            raise SpecError(problems)
        assert spec.gcp is not None  # checked above
        super().__init__("railyard:gcp:Cluster", name, None, opts)
        self._name, self._spec, self._gcp = name, spec, spec.gcp
        self._child = pulumi.ResourceOptions(parent=self)
        config = pulumi.Config()

        nics = max(gpu_nic_count(group) for group in spec.nodes)
        system = self._vpc("sys", str(self._gcp.system_subnet_cidr), mtu=None)
        gpus = [
            self._vpc(f"gpu-{i}", cidr, mtu=self._gcp.gpu_nic_mtu)
            for i, cidr in enumerate(gpu_subnet_cidrs(self._gcp, nics))
        ]
        self._ssh_rule(system[0], config.get("sshIngressCidr"))
        policy = self._placement_policy()

        instances: dict[str, gcp.compute.Instance] = {}
        facts: dict[str, dict[str, Any]] = {}
        for group in spec.nodes:
            count = gpu_nic_count(group)
            for host in group.hosts:
                instances[host] = self._instance(
                    host, group, system[1], gpus[:count], policy, config
                )
                facts[host] = {
                    "role": group.role,
                    "machine_type": group.instance_type,
                    "nic_count": 1 + count,
                    "gpu_nics": count,
                    "gpu_nic_mtu": self._gcp.gpu_nic_mtu if count else None,
                }

        networks = pulumi.Output.all(
            **{
                net_name: pulumi.Output.all(name=net.name, mtu=net.mtu, cidr=sub.ip_cidr_range)
                for net_name, (net, sub) in {
                    "sys": system,
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
        inventory = pinned_inventory(
            name,
            spec,
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
            parent=self,
            config=config,
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
    ) -> gcp.compute.Instance:
        """One VM: system NIC first, then one gVNIC per GPU network."""
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
                for _, subnet in gpu_networks
            ),
        ]
        metadata = {"enable-guest-attributes": "TRUE"}  # the guest agent publishes hostkeys/
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
            scheduling=gcp.compute.InstanceSchedulingArgs(
                on_host_maintenance="TERMINATE", automatic_restart=True
            )
            if compute
            else None,
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
