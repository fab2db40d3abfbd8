"""The Ansible inventory of a cluster: groups by role, subnet managers, fabric hosts, switches.

Every target (lab, bare metal, clouds) builds its inventory here from the spec and the
addresses it provisioned, so the roles see the same groups everywhere; the hand-off writes
:func:`inventory_text` of it to ``StateLayout(stack).inventory``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from fabric.hostkeys import JumpHost, ssh_common_args
from fabric.spec import ClusterSpec, Switch
from fabric.spec.egress import egress_of, image_needs
from fabric.state import StateLayout

ROLE_GROUPS = ("compute", "controller", "login", "sm")

#: How Ansible talks to each switch OS: (ansible_network_os, ansible_connection). SONiC's
#: collection ships with ``ansible``; Cumulus Linux and Linux switches are Linux hosts over SSH.
NETWORK_OS: dict[str, tuple[str | None, str | None]] = {
    "sonic": ("dellemc.enterprise_sonic.sonic", "ansible.netcommon.network_cli"),
    "cumulus": (None, "ssh"),
    "linux": (None, "ssh"),
    "unmanaged": (None, None),
}


class InventoryError(ValueError):
    """The spec and the provisioned addresses do not fit together."""


def build_inventory(
    spec: ClusterSpec,
    addresses: dict[str, str],
    *,
    ssh_user: str,
    private_key_file: str,
    known_hosts_file: str,
    bastion_address: str | None = None,
    host_vars: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """Return the YAML inventory (as a dict) for ``spec`` with each host at ``addresses[host]``
    (plus ``host_vars[host]``: a node's own SSH login or port, target existing).

    With ``spec.access.bastion`` every host is reached through it (``bastion_address``: where
    the bastion is, default its ``host``); a bastion that is a node of the spec is reached
    directly at ``bastion_address`` (a cloud's public address; default its own address) and
    the others through it.
    """
    missing = [h for h in spec.hosts if h not in addresses]
    if missing:
        raise InventoryError(
            f"no address for host(s) {missing}: provision them before building the inventory"
        )
    for path, what in (
        (private_key_file, "private_key_file"),
        (known_hosts_file, "known_hosts_file"),
    ):
        if not Path(path).is_absolute():
            raise InventoryError(f"{what} must be an absolute path, got {path!r}")
    direct = ssh_common_args(known_hosts_file)
    common = direct
    hosts = {h: {"ansible_host": addresses[h], **(host_vars or {}).get(h, {})} for h in spec.hosts}
    bastion = spec.access.bastion
    if bastion is not None:
        node = bastion.host in spec.hosts
        address = bastion_address or (addresses[bastion.host] if node else bastion.host)
        jump = JumpHost(address=address, user=bastion.user, port=bastion.port)
        common = ssh_common_args(known_hosts_file, jump, private_key_file)
        if bastion.host in hosts:  # the bastion node itself, at the address the jump uses
            hosts[bastion.host] = {
                **hosts[bastion.host],
                "ansible_host": address,
                "ansible_ssh_common_args": direct,
            }
    children: dict[str, Any] = {}
    for role in ROLE_GROUPS:
        members = spec.hosts_with_role(role)
        children[role] = {"hosts": {h: {} for h in members}}
    # railyard runs OpenSM only for managed entries: an external or switch SM is not its own
    sms = [
        sm
        for sm in (spec.fabric.infiniband.subnet_managers if spec.fabric.infiniband else [])
        if sm.mode == "managed" and sm.host is not None
    ]
    unknown = [sm.host for sm in sms if sm.host not in spec.hosts]
    if unknown:
        raise InventoryError(f"fabric.infiniband.subnet_managers names unknown host(s) {unknown}")
    children["subnet_managers"] = {
        "hosts": {sm.host: {"subnet_manager_priority": sm.priority} for sm in sms}
    }
    children["fabric_hosts"] = {"hosts": {h: {} for h, g in spec.hosts.items() if g.hcas}}
    controller = spec.slurm.controller or next(iter(spec.hosts_with_role("controller")), None)
    children["slurm_controller"] = {"hosts": {controller: {}} if controller else {}}
    children["switches"] = {"hosts": switch_hosts(spec, addresses)}
    return {
        "all": {
            "vars": {
                "ansible_user": ssh_user,
                "ansible_ssh_private_key_file": private_key_file,
                "ansible_ssh_common_args": common,
                "railyard_cluster": spec.name,
                "railyard_target": spec.target,
                **storage_vars(spec),
                **preflight_vars(spec),
            },
            "hosts": hosts,
            "children": children,
        }
    }


def storage_shared_entries(
    spec: ClusterSpec, servers: Mapping[str, str] | None = None
) -> list[dict[str, str]]:
    """The ``storage`` role's ``storage_shared``: each of ``spec.storage.shared`` whose server is
    known, in spec order. ``nfs`` names its own; a kind the target creates takes its address from
    ``servers`` (name -> address: a cloud's handoff passes what it created) and is left out
    without one (the role then fails naming it: ``storage_declared``)."""
    out: list[dict[str, str]] = []
    for fs in spec.storage.shared if spec.storage else []:
        server = fs.server if fs.kind == "nfs" else (servers or {}).get(fs.name)
        if server is None:
            continue
        out.append(
            {
                "name": fs.name,
                "kind": fs.kind,
                "server": server,
                "export": fs.export,
                "mount": fs.mount,
                "options": fs.options or "",
            }
        )
    return out


def storage_vars(spec: ClusterSpec) -> dict[str, Any]:
    """The ``storage`` role's variables when the spec has ``storage:``: the shared file systems
    whose server the spec names, every declared name, and the scratch layout; none without."""
    storage = spec.storage
    if storage is None:
        return {}
    scratch = storage.scratch
    return {
        "storage_shared": storage_shared_entries(spec),
        "storage_declared": [fs.name for fs in storage.shared],
        "storage_scratch": (
            {"mount": scratch.mount, "devices": scratch.devices, "filesystem": scratch.filesystem}
            if scratch is not None
            else {}
        ),
    }


def preflight_vars(spec: ClusterSpec) -> dict[str, Any]:
    """The ``preflight`` role's variables where nodes boot a vendor image (the target's section
    has an ``egress`` block: the clouds): per host, what its image must carry (the names of
    :func:`fabric.spec.egress.needs`), and whether egress is offline (then every need is the
    image's, else only those no role installs). Other targets: none, the play skips."""
    egress = egress_of(spec)
    if egress is None:
        return {}
    return {
        "preflight_needs": {h: n for h, n in image_needs(spec).items() if n},
        "preflight_offline": egress.mode == "offline",
    }


def switch_hostvars(switch: Switch, address: str | None = None) -> dict[str, Any]:
    """The Ansible host variables of one switch, as switch_qos reads them: its OS, ports,
    connection, and ``switch_qos_apply`` when the spec says ``manage: true``."""
    hostvars: dict[str, Any] = {
        "switch_name": switch.name,
        "switch_os": switch.os,
        "switch_role": switch.role,
        "switch_managed": switch.os != "unmanaged",
        "switch_qos_apply": switch.manage,
        "switch_qos_interfaces": [port.name for port in switch.ports],
        "ansible_user": switch.ssh_user,
    }
    if switch.os != "unmanaged":
        hostvars["switch_qos_os"] = switch.os
    if address or switch.address:
        hostvars["ansible_host"] = address or switch.address
    network_os, connection = NETWORK_OS[switch.os]
    if network_os:
        hostvars["ansible_network_os"] = network_os
    if connection:
        hostvars["ansible_connection"] = connection
    return hostvars


def switch_hosts(spec: ClusterSpec, addresses: dict[str, str]) -> dict[str, Any]:
    """The ``switches`` group: every switch the spec marks ``manage: true`` (at
    ``addresses[name]``, e.g. the lab's switch container, else the spec's ``address``). They
    sit in that group only, not in ``all.hosts``, so node plays and checks never address them;
    unmanaged switches are never contacted."""
    out: dict[str, Any] = {}
    for switch in spec.fabric.switches:
        if not switch.manage:
            continue
        address = addresses.get(switch.name)
        if switch.manage and not (address or switch.address):
            raise InventoryError(
                f"switch {switch.name!r} is managed but has no address: set "
                "fabric.switches[].address"
            )
        out[switch.name] = switch_hostvars(switch, address)
    return out


def provisioned_inventory(
    spec: ClusterSpec,
    addresses: dict[str, str],
    layout: StateLayout,
    *,
    private_key_file: str | None = None,
    known_hosts_file: str | None = None,
    bastion_address: str | None = None,
    host_vars: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """The inventory of a bare-metal, cloud or existing target: ``spec.management.ssh_user``
    with the given key and known_hosts files (``~`` expanded, made absolute), by default the stack's
    ``layout.provided_ssh_key`` and ``layout.known_hosts``; ``bastion_address`` as in
    :func:`build_inventory`, and ``host_vars``."""
    key = Path(private_key_file).expanduser() if private_key_file else layout.provided_ssh_key
    known = Path(known_hosts_file).expanduser() if known_hosts_file else layout.known_hosts
    return build_inventory(
        spec,
        addresses,
        ssh_user=spec.management.ssh_user,
        private_key_file=str(key.absolute()),
        known_hosts_file=str(known.absolute()),
        bastion_address=bastion_address,
        host_vars=host_vars,
    )


def inventory_text(inventory: dict[str, Any]) -> str:
    """The inventory as YAML text, hosts and groups in the order they were built (the order
    Ansible runs them in): what the hand-off writes and the checks take."""
    return yaml.safe_dump(inventory, sort_keys=False, default_flow_style=False)
