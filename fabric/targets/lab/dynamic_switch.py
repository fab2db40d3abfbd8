"""``LabSwitch``: a RoCE lab's switch as a Pulumi dynamic resource (``fabric.lab.switch``).

The switch is a container made like a node (systemd, sshd, its host key generated outside so
``known_hosts`` is pinned before it starts; management network only, ``NET_ADMIN`` for the
qdiscs switch_qos sets), and one port per RoCE node: a veth pair whose other end is the
node's fabric netdev, both at the fabric MTU.

- ``config`` (the container) changes: replaced (delete first: names are unique).
- ``links`` or ``mtu`` change, or a node was re-created (``node_ids``: each node container's
  podman id, new on every creation): updated in place, every link wired again where it is
  not (``fabric.lab.switch.wire`` is idempotent) and ports of removed links deleted.
- ``read`` looks at the real thing: a missing container is gone (recreated); links that are
  not wired any more (a node restarted, its namespace and veth end gone) drop out of the
  state, so the next ``pulumi up`` (after ``--refresh``) wires them again.
- ``delete`` removes the container; its veth pairs go with its namespace (``_Container``,
  shared with the lab's nodes in ``fabric.targets.lab.dynamic_lab``).
"""

from __future__ import annotations

from typing import Any

import pulumi
from pulumi.dynamic import CreateResult, DiffResult, ReadResult, Resource, UpdateResult

from fabric.targets.lab.dynamic_lab import _Container, _plain

#: Inputs whose change replaces the switch container.
REPLACE_ON = ("config", "address", "ssh_user", "login_private_key")
#: Inputs whose change re-wires the ports in place.
UPDATE_ON = ("links", "mtu", "node_ids")


def _mtu(props: dict[str, Any]) -> int | None:
    """The fabric MTU (Pulumi hands numbers over as floats)."""
    return int(props["mtu"]) if props.get("mtu") is not None else None


def _links(props: dict[str, Any]) -> list[Any]:
    from fabric.lab.switch import SwitchLink

    return [SwitchLink(**link) for link in props.get("links") or []]


class LabSwitchProvider(_Container):
    """Create, re-wire and remove the lab switch container and its ports."""

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        replaces = [k for k in REPLACE_ON if olds.get(k) != news.get(k)]
        updates = [k for k in UPDATE_ON if olds.get(k) != news.get(k)]
        return DiffResult(
            changes=bool(replaces or updates), replaces=replaces, delete_before_replace=True
        )

    def create(self, props: dict[str, Any]) -> CreateResult:
        from fabric.lab.node import NodeConfig, create_node
        from fabric.lab.switch import wire

        cfg = NodeConfig(**props["config"])
        create_node(cfg)
        self.ready(cfg, props, then=lambda: wire(cfg.container, _links(props), _mtu(props)))
        return CreateResult(cfg.container, _plain(props))

    def update(self, id_: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        from fabric.lab.switch import unwire, wire

        keep = {link.port for link in _links(news)}
        for link in _links(olds):
            if link.port not in keep:
                unwire(id_, link.port)
        wire(id_, _links(news), _mtu(news))
        return UpdateResult(_plain(news))

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        from fabric.lab.node import state
        from fabric.lab.switch import wired_ports

        current = state(id_)
        if current is None or not current["running"]:
            return ReadResult(None, {})
        ports = set(wired_ports(id_, _links(props)))
        live = [link for link in props.get("links") or [] if link["port"] in ports]
        return ReadResult(id_, {**props, "links": live})


class LabSwitch(Resource):
    """The lab switch (container ``<prefix>-<switch>``) wired to the RoCE nodes.

    ``links``: ``fabric.lab.switch.SwitchLink`` fields per port; ``node_ids``: node container
    -> its podman id (a re-created node has a new one, so its port is wired again).
    """

    def __init__(
        self,
        name: str,
        config: pulumi.Input[dict[str, Any]],
        address: pulumi.Input[str],
        ssh_user: str,
        login_private_key: pulumi.Input[str],
        links: pulumi.Input[list[dict[str, str]]],
        mtu: int,
        node_ids: pulumi.Input[dict[str, str]],
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        args = {
            "config": config,
            "address": address,
            "ssh_user": ssh_user,
            "login_private_key": login_private_key,
            "links": links,
            "mtu": mtu,
            "node_ids": node_ids,
        }
        super().__init__(LabSwitchProvider(), name, args, opts)
