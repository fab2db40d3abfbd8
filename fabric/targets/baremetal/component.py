"""Bare-metal target: nodes driven through their Redfish BMCs, switches handed to Ansible.

Each node in ``spec.bmc.endpoints`` becomes a :class:`RedfishNode` (read system, a
one-time boot override only when asked, power on, wait for SSH; powered off on destroy),
then a host key pin (``fabric.components.access.pinned_inventory``: the keys the endpoint
declares, else first contact; ``replaced`` accepts a new key once). Each switch in
``spec.fabric.switches`` becomes a :class:`BareMetalSwitch` whose outputs are the
host variables the switch role reads. Stack config (not the spec) carries the
BMC password (a Pulumi secret named by ``bmc.password.config``) and the
provisioning knobs listed in :class:`BareMetalSettings`. Outputs: every target's
(``TargetCluster``); ``bmc_endpoints`` are the nodes' Redfish systems.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi

from fabric.components.access import pinned_inventory
from fabric.components.target import TargetCluster
from fabric.inventory import switch_hostvars
from fabric.spec import (
    ClusterSpec,
    SpecError,
    Switch,
    provision_problems,
)
from fabric.targets.baremetal.dynamic_redfish import RedfishNode
from fabric.targets.baremetal.rules import baremetal_settings_problems


@dataclass(frozen=True)
class BareMetalSettings:
    """Provisioning knobs read from stack config ``railyard:<key>``."""

    boot_target: str | None = None  # bootTarget: one-time boot of nodes found powered off
    settle_target: str = "Hdd"  # settleBootTarget: used when the BMC ignores "Once"
    ssh_port: int = 22  # sshPort
    ssh_timeout: float = 900.0  # sshTimeoutSeconds
    power_timeout: float = 120.0  # powerTimeoutSeconds
    restart_if_on: bool = False  # restartIfOn

    @classmethod
    def from_config(cls, config: pulumi.Config) -> BareMetalSettings:
        """Read the settings from stack config, defaults for the keys not set."""
        return cls(
            boot_target=config.get("bootTarget") or cls.boot_target,
            settle_target=config.get("settleBootTarget") or cls.settle_target,
            ssh_port=config.get_int("sshPort") or cls.ssh_port,
            ssh_timeout=config.get_float("sshTimeoutSeconds") or cls.ssh_timeout,
            power_timeout=config.get_float("powerTimeoutSeconds") or cls.power_timeout,
            restart_if_on=bool(config.get_bool("restartIfOn")),
        )


class BareMetalSwitch(pulumi.ComponentResource):
    """A declared switch: no API call, its configuration is the output handed to Ansible."""

    hostvars: pulumi.Output[dict[str, Any]]

    def __init__(
        self, name: str, switch: Switch, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("railyard:baremetal:Switch", name, None, opts)
        self.hostvars = pulumi.Output.from_input(switch_hostvars(switch))
        self.register_outputs({"hostvars": self.hostvars})


class BaremetalCluster(TargetCluster):
    """Every node of a bare-metal cluster brought up through Redfish, plus its switches."""

    hosts: pulumi.Output[dict[str, Any]]

    def __init__(
        self, name: str, spec: ClusterSpec, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        config = pulumi.Config()
        settings = BareMetalSettings.from_config(config)
        # What validate checks, the target, and the boot targets of the stack config.
        problems = provision_problems(spec, "baremetal") + baremetal_settings_problems(settings)
        if problems:
            raise SpecError(problems)
        assert spec.bmc is not None and spec.bmc.password is not None  # checked above
        super().__init__("railyard:baremetal:Cluster", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        password = config.require_secret(spec.bmc.password.config)

        nodes: dict[str, RedfishNode] = {}
        for host in spec.hosts:
            endpoint = spec.bmc.endpoints[host]
            nodes[host] = RedfishNode(
                f"{name}-{host}",
                node=host,
                url=endpoint.url,
                system_id=endpoint.system_id,
                username=spec.bmc.username,
                password=password,
                verify_tls=spec.bmc.verify_tls,
                address=str(spec.management.addresses[host]),
                boot_target=endpoint.boot_once or settings.boot_target,
                settle_target=settings.settle_target,
                ssh_port=settings.ssh_port,
                ssh_timeout=settings.ssh_timeout,
                power_timeout=settings.power_timeout,
                restart_if_on=settings.restart_if_on,
                boot_running=endpoint.boot_once is not None,
                replaced=endpoint.replaced,
                opts=child,
            )
        switches = {
            sw.name: BareMetalSwitch(f"{name}-switch-{sw.name}", sw, child)
            for sw in spec.fabric.switches
        }

        hosts = pulumi.Output.all(
            **{
                host: pulumi.Output.all(
                    address=str(spec.management.addresses[host]),
                    serial=node.serial,
                    macs=node.macs,
                    power_state=node.power_state,
                    boot_override_target=node.boot_override_target,
                    boot_override_enabled=node.boot_override_enabled,
                    boot_note=node.boot_note,
                )
                for host, node in nodes.items()
            }
        )
        bmc_endpoints = pulumi.Output.all(
            **{
                host: node.system_path.apply(
                    lambda path, e=spec.bmc.endpoints[host], user=spec.bmc.username: {
                        "url": e.url,
                        "system_id": e.system_id or _last_part(path),
                        "username": user,
                    }
                )
                for host, node in nodes.items()
            }
        )
        # Each node's address once SSH answers there: its key is pinned after that, and the
        # inventory (so the hand-off) waits for every pin.
        ready = {
            host: node.ssh_banner.apply(lambda _, a=str(spec.management.addresses[host]): a)
            for host, node in nodes.items()
        }
        endpoints = spec.bmc.endpoints
        inventory = pinned_inventory(
            name,
            spec,
            private=dict(ready),
            public=dict(ready),
            sources={
                h: {"declared": True, "keys": list(endpoints[h].host_keys)}
                if endpoints[h].host_keys
                else None
                for h in spec.hosts
            },
            replaced={h: endpoints[h].replaced for h in spec.hosts},
            parent=self,
            config=config,
        )
        self.export(
            spec,
            inventory=inventory,
            hosts=hosts,
            switches=pulumi.Output.all(**{n: s.hostvars for n, s in switches.items()}),
            bmc_endpoints=bmc_endpoints,
        )


def _last_part(path: str | None) -> str | None:
    """``/redfish/v1/Systems/1`` -> ``1`` (None stays None)."""
    return path.rstrip("/").rsplit("/", 1)[-1] if path else None
