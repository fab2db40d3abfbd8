"""``KubernetesObjects``: the Kubernetes objects of ``orchestrator: kubernetes`` (the Network
Operator's NicClusterPolicy and networks, the Node topology labels, the Kueue Topology) applied
to the cluster's API server, as a Pulumi dynamic resource over ``fabric.kube_client``
(the Pulumi Kubernetes provider's plugin cannot be installed here).

- create / update: every object applied server-side (field manager ``railyard``), so a second
  ``pulumi up`` with the same objects changes nothing; a label or an object railyard applied
  before and no longer does is removed (objects: deleted; Node labels: dropped by the apply).
  A Node patch for a node the cluster does not have is skipped, never creates a Node, and is
  listed in the output ``missing_nodes``.
- delete: railyard's labels dropped from the nodes, its other objects deleted.

The token and the CA are Pulumi secrets (``kubernetes.token``, ``kubernetes.ca_certificate``).
"""

from __future__ import annotations

import os
import tempfile
from typing import Any

import pulumi
from pulumi.dynamic import CreateResult, DiffResult, Resource, ResourceProvider, UpdateResult

#: Inputs whose change applies the objects again.
APPLY_ON = ("api_server", "token", "ca_certificate", "objects")


def _client(props: dict[str, Any]) -> tuple[Any, str | None]:
    """A client for the props' API server, and the CA file it reads (removed by the caller)."""
    from fabric.kube_client import Client

    ca_file = None
    if props.get("ca_certificate"):
        fd, ca_file = tempfile.mkstemp(prefix="railyard-kube-ca-")
        with os.fdopen(fd, "w") as out:
            out.write(props["ca_certificate"])
    client = Client(props["api_server"], props["token"], ca_file)
    return client, ca_file


def _key(obj: dict[str, Any]) -> str:
    from fabric.kube_client import object_path

    return object_path(obj)


def _apply(props: dict[str, Any], olds: dict[str, Any] | None = None) -> dict[str, Any]:
    """Apply ``props['objects']``; remove what ``olds`` applied that they no longer hold."""
    client, ca_file = _client(props)
    try:
        missing: list[str] = []
        wanted = {_key(o): o for o in props.get("objects") or []}
        for path, obj in wanted.items():
            if obj["kind"] == "Node" and not client.exists(path):
                missing.append(obj["metadata"]["name"])
                continue
            client.apply(path, obj)
        for path, obj in ((_key(o), o) for o in (olds or {}).get("objects") or []):
            if path not in wanted:
                _remove(client, path, obj)
    finally:
        if ca_file:
            os.unlink(ca_file)
    return {**props, "missing_nodes": missing}


def _remove(client: Any, path: str, obj: dict[str, Any]) -> None:
    if obj["kind"] == "Node":
        if client.exists(path):  # an empty apply drops the labels railyard applied
            client.apply(
                path,
                {"apiVersion": "v1", "kind": "Node", "metadata": obj["metadata"] | {"labels": {}}},
            )
    else:
        client.delete(path)


class KubernetesObjectsProvider(ResourceProvider):
    """Apply, re-apply on change, and remove railyard's objects on an API server."""

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        changed = [k for k in APPLY_ON if olds.get(k) != news.get(k)]
        return DiffResult(changes=bool(changed), replaces=[], delete_before_replace=False)

    def create(self, props: dict[str, Any]) -> CreateResult:
        outs = _apply(props)
        return CreateResult(id_=f"kubernetes-{props['name']}", outs=outs)

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        return UpdateResult(outs=_apply(news, olds))

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        client, ca_file = _client(props)
        try:
            for obj in props.get("objects") or []:
                _remove(client, _key(obj), obj)
        finally:
            if ca_file:
                os.unlink(ca_file)


class KubernetesObjects(Resource):
    """The objects of one cluster on its API server."""

    missing_nodes: pulumi.Output[list[str]]

    def __init__(
        self,
        name: str,
        api_server: str,
        token: pulumi.Input[str],
        ca_certificate: pulumi.Input[str] | None,
        objects: list[dict[str, Any]],
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        props = {
            "name": name,
            "api_server": api_server,
            "token": pulumi.Output.secret(token),
            "ca_certificate": pulumi.Output.secret(ca_certificate) if ca_certificate else None,
            "objects": objects,
            "missing_nodes": None,
        }
        super().__init__(KubernetesObjectsProvider(), name, props, opts)
