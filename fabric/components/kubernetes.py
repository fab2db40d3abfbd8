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

- before anything is applied, every custom kind's CRD must be served: a missing one (the
  Network Operator's ``NicClusterPolicy`` on a cluster without the operator) stops the update
  with one line naming the CRD and the install step.

The credentials and the CA are Pulumi secrets (``kubernetes.token`` or
``client_certificate`` + ``client_key``, ``kubernetes.ca_certificate``).
:func:`kubernetes_objects` builds the resource of a spec for ``Cluster`` (``fabric.program``):
topology labels, the Kueue ``Topology`` and its ``ResourceFlavor`` applied; the Network
Operator's objects applied too, except on a one-machine lab, which has no Network Operator
(they are rendered only, the output ``rendered``).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import pulumi
from pulumi.dynamic import CreateResult, DiffResult, Resource, ResourceProvider, UpdateResult

if TYPE_CHECKING:
    from fabric.spec import ClusterSpec

#: Inputs whose change applies the objects again.
APPLY_ON = ("api_server", "token", "client_certificate", "client_key", "ca_certificate", "objects")
#: Inputs that are credentials: Pulumi secrets in the inputs and the outputs alike.
SECRET_PROPS = ("token", "client_certificate", "client_key", "ca_certificate")
#: Where the cluster label every railyard node carries (the ResourceFlavor selects it) lives.
CLUSTER_LABEL = "railyard.dev/cluster"
#: What a missing CRD's error tells to do, by API group.
INSTALL_STEP = {
    "mellanox.com": "install the NVIDIA Network Operator first (its Helm chart "
    "network-operator installs the CRDs), or set orchestrator: slurm",
    "nv-ipam.nvidia.com": "install the NVIDIA Network Operator with nv-ipam enabled first",
    "kueue.x-k8s.io": "install Kueue first (its release manifests install the CRDs)",
}


@contextmanager
def _client(props: dict[str, Any]) -> Iterator[Any]:
    """A client for the props' API server; its CA and client key files (0600) are removed
    on exit."""
    from fabric.kube_client import Client

    files: dict[str, str] = {}
    try:
        for key in ("ca_certificate", "client_certificate", "client_key"):
            if props.get(key):
                fd, files[key] = tempfile.mkstemp(prefix="railyard-kube-")
                with os.fdopen(fd, "w") as out:
                    out.write(props[key])
        cert = (files["client_certificate"], files["client_key"]) if "client_key" in files else None
        yield Client(
            props["api_server"], props.get("token"), files.get("ca_certificate"), cert=cert
        )
    finally:
        for path in files.values():
            os.unlink(path)


def _require_crds(client: Any, url: str, objects: list[dict[str, Any]]) -> None:
    """Raise one line naming each CRD the API server lacks and the step that installs it."""
    from fabric.kube_client import KubeError, missing_crds

    missing = missing_crds(client, objects)
    if missing:
        name, kind = missing[0]
        step = INSTALL_STEP.get(name.split(".", 1)[1], "install the operator that owns it")
        more = f" (and {', '.join(n for n, _ in missing[1:])})" if len(missing) > 1 else ""
        raise KubeError(
            f"kubernetes.api_server {url}: no CustomResourceDefinition {name}{more}, so "
            f"{kind} cannot be applied; {step}"
        )


def _key(obj: dict[str, Any]) -> str:
    from fabric.kube_client import object_path

    return object_path(obj)


def _apply(props: dict[str, Any], olds: dict[str, Any] | None = None) -> dict[str, Any]:
    """Apply ``props['objects']``; remove what ``olds`` applied that they no longer hold."""
    with _client(props) as client:
        objects = props.get("objects") or []
        _require_crds(client, props["api_server"], objects)
        missing: list[str] = []
        wanted = {_key(o): o for o in objects}
        for path, obj in wanted.items():
            if obj["kind"] == "Node" and not client.exists(path):
                missing.append(obj["metadata"]["name"])
                continue
            client.apply(path, obj)
        for path, obj in ((_key(o), o) for o in (olds or {}).get("objects") or []):
            if path not in wanted:
                _remove(client, path, obj)
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
        with _client(props) as client:
            for obj in props.get("objects") or []:
                _remove(client, _key(obj), obj)


