"""The Ansible inventory of a cluster: groups by role, subnet managers, fabric hosts.

Every target (lab, bare metal, clouds) builds its inventory here from the spec and the
addresses it provisioned, so the roles see the same groups everywhere; the hand-off writes
:func:`inventory_text` of it to ``StateLayout(stack).inventory``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from fabric.hostkeys import JumpHost, ssh_common_args
from fabric.spec import ClusterSpec
from fabric.state import StateLayout

ROLE_GROUPS = ("compute", "controller", "login", "sm")


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
) -> dict[str, Any]:
    """Return the YAML inventory (as a dict) for ``spec`` with each host at ``addresses[host]``.

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
    common, hosts = direct, {h: {"ansible_host": addresses[h]} for h in spec.hosts}
    bastion = spec.access.bastion
    if bastion is not None:
        node = bastion.host in spec.hosts
        address = bastion_address or (addresses[bastion.host] if node else bastion.host)
        jump = JumpHost(address=address, user=bastion.user, port=bastion.port)
        common = ssh_common_args(known_hosts_file, jump, private_key_file)
        if bastion.host in hosts:  # the bastion node itself, at the address the jump uses
            hosts[bastion.host] = {"ansible_host": address, "ansible_ssh_common_args": direct}
    children: dict[str, Any] = {}
    for role in ROLE_GROUPS:
        members = spec.hosts_with_role(role)
        children[role] = {"hosts": {h: {} for h in members}}
    sms = spec.fabric.infiniband.subnet_managers if spec.fabric.infiniband else []
    unknown = [sm.host for sm in sms if sm.host not in spec.hosts]
    if unknown:
        raise InventoryError(f"fabric.infiniband.subnet_managers names unknown host(s) {unknown}")
    children["subnet_managers"] = {
        "hosts": {sm.host: {"subnet_manager_priority": sm.priority} for sm in sms}
    }
    children["fabric_hosts"] = {"hosts": {h: {} for h, g in spec.hosts.items() if g.hcas}}
    controller = spec.slurm.controller or next(iter(spec.hosts_with_role("controller")), None)
    children["slurm_controller"] = {"hosts": {controller: {}} if controller else {}}
    return {
        "all": {
            "vars": {
                "ansible_user": ssh_user,
                "ansible_ssh_private_key_file": private_key_file,
                "ansible_ssh_common_args": common,
                "railyard_cluster": spec.name,
                "railyard_target": spec.target,
            },
            "hosts": hosts,
            "children": children,
        }
    }


def provisioned_inventory(
    spec: ClusterSpec,
    addresses: dict[str, str],
    layout: StateLayout,
    *,
    private_key_file: str | None = None,
    known_hosts_file: str | None = None,
    bastion_address: str | None = None,
) -> dict[str, Any]:
    """The inventory of a bare-metal or cloud target: ``spec.management.ssh_user`` with the given
    key and known_hosts files (``~`` expanded, made absolute), by default the stack's
    ``layout.provided_ssh_key`` and ``layout.known_hosts``; ``bastion_address`` as in
    :func:`build_inventory`."""
    key = Path(private_key_file).expanduser() if private_key_file else layout.provided_ssh_key
    known = Path(known_hosts_file).expanduser() if known_hosts_file else layout.known_hosts
    return build_inventory(
        spec,
        addresses,
        ssh_user=spec.management.ssh_user,
        private_key_file=str(key.absolute()),
        known_hosts_file=str(known.absolute()),
        bastion_address=bastion_address,
    )


def inventory_text(inventory: dict[str, Any]) -> str:
    """The inventory as YAML text, hosts and groups in the order they were built (the order
    Ansible runs them in): what the hand-off writes and the checks take."""
    return yaml.safe_dump(inventory, sort_keys=False, default_flow_style=False)
