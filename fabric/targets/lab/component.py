"""``LabCluster``: a whole cluster on this machine from real parts.

Children: the node image, the management and BMC networks, an address pool per node network
(stable addresses), the stack's login key and one host key per node, state files (private key,
known_hosts, inventory, ibsim net file; paths from ``fabric.state.StateLayout``), ibsim, one
container per node and the Redfish emulator. A RoCE fabric is the spec's managed ``linux``
switch (``LabSwitch``: a container whose ports are the nodes' fabric netdevs; its host key
pinned like a node's), or, without one, a podman bridge network. Outputs: every target's
(``TargetCluster``; ``switches``: the lab switch's Ansible host variables); ``bmc_password`` is
the emulator's (secret) BMC password: ``bmc.password``'s config secret, or one it generated.
"""

from __future__ import annotations

import json
from typing import Any

import pulumi

from fabric.components.config_secret import config_secret
from fabric.components.target import TargetCluster
from fabric.inventory import build_inventory, inventory_text, switch_hosts
from fabric.lab.bmc import system_uuid
from fabric.lab.hardware import with_hca_guids
from fabric.lab.image import image_hash
from fabric.lab.keys import known_hosts_line
from fabric.lab.node import ibsim_environment
from fabric.lab.plan import LabPlan, NetPlan, NodePlan, SwitchPlan, plan_lab
from fabric.spec import ClusterSpec
from fabric.state import StateLayout
from fabric.targets.lab.dynamic_lab import (
    AddressPool,
    IbSim,
    IbSimReaper,
    LabFile,
    LabNetwork,
    LabNode,
    LabSwitchSm,
    NodeImage,
    RedfishEmulator,
    SshKey,
)
from fabric.targets.lab.dynamic_switch import LabSwitch
from fabric.topology.from_spec import graph_from_spec
from fabric.topology.ibsim import ibsim_limits, net_hash, render_net


def bmc_password(spec: ClusterSpec) -> pulumi.Output[str] | None:
    """Return the secret named by ``bmc.password.config``, or None (the emulator generates one)."""
    if spec.bmc is None or spec.bmc.password is None:
        return None
    return config_secret(
        spec.bmc.password.config,
        "bmc.password.config",
        "<password>` or drop bmc.password to let the lab generate one",
    )


