"""Bare-metal target: nodes driven through their Redfish BMCs, switches handed to Ansible.

Each node in ``spec.bmc.endpoints`` becomes a :class:`RedfishNode` (read system,
one-time boot override, power on, wait for SSH). Each switch in
``spec.fabric.switches`` becomes a :class:`BareMetalSwitch` whose outputs are the
host variables the switch role reads. Stack config (not the spec) carries the
BMC password (a Pulumi secret named by ``bmc.password.config``) and the
provisioning knobs listed in :class:`BareMetalSettings`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pulumi

from fabric.components.dynamic_redfish import RedfishNode
from fabric.spec import ClusterSpec, SpecProblems, Switch, cross_field_problems

#: How Ansible talks to each switch OS: (ansible_network_os, ansible_connection).
#: SONiC's collection ships with ``ansible``; Cumulus Linux is a Linux host over SSH;
#: ONYX needs the ``mellanox.onyx`` collection installed separately.
NETWORK_OS: dict[str, tuple[str | None, str | None]] = {
    "sonic": ("dellemc.enterprise_sonic.sonic", "ansible.netcommon.network_cli"),
    "cumulus": (None, "ssh"),
    "onyx": ("mellanox.onyx.onyx", "ansible.netcommon.network_cli"),
    "unmanaged": (None, None),
}
#: Boot targets railyard asks for (Redfish BootSourceOverrideTarget values).
BOOT_TARGETS = ("Pxe", "Hdd", "Cd", "UefiHttp", "UefiTarget", "Usb")


@dataclass(frozen=True)
class BareMetalSettings:
    """Provisioning knobs read from stack config ``railyard:<key>``."""

    boot_target: str = "Pxe"  # bootTarget
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


def baremetal_problems(spec: ClusterSpec, settings: BareMetalSettings) -> list[tuple[str, str]]:
    """The spec's own cross-field problems plus what the bare-metal target needs."""
    problems = list(cross_field_problems(spec))
    if spec.target != "baremetal":
        problems.append(("target", f"{spec.target!r}: this component provisions baremetal"))
    bmc = spec.bmc
    if bmc is None:
        return problems + [("bmc", "target baremetal needs a bmc block with endpoints")]
    if bmc.password is None:
        problems.append(
            ("bmc.password", "set {config: bmcPassword} and `pulumi config set --secret "
             "bmcPassword ...`")
        )
    for host in spec.hosts:
        if host not in bmc.endpoints:
            problems.append((f"bmc.endpoints.{host}", "every node needs a Redfish endpoint url"))
        if host not in spec.management.addresses:
            problems.append(
                (f"management.addresses.{host}", "every bare-metal node needs a fixed address")
            )
    for host, endpoint in bmc.endpoints.items():
        if endpoint.url.startswith("http://") and bmc.verify_tls:
            problems.append(
                (f"bmc.endpoints.{host}.url",
                 "plain http sends the BMC password unencrypted; use https://, or set "
                 "bmc.verify_tls: false to accept it knowingly (lab BMCs)")
            )
    for key, value in (("bootTarget", settings.boot_target),
                       ("settleBootTarget", settings.settle_target)):
        if value not in BOOT_TARGETS:
            problems.append((f"config railyard:{key}", f"{value!r}; use one of "
                             f"{', '.join(BOOT_TARGETS)}"))
    for index, switch in enumerate(spec.fabric.switches):
        if switch.os != "unmanaged" and not switch.address:
            problems.append((f"fabric.switches[{index}].address",
                             f"{switch.os} switch {switch.name!r} needs a management address"))
    return problems


def switch_hostvars(switch: Switch) -> dict[str, Any]:
    """The Ansible host variables of one switch, as the switch role reads them."""
    hostvars: dict[str, Any] = {
        "switch_name": switch.name,
        "switch_os": switch.os,
        "switch_role": switch.role,
        "switch_managed": switch.os != "unmanaged",
    }
    if switch.address:
        hostvars["ansible_host"] = switch.address
    network_os, connection = NETWORK_OS[switch.os]
    if network_os:
        hostvars["ansible_network_os"] = network_os
    if connection:
        hostvars["ansible_connection"] = connection
    return hostvars


class BareMetalSwitch(pulumi.ComponentResource):
    """A declared switch: no API call, its configuration is the output handed to Ansible."""

    hostvars: pulumi.Output[dict[str, Any]]

    def __init__(
        self, name: str, switch: Switch, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("railyard:baremetal:Switch", name, None, opts)
        self.hostvars = pulumi.Output.from_input(switch_hostvars(switch))
        self.register_outputs({"hostvars": self.hostvars})


class BaremetalCluster(pulumi.ComponentResource):
    """Every node of a bare-metal cluster brought up through Redfish, plus its switches."""

    inventory: pulumi.Output[Any]
    hosts: pulumi.Output[dict[str, Any]]
    switches: pulumi.Output[dict[str, Any]]

    def __init__(
        self, name: str, spec: ClusterSpec, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        config = pulumi.Config()
        settings = BareMetalSettings.from_config(config)
        problems = baremetal_problems(spec, settings)
        if problems:
            raise SpecProblems(problems)
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
                boot_target=settings.boot_target,
                settle_target=settings.settle_target,
                ssh_port=settings.ssh_port,
                ssh_timeout=settings.ssh_timeout,
                power_timeout=settings.power_timeout,
                restart_if_on=settings.restart_if_on,
                opts=child,
            )
        switches = {
            sw.name: BareMetalSwitch(f"{name}-switch-{sw.name}", sw, child)
            for sw in spec.fabric.switches
        }

        self.hosts = pulumi.Output.all(
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
        self.switches = pulumi.Output.all(**{n: s.hostvars for n, s in switches.items()})
        addresses = {h: str(a) for h, a in spec.management.addresses.items()}
        # Depends on every node, so the hand-off runs only once SSH answers everywhere.
        self.inventory = pulumi.Output.all(*[n.ssh_banner for n in nodes.values()]).apply(
            lambda _: _build_inventory(spec, addresses, config)
        )
        self.register_outputs(
            {"inventory": self.inventory, "hosts": self.hosts, "switches": self.switches}
        )


def _build_inventory(spec: ClusterSpec, addresses: dict[str, str], config: pulumi.Config) -> Any:
    """The shared Ansible inventory over the fixed management addresses.

    Key and known_hosts files come from config ``sshPrivateKeyFile`` / ``knownHostsFile``
    (``~`` expanded), by default ``state/<stack>/id_ed25519`` and ``state/<stack>/known_hosts``.
    """
    from fabric.inventory import build_inventory

    state = Path("state") / pulumi.get_stack()
    key = Path(config.get("sshPrivateKeyFile") or state / "id_ed25519").expanduser()
    known = Path(config.get("knownHostsFile") or state / "known_hosts").expanduser()
    return build_inventory(
        spec,
        addresses,
        ssh_user=spec.management.ssh_user,
        private_key_file=str(key.absolute()),
        known_hosts_file=str(known.absolute()),
    )
