"""A node's host key pinned in the stack's known_hosts before anything connects to it.

:class:`HostKeyPin` takes the keys the cloud reports for the instance (its console output on
EC2, its ``hostkeys/`` guest attributes on GCP: the target's ``hostkeys`` part, found through
the registry ``fabric.targets``, polled by :func:`fabric.hostkeys.reported_host_keys`),
or, when none are reported in time, records the key at first contact through the bastion
(:func:`fabric.hostkeys.wait_first_contact`); keys the spec declares (bare metal,
``{"declared": true, "keys": [...]}`` as the source) are pinned as given. A key that differs
from the one pinned for the address fails the resource, and with it ``pulumi up`` before the
hand-off, naming the node, unless ``replaced`` changed (new hardware under the same name): then
the old entries are removed and the new key is pinned once. Deleting the resource removes the
address's entries (``ssh-keygen -R``).
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pulumi
from pulumi.dynamic import CreateResult, DiffResult, ResourceProvider, UpdateResult

from fabric.hostkeys import (
    JumpHost,
    known_hosts_name,
    pin,
    pinned_keys,
    reported_host_keys,
    wait_first_contact,
)
from fabric.targets import part

#: Inputs whose change pins again (a replaced instance, another bastion).
_PIN_ON = ("address", "port", "source", "known_hosts", "jump", "replaced")


def _reported(source: dict[str, Any], timeout: float) -> list[str]:
    """The keys ``source`` (``{"cloud": TARGET, ...}``) reports, read by that target's
    ``hostkeys`` part."""
    reporter = part(source["cloud"], "hostkeys")
    return reported_host_keys(reporter.command(source), reporter.parse, timeout=timeout)


def pin_host_key(props: dict[str, Any]) -> dict[str, Any]:
    """Pin the key of ``props['host']``; return ``keys`` (pinned lines) and ``pinned_from``."""
    known = Path(props["known_hosts"])
    host, address, port = props["host"], props["address"], int(props.get("port") or 22)
    timeout = float(props.get("timeout") or 600)
    source = props.get("source")
    if source and source.get("declared"):
        keys = list(source["keys"])
    else:
        keys = _reported(source, timeout) if source else []
    if keys:
        pin(known, host, address, keys, port=port)
        origin = "spec" if source.get("declared") else f"{source['cloud']} report"
    else:
        jump = props.get("jump")
        wait_first_contact(
            host,
            address,
            timeout=timeout,
            user=props["user"],
            private_key=Path(props["private_key"]),
            known_hosts=known,
            jump=JumpHost(jump["address"], jump["user"], int(jump["port"])) if jump else None,
            port=port,
        )
        origin = "first contact"
    pinned = pinned_keys(known, known_hosts_name(address, port))
    return {"keys": [f"{k} {v}" for k, v in sorted(pinned.items())], "pinned_from": origin}


class HostKeyPinProvider(ResourceProvider):
    """Create/update: pin (cloud report, else first contact). Delete: forget the address."""

    def create(self, props: dict[str, Any]) -> CreateResult:
        return CreateResult(f"hostkey-{props['host']}", {**props, **pin_host_key(props)})

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        return DiffResult(changes=any(olds.get(k) != news.get(k) for k in _PIN_ON), replaces=[])

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        if any(olds.get(k) != news.get(k) for k in ("address", "replaced")):
            self.delete(_id, olds)
        return UpdateResult({**news, **pin_host_key(news)})

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        known = Path(props["known_hosts"])
        if not known.is_file():
            return
        name = known_hosts_name(props["address"], int(props.get("port") or 22))
        subprocess.run(
            ["ssh-keygen", "-R", name, "-f", str(known)],
            capture_output=True,
            check=False,
            timeout=30,
        )
        known.with_name(known.name + ".old").unlink(missing_ok=True)


class HostKeyPin(pulumi.dynamic.Resource):
    """The pinned host key of one node (outputs ``keys``, ``pinned_from``)."""

    address: pulumi.Output[str]
    keys: pulumi.Output[list[str]]
    pinned_from: pulumi.Output[str]

    def __init__(
        self,
        name: str,
        *,
        host: str,
        address: pulumi.Input[str],
        known_hosts: str,
        user: str,
        private_key: str,
        source: pulumi.Input[dict[str, Any]] | None = None,
        jump: pulumi.Input[dict[str, Any]] | None = None,
        port: int = 22,
        timeout: float = 600,
        replaced: str | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__(
            HostKeyPinProvider(),
            name,
            {
                "host": host,
                "address": address,
                "port": port,
                "known_hosts": known_hosts,
                "user": user,
                "private_key": private_key,
                "source": source,
                "jump": jump,
                "timeout": timeout,
                "replaced": replaced,
                "keys": None,
                "pinned_from": None,
            },
            opts,
        )