class KubernetesObjects(Resource):
    """The objects of one cluster on its API server."""

    missing_nodes: pulumi.Output[list[str]]

    def __init__(
        self,
        name: str,
        api_server: str,
        token: pulumi.Input[str] | None,
        ca_certificate: pulumi.Input[str] | None,
        objects: list[dict[str, Any]],
        opts: pulumi.ResourceOptions | None = None,
        client_certificate: pulumi.Input[str] | None = None,
        client_key: pulumi.Input[str] | None = None,
    ) -> None:
        def secret(value: pulumi.Input[str] | None) -> pulumi.Output[str] | None:
            return pulumi.Output.secret(value) if value is not None else None

        props = {
            "name": name,
            "api_server": api_server,
            "token": secret(token),
            "client_certificate": secret(client_certificate),
            "client_key": secret(client_key),
            "ca_certificate": secret(ca_certificate),
            "objects": objects,
            "missing_nodes": None,
        }
        # The provider returns its inputs as outputs: keep the credentials secret there too.
        hidden = pulumi.ResourceOptions(additional_secret_outputs=list(SECRET_PROPS))
        super().__init__(
            KubernetesObjectsProvider(), name, props, pulumi.ResourceOptions.merge(opts, hidden)
        )


def cluster_objects(spec: ClusterSpec) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(applied, rendered only) objects of ``spec``: each node's topology labels and the
    cluster label, the Kueue ``Topology`` and a ``ResourceFlavor`` of the same name selecting
    the cluster's nodes; the Network Operator's objects, rendered only on a one-machine lab."""
    from fabric.model.network_operator import network_operator_objects
    from fabric.targets import line_of
    from fabric.topology.from_spec import graph_from_spec
    from fabric.topology.kubernetes import KUEUE_API, kueue_topology, node_labels

    assert spec.kubernetes is not None
    settings = spec.kubernetes.labels
    name = settings.kueue_topology or spec.name
    labels = node_labels(graph_from_spec(spec), settings.scheme)
    nodes = [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": host, "labels": {**tiers, CLUSTER_LABEL: spec.name}},
        }
        for host, tiers in labels.labels.items()
    ]
    flavor = {
        "apiVersion": KUEUE_API,
        "kind": "ResourceFlavor",
        "metadata": {"name": name},
        "spec": {"nodeLabels": {CLUSTER_LABEL: spec.name}, "topologyName": name},
    }
    operator = network_operator_objects(spec)
    applied = [*nodes, kueue_topology(labels, name), flavor]
    if line_of(spec.target).one_machine:
        return applied, operator
    return [*operator, *applied], []


def kubernetes_secret(spec: ClusterSpec, field: str) -> pulumi.Output[str] | None:
    """The stack's config secret the spec's ``kubernetes.<field>`` names (``token``,
    ``ca_certificate``, ...), or None when the spec names none."""
    from fabric.components.config_secret import config_secret

    ref = getattr(spec.kubernetes, field, None)
    if ref is None:
        return None
    fix = '"$(cat FILE)"` (FILE: the token or PEM)'
    return config_secret(ref.config, f"kubernetes.{field}.config", fix)


def kubernetes_objects(
    name: str, spec: ClusterSpec, opts: pulumi.ResourceOptions | None = None
) -> tuple[KubernetesObjects, list[dict[str, Any]]]:
    """The ``KubernetesObjects`` of ``spec`` (its credentials from the stack's config
    secrets), and the objects rendered but not applied."""
    k8s = spec.kubernetes
    assert k8s is not None

    def secret(field: str) -> pulumi.Output[str] | None:
        return kubernetes_secret(spec, field)

    applied, rendered = cluster_objects(spec)
    resource = KubernetesObjects(
        name,
        api_server=k8s.api_server,
        token=secret("token"),
        ca_certificate=secret("ca_certificate"),
        client_certificate=secret("client_certificate"),
        client_key=secret("client_key"),
        objects=applied,
        opts=opts,
    )
    return resource, rendered


def read_node_labels(
    api_server: str, token: str, ca_certificate: str | None
) -> dict[str, dict[str, str]]:
    """Every Node's labels on ``api_server`` (the ``kubernetes_labels`` check's reading)."""
    from fabric.kube_client import node_labels

    props = {"api_server": api_server, "token": token, "ca_certificate": ca_certificate}
    with _client(props) as client:
        return node_labels(client)
