"""Target ``existing``: a cluster that already runs is adopted, nothing is provisioned.

Each node of ``existing.ssh`` (``[user@]address[:port]``) becomes an :class:`ExistingNode`: a
host key pin (:class:`fabric.components.dynamic_hostkeys.HostKeyPinProvider`: the keys the
spec's ``existing.known_hosts`` lines give for the node, else recorded at first contact into
the stack's known_hosts; or the SSH CA of an ``@cert-authority`` line naming it, whose host
certificate ssh then checks) followed by a login with strict checking. At every later ``pulumi up``
(and preview) the node is logged in to again, strictly: a node that no longer answers, or offers
another host key, fails the update naming it (:class:`fabric.hostkeys.HostKeyChanged`). The
inventory (so the hand-off and the checks) waits for every node. Switches in
``fabric.switches`` are handed to Ansible as declared. Outputs: every target's
(``TargetCluster``); no BMCs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pulumi
from pulumi.dynamic import CreateResult, DiffResult, UpdateResult

from fabric.components.dynamic_hostkeys import HostKeyPinProvider
from fabric.components.target import TargetCluster
from fabric.hostkeys import check_contact, known_hosts_name, pinned_keys, trust_authorities
from fabric.inventory import provisioned_inventory, switch_hostvars
from fabric.spec import ClusterSpec, SpecError, provision_problems
from fabric.state import StateLayout
from fabric.targets.existing.rules import (
    cert_authorities,
    existing_placeholder_problems,
    known_hosts_keys,
    ssh_target,
)

#: Seconds the first contact waits for a node's SSH answer (config ``hostKeyTimeout``).
DEFAULT_TIMEOUT = 60.0
#: Inputs whose change pins the node again.
_ADOPT_ON = ("address", "port", "user", "source", "ca", "known_hosts", "private_key")
#: What a node pinned by its SSH CA records (no key of its own is pinned).
_BY_CA = {"keys": [], "pinned_from": "ssh ca"}


def _check(props: dict[str, Any]) -> None:
    """Log in to the node with strict host key checking (raises naming the node)."""
    check_contact(
        props["host"],
        props["address"],
        user=props["user"],
        private_key=Path(props["private_key"]),
        known_hosts=Path(props["known_hosts"]),
        port=int(props.get("port") or 22),
    )


def _by_ca(props: dict[str, Any]) -> bool:
    """Whether the node is pinned by its SSH CA alone (no key of its own in the spec):
    a first contact would accept a key the CA did not sign, so there is none."""
    if props.get("ca"):
        trust_authorities(Path(props["known_hosts"]), props["ca"])
    return bool(props.get("ca")) and not props.get("source")


class ExistingNodeProvider(HostKeyPinProvider):
    """The pin of :class:`HostKeyPinProvider` (or the node's SSH CA), a strict login after
    it, and at every diff a strict login again: a changed key or a node gone fails the
    update, naming the node."""

    def create(self, props: dict[str, Any]) -> CreateResult:
        if _by_ca(props):
            _check(props)
            return CreateResult(f"hostkey-{props['host']}", {**props, **_BY_CA})
        result = super().create(props)
        _check(props)
        return result

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        if any(olds.get(k) != news.get(k) for k in _ADOPT_ON):
            return DiffResult(changes=True, replaces=[])
        known = Path(news["known_hosts"])
        name = known_hosts_name(news["address"], int(news.get("port") or 22))
        if news.get("ca") and not news.get("source"):
            present = set(known.read_text().splitlines()) if known.is_file() else set()
            if not set(news["ca"]) <= present:
                return DiffResult(changes=True, replaces=[])  # the CA line was removed
        elif not pinned_keys(known, name):
            # Its entry was removed (ssh-keygen -R, as HostKeyChanged advises): pin it afresh.
            return DiffResult(changes=True, replaces=[])
        _check(news)
        return DiffResult(changes=False, replaces=[])

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        if olds.get("source") != news.get("source"):
            self.delete(_id, olds)  # the spec's keys changed: they replace the pinned ones
        if _by_ca(news):
            _check(news)
            return UpdateResult({**news, **_BY_CA})
        result = super().update(_id, olds, news)
        _check(news)
        return result


class ExistingNode(pulumi.dynamic.Resource):
    """One node of a running cluster: its host key pinned (or its SSH CA trusted), a strict
    login checked at every ``pulumi up`` (outputs ``keys``, ``pinned_from``: ``spec``,
    ``first contact`` or ``ssh ca``)."""

    address: pulumi.Output[str]
    keys: pulumi.Output[list[str]]
    pinned_from: pulumi.Output[str]

    def __init__(
        self,
        name: str,
        *,
        host: str,
        user: str,
        address: str,
        port: int,
        known_hosts: str,
        private_key: str,
        keys: list[str],
        ca: list[str] | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__(
            ExistingNodeProvider(),
            name,
            {
                "host": host,
                "user": user,
                "address": address,
                "port": port,
                "known_hosts": known_hosts,
                "private_key": private_key,
                "source": {"declared": True, "keys": keys} if keys else None,
                "ca": ca or None,
                "jump": None,
                "replaced": None,
                "timeout": timeout,
                "keys": None,
                "pinned_from": None,
            },
            opts,
        )


class ExistingCluster(TargetCluster):
    """A running cluster adopted over SSH: one :class:`ExistingNode` per node."""

    def __init__(
        self, name: str, spec: ClusterSpec, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        problems = provision_problems(spec, "existing") + existing_placeholder_problems(spec)
        if problems:
            raise SpecError(problems)
        assert spec.existing is not None  # checked above
        super().__init__("railyard:existing:Cluster", name, None, opts)
        config = pulumi.Config()
        layout = StateLayout(pulumi.get_stack())
        key_opt, known_opt = config.get("sshPrivateKeyFile"), config.get("knownHostsFile")
        key = (Path(key_opt).expanduser() if key_opt else layout.provided_ssh_key).absolute()
        known = (Path(known_opt).expanduser() if known_opt else layout.known_hosts).absolute()
        timeout = config.get_float("hostKeyTimeout") or DEFAULT_TIMEOUT
        child = pulumi.ResourceOptions(parent=self)

        nodes: dict[str, ExistingNode] = {}
        targets: dict[str, dict[str, Any]] = {}
        host_vars: dict[str, dict[str, Any]] = {}
        for host in spec.hosts:
            parsed = ssh_target(spec.existing.ssh[host], spec.management.ssh_user)
            assert parsed is not None  # checked above
            user, address, port = parsed
            targets[host] = {"address": address, "port": port, "user": user}
            names = [known_hosts_name(address, port), host]
            host_vars[host] = {
                **({"ansible_user": user} if user != spec.management.ssh_user else {}),
                **({"ansible_port": port} if port != 22 else {}),
            }
            nodes[host] = ExistingNode(
                f"{name}-{host}",
                host=host,
                user=user,
                address=address,
                port=port,
                known_hosts=str(known),
                private_key=str(key),
                keys=known_hosts_keys(spec.existing.known_hosts, names),
                ca=cert_authorities(spec.existing.known_hosts, names),
                timeout=timeout,
                opts=child,
            )
        hosts = pulumi.Output.all(
            **{
                host: pulumi.Output.all(pinned_from=node.pinned_from, keys=node.keys).apply(
                    lambda pinned, t=targets[host]: {**t, **pinned}
                )
                for host, node in nodes.items()
            }
        )
        # The inventory waits for every node: the hand-off starts once all are pinned.
        addresses = pulumi.Output.all(**{host: node.address for host, node in nodes.items()})
        inventory = addresses.apply(
            lambda a: provisioned_inventory(
                spec,
                a,
                layout,
                private_key_file=key_opt,
                known_hosts_file=known_opt,
                host_vars=host_vars,
            )
        )
        self.export(
            spec,
            inventory=inventory,
            hosts=hosts,
            switches={sw.name: switch_hostvars(sw) for sw in spec.fabric.switches},
        )
