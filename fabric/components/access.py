"""How a provisioned cluster is reached: host keys pinned, then the inventory, through the bastion.

:func:`pinned_inventory` gives every node a :class:`~fabric.components.dynamic_hostkeys.HostKeyPin`
(the bastion first, the others through it) and builds the inventory from the pinned addresses,
so the hand-off and the checks, which take the inventory, start only once every key is
pinned. Used by the cloud targets; the bastion is ``spec.access.bastion`` (an address, or a
node of the spec reached at its public address).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pulumi

from fabric.components.dynamic_hostkeys import HostKeyPin
from fabric.inventory import provisioned_inventory
from fabric.spec import ClusterSpec
from fabric.state import StateLayout

#: How long a pin waits for the cloud's report or the first SSH answer (config hostKeyTimeout).
DEFAULT_TIMEOUT = 600.0


def pinned_inventory(
    name: str,
    spec: ClusterSpec,
    *,
    private: dict[str, pulumi.Input[str]],
    public: dict[str, pulumi.Input[str | None]],
    sources: dict[str, pulumi.Input[dict[str, Any]] | None],
    parent: pulumi.Resource,
    config: pulumi.Config | None = None,
    replaced: dict[str, str | None] | None = None,
) -> pulumi.Output[dict[str, Any]]:
    """Pin every host's key and return the inventory over the pinned addresses.

    ``private``: host -> the address the controller (or the bastion) reaches it at;
    ``public``: host -> its public address (read for a bastion that is a node);
    ``sources``: host -> where the cloud reports its keys (``reported_host_keys``), the keys
    the spec declares (``{"declared": True, "keys": [...]}``), or None;
    ``replaced``: host -> its ``replaced`` mark (a change accepts a new host key once).
    Key and known_hosts files: config ``sshPrivateKeyFile`` / ``knownHostsFile``, by default
    ``state/<stack>/id_ed25519`` and ``state/<stack>/known_hosts``.
    """
    config = config or pulumi.Config()
    layout = StateLayout(pulumi.get_stack())
    key_opt, known_opt = config.get("sshPrivateKeyFile"), config.get("knownHostsFile")
    key = str((Path(key_opt).expanduser() if key_opt else layout.provided_ssh_key).absolute())
    known = str((Path(known_opt).expanduser() if known_opt else layout.known_hosts).absolute())
    timeout = config.get_float("hostKeyTimeout") or DEFAULT_TIMEOUT
    child = pulumi.ResourceOptions(parent=parent)
    common = {"known_hosts": known, "private_key": key, "timeout": timeout}

    bastion = spec.access.bastion
    jump: pulumi.Output[dict[str, Any]] | None = None
    jump_pin: HostKeyPin | None = None
    jump_address: pulumi.Input[str | None] = None
    if bastion is not None:
        node = bastion.host in spec.hosts
        jump_address = public[bastion.host] if node else bastion.host
        jump_pin = HostKeyPin(
            f"{name}-hostkey-bastion",
            host=bastion.host if node else "bastion",
            address=pulumi.Output.from_input(jump_address).apply(_required(bastion.host)),
            user=bastion.user,
            port=bastion.port,
            source=sources.get(bastion.host) if node else None,
            opts=child,
            **common,
        )
        jump = jump_pin.address.apply(
            lambda a: {"address": a, "user": bastion.user, "port": bastion.port}
        )
    after = pulumi.ResourceOptions(parent=parent, depends_on=[jump_pin] if jump_pin else [])
    pins = {
        host: HostKeyPin(
            f"{name}-hostkey-{host}",
            host=host,
            address=private[host],
            user=spec.management.ssh_user,
            source=sources.get(host),
            jump=jump,
            replaced=(replaced or {}).get(host),
            opts=after,
            **common,
        )
        for host in spec.hosts
        if bastion is None or host != bastion.host
    }
    addresses = pulumi.Output.all(**{h: p.address for h, p in pins.items()})
    if bastion is not None and jump_pin is not None and bastion.host in spec.hosts:
        addresses = pulumi.Output.all(addresses, private[bastion.host]).apply(
            lambda v: {**v[0], bastion.host: v[1]}
        )
    pinned_jump = jump_pin.address if jump_pin is not None else None
    # A bastion node's ansible_host is its public address; the nodes reach each other (Slurm's
    # NodeAddr and SlurmctldHost address, /etc/hosts) at the private ones.
    inside = (
        pulumi.Output.all(**{h: private[h] for h in spec.hosts})
        if bastion is not None and bastion.host in spec.hosts
        else pulumi.Output.from_input({})
    )
    return pulumi.Output.all(addresses, pinned_jump, inside).apply(
        lambda v: provisioned_inventory(
            spec,
            v[0],
            layout,
            private_key_file=key_opt,
            known_hosts_file=known_opt,
            bastion_address=v[1],
            host_vars=_private_addresses(v[2]),
        )
    )


def _private_addresses(private: dict[str, str]) -> dict[str, dict[str, str]]:
    """Host vars naming each host's private address as the one the cluster uses."""
    return {
        host: {"slurm_node_addr": address, "cluster_hosts_address_var": "slurm_node_addr"}
        for host, address in private.items()
    }


def _required(host: str) -> Any:
    """An ``apply`` that refuses a bastion node without a public address."""

    def check(address: str | None) -> str:
        if not address:
            raise ValueError(
                f"access.bastion.host {host} has no public address; give it one, or name a "
                "bastion address"
            )
        return address

    return check