class LabCluster(TargetCluster):
    """The one-machine lab built from ``spec``."""

    hosts: pulumi.Output[list[dict[str, Any]]]
    bmc_password: pulumi.Output[str]
    lab_switch: LabSwitch | None  #: the RoCE lab's switch, if the spec declares one

    def __init__(
        self, name: str, spec: ClusterSpec, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("railyard:lab:LabCluster", name, None, opts)
        stack = pulumi.get_stack()
        prefix = pulumi.Config("railyard").get("prefix") or f"railyard-{stack}"
        layout = StateLayout(stack)
        plan = plan_lab(spec, stack, prefix, str(layout.dir))
        child = pulumi.ResourceOptions(parent=self)

        image = NodeImage(f"{name}-image", image_hash(), child)
        mgmt = self._network(f"{name}-mgmt", plan.mgmt)
        bmc_net = self._network(f"{name}-bmc", plan.bmc)
        bridged = plan.fabric if plan.fabric and plan.switch is None else None
        fabric_net = self._network(f"{name}-fabric", bridged) if bridged else None
        hosts = [n.name for n in plan.nodes]
        switch = plan.switch
        addresses = AddressPool(
            f"{name}-mgmt-addresses",
            plan.mgmt.network,
            plan.mgmt.subnet,
            plan.mgmt.gateway,
            [*hosts, switch.name] if switch else hosts,
            plan.fixed,
            "management.addresses",
            child,
        ).assignment
        fabric_addresses: pulumi.Output[dict[str, str]] = (
            AddressPool(
                f"{name}-fabric-addresses",
                plan.fabric.network,
                plan.fabric.subnet,
                plan.fabric.gateway,
                [p.host for p in switch.ports] if switch else hosts,
                {},
                "fabric (RoCE)",
                child,
            ).assignment
            if plan.fabric
            else pulumi.Output.from_input({})
        )

        login = SshKey(f"{name}-login-key", f"railyard-{stack}", child)
        key_file = layout.ssh_key
        LabFile(
            f"{name}-login-key-file",
            str(key_file),
            login.private_key,
            plan.state_dir,
            "600",
            True,
            child,
        )
        machines = [*hosts, switch.name] if switch else hosts
        host_keys = {m: SshKey(f"{name}-{m}-host-key", f"root@{m}", child) for m in machines}
        known_hosts = layout.known_hosts
        kh_content = pulumi.Output.all(
            addresses, *[host_keys[m].public_key for m in machines]
        ).apply(
            lambda v: "".join(
                known_hosts_line([m, v[0][m]], key) + "\n"
                for m, key in zip(machines, v[1:], strict=True)
            )
        )
        LabFile(
            f"{name}-known-hosts", str(known_hosts), kh_content, plan.state_dir, "644", False, child
        )

        ibsim = self._ibsim(name, spec, plan, mgmt) if plan.ibsim else None
        switch_sms = self._switch_sms(name, spec, plan, ibsim) if ibsim else []
        deps = [r for r in (image, mgmt, fabric_net, ibsim, *switch_sms) if r is not None]
        nodes = [
            self._node(
                name, plan, n, addresses, fabric_addresses, image, login, host_keys[n.name], deps
            )
            for n in plan.nodes
        ]
        lab_switch = (
            self._switch(
                name,
                spec,
                plan,
                switch,
                addresses,
                fabric_addresses,
                image,
                login,
                host_keys[switch.name],
                nodes,
            )  # fmt: skip
            if switch
            else None
        )
        emulator = RedfishEmulator(
            f"{name}-bmc-emulator",
            {
                **({"power_state": "Off"} if plan.datacenter else {}),
                "stack": stack,
                "nodes": {n.name: n.container for n in plan.nodes},
                "listen_ip": plan.bmc.gateway,
                "port": plan.bmc_port,
                "notifier_port": plan.notifier_port,
                "state_dir": str(layout.bmc),
                "username": spec.bmc.username if spec.bmc else "admin",
            },
            bmc_password(spec),
            pulumi.ResourceOptions(parent=self, depends_on=[bmc_net, *nodes]),
        )

        bmc_url = f"http://{plan.bmc.gateway}:{plan.bmc_port}"
        lab_json = addresses.apply(
            lambda a: json.dumps(
                {
                    "stack": stack,
                    "prefix": prefix,
                    "nodes": [
                        {
                            "name": n.name,
                            "address": a[n.name],
                            "container": n.container,
                            "sim_host": n.sim_host,
                            "bmc_url": bmc_url,
                            "system_id": system_uuid(stack, n.name),
                        }
                        for n in plan.nodes
                    ],
                    "bmc_credentials": str(layout.bmc_credentials),
                    **(
                        {
                            "switch": {
                                "name": switch.name,
                                "address": a[switch.name],
                                "container": switch.container,
                            }
                        }
                        if switch
                        else {}
                    ),
                },
                indent=1,
            )
        )
        LabFile(
            f"{name}-lab-json", str(layout.lab_json), lab_json, plan.state_dir, "644", False, child
        )
        inventory = addresses.apply(
            lambda a: build_inventory(
                spec,
                a,
                ssh_user=plan.ssh_user,
                private_key_file=str(key_file),
                known_hosts_file=str(known_hosts),
            )
        )
        LabFile(
            f"{name}-inventory",
            str(layout.inventory),
            inventory.apply(inventory_text),
            plan.state_dir,
            "644",
            False,
            pulumi.ResourceOptions(
                parent=self, depends_on=[*nodes, *([lab_switch] if lab_switch else [])]
            ),
        )
        self.lab_switch = lab_switch
        self.bmc_password = pulumi.Output.secret(emulator.out_password)
        self.export(
            spec,
            inventory=inventory,
            switches=addresses.apply(lambda a: switch_hosts(spec, a)) if switch else None,
            hosts=pulumi.Output.all(addresses, fabric_addresses).apply(
                lambda v: [
                    {
                        "name": n.name,
                        "address": v[0][n.name],
                        "container": n.container,
                        "sim_host": n.sim_host,
                        "fabric_address": v[1].get(n.name),
                    }
                    for n in plan.nodes
                ]
            ),
            fabric={
                "kind": spec.fabric.kind,
                "ibsim_server": plan.mgmt.gateway if plan.ibsim else None,
                "ibsim_port": plan.ibsim_port if plan.ibsim else None,
                "net_file": str(layout.ibsim_net) if plan.ibsim else None,
                "roce_network": plan.fabric.model_dump() if plan.fabric else None,
                "roce_switch": switch.model_dump() if switch else None,
            },
            bmc_endpoints=emulator.out_endpoints,
            state_dir=plan.state_dir,
        )

    def _network(self, name: str, net: NetPlan) -> LabNetwork:
        return LabNetwork(
            name, net.network, net.subnet, net.gateway, net.mtu, pulumi.ResourceOptions(parent=self)
        )

    def _ibsim(self, name: str, spec: ClusterSpec, plan: LabPlan, mgmt: LabNetwork) -> IbSim:
        graph = with_hca_guids(graph_from_spec(spec), spec)  # a replaced HCA: another GUID
        net_text = render_net(graph)
        layout = StateLayout.at(plan.state_dir)
        net_file = layout.ibsim_net
        netfile = LabFile(
            f"{name}-ibsim-net",
            str(net_file),
            net_text,
            plan.state_dir,
            "644",
            False,
            pulumi.ResourceOptions(parent=self),
        )
        ibsim = IbSim(
            f"{name}-ibsim",
            str(net_file),
            net_hash(net_text),
            plan.ibsim_port,
            ibsim_limits(graph),
            str(layout.ibsim_log),
            [n.container for n in plan.nodes if n.sim_host],
            pulumi.ResourceOptions(parent=self, depends_on=[netfile, mgmt]),
        )
        IbSimReaper(
            f"{name}-ibsim-reaper",
            str(layout.ibsim_console),
            str(layout.ibsim_log),
            str(layout.logs / "ibsim-reaper.log"),
            ibsim.out_helper,
            {n.name: n.container for n in plan.nodes if n.sim_host},
            pulumi.ResourceOptions(parent=self, depends_on=[ibsim]),
        )
        return ibsim

    def _switch_sms(
        self, name: str, spec: ClusterSpec, plan: LabPlan, ibsim: IbSim
    ) -> list[LabSwitchSm]:
        """The SM of each ``mode: switch`` entry with ``configure: true`` (railyard enables the
        switch's SM; in the lab: OpenSM on this machine attached to that ibsim switch)."""
        ib = spec.fabric.infiniband
        layout = StateLayout.at(plan.state_dir)
        return [
            LabSwitchSm(
                f"{name}-switch-sm-{sm.switch}",
                {
                    "switch": sm.switch,
                    "priority": sm.priority,
                    "routing_engine": ib.routing_engine,
                    "sweep_interval": ib.sweep_interval,
                    "server": plan.mgmt.gateway,
                    "port": plan.ibsim_port,
                    "workdir": str(layout.logs / f"switch-sm-{sm.switch}"),
                    "log": str(layout.logs / f"switch-sm-{sm.switch}.log"),
                },
                ibsim.out_helper,
                pulumi.ResourceOptions(parent=self, depends_on=[ibsim]),
            )
            for sm in (ib.subnet_managers if ib else [])
            if sm.mode == "switch" and sm.configure and sm.switch
        ]

    def _node(
        self,
        name: str,
        plan: LabPlan,
        node: NodePlan,
        addresses: pulumi.Output[dict[str, str]],
        fabric_addresses: pulumi.Output[dict[str, str]],
        image: NodeImage,
        login: SshKey,
        host_key: SshKey,
        deps: list[pulumi.Resource],
    ) -> LabNode:
        def networks(mgmt: dict[str, str], fabric: dict[str, str]) -> dict[str, str]:
            nets = {plan.mgmt.network: mgmt[node.name]}
            if plan.fabric and plan.switch is None and node.name in fabric:
                nets[plan.fabric.network] = fabric[node.name]
            return nets

        env = (
            ibsim_environment(plan.mgmt.gateway, plan.ibsim_port, node.sim_host)
            if node.sim_host
            else {}
        )
        # A node on the lab switch: roce_qos sets its fabric netdev's MTU for real. Only then:
        # every other lab node's inputs stay as they were.
        wired = plan.switch is not None and any(p.host == node.name for p in plan.switch.ports)
        extra: dict[str, Any] = {"capabilities": ["NET_ADMIN"]} if wired else {}
        config = pulumi.Output.all(
            image.tag,
            login.public_key,
            host_key.private_key,
            host_key.public_key,
            addresses,
            fabric_addresses,
        ).apply(
            lambda v: {
                "name": node.name,
                "container": node.container,
                "image": v[0],
                "networks": networks(v[4], v[5]),
                "authorized_key": v[1],
                "host_key_private": v[2],
                "host_key_public": v[3],
                "environment": env,
                "labels": {"railyard.stack": plan.stack, "railyard.prefix": plan.prefix},
                **extra,
            }
        )
        address = addresses.apply(lambda a: a[node.name])
        return LabNode(
            f"{name}-{node.name}",
            config,
            address,
            plan.ssh_user,
            login.private_key,
            pulumi.ResourceOptions(parent=self, depends_on=deps),
            powered_off=plan.datacenter,
        )

    def _switch(
        self,
        name: str,
        spec: ClusterSpec,
        plan: LabPlan,
        switch: SwitchPlan,
        addresses: pulumi.Output[dict[str, str]],
        fabric_addresses: pulumi.Output[dict[str, str]],
        image: NodeImage,
        login: SshKey,
        host_key: SshKey,
        nodes: list[LabNode],
    ) -> LabSwitch:
        """The lab switch: a container like a node on the management network only, one port
        per RoCE node (``fabric.lab.switch``), created after the nodes it wires."""
        assert plan.fabric is not None  # a switch is planned for RoCE fabrics only
        prefix_len = plan.fabric.subnet.split("/")[1]
        containers = {n.name: n.container for n in plan.nodes}
        config = pulumi.Output.all(
            image.tag, login.public_key, host_key.private_key, host_key.public_key, addresses
        ).apply(
            lambda v: {
                "name": switch.name,
                "container": switch.container,
                "image": v[0],
                "networks": {plan.mgmt.network: v[4][switch.name]},
                "authorized_key": v[1],
                "host_key_private": v[2],
                "host_key_public": v[3],
                "labels": {"railyard.stack": plan.stack, "railyard.prefix": plan.prefix},
                "capabilities": ["NET_ADMIN"],  # switch_qos sets MTUs, qdiscs and filters
            }
        )
        links = fabric_addresses.apply(
            lambda f: [
                {
                    "port": p.port,
                    "node_container": containers[p.host],
                    "netdev": p.netdev,
                    "address": f"{f[p.host]}/{prefix_len}",
                }
                for p in switch.ports
            ]
        )
        by_host = {n.name: node for n, node in zip(plan.nodes, nodes, strict=True)}
        node_ids = pulumi.Output.all(
            *[by_host[p.host].out_container_id for p in switch.ports]
        ).apply(lambda ids: {containers[p.host]: i for p, i in zip(switch.ports, ids, strict=True)})
        return LabSwitch(
            f"{name}-{switch.name}",
            config,
            addresses.apply(lambda a: a[switch.name]),
            plan.ssh_user,
            login.private_key,
            links,
            spec.fabric.mtu,
            node_ids,
            pulumi.ResourceOptions(parent=self, depends_on=nodes),
        )
