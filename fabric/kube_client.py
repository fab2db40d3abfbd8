"""The few Kubernetes API calls railyard makes, over HTTPS with a bearer token (``requests``,
every call with a timeout): server-side apply (field manager ``railyard``: applying the same
object again changes nothing, and a label railyard no longer applies is removed), reads, and
a node's fabric health as a taint and a condition.

A protocol client like ``fabric.redfish`` (layer ``clients``: imports only the base), so its
two users import it downward: ``KubernetesObjects`` (``fabric.components.kubernetes``) and the
lab's API server (``fabric.lab.kubeapi``)."""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any


class KubeError(RuntimeError):
    """An API server call failed, or the lab's API server cannot be had: names the call or
    what is missing, never a credential."""


class Client:
    """The few API calls railyard makes, over HTTPS with the bearer token (every call with a
    timeout). Objects are applied server-side (field manager ``railyard``): applying the same
    object again changes nothing."""

    def __init__(
        self,
        url: str,
        token: str | None,
        ca_file: Path | None,
        timeout: float = 30.0,
        cert: tuple[str, str] | None = None,
    ) -> None:
        """``token`` (a bearer token) or ``cert`` (client certificate and key files)."""
        import requests

        self.url = url.rstrip("/")
        self.timeout = timeout
        self.session = requests.Session()
        # No proxy, netrc or REQUESTS_CA_BUNDLE from the environment: the bundle would
        # override ``verify`` below (requests' merge of environment settings).
        self.session.trust_env = False
        if token:
            self.session.headers["Authorization"] = f"Bearer {token}"
        self.session.cert = cert
        self.session.verify = str(ca_file) if ca_file is not None else True

    def _send(self, method: str, path: str, **kwargs: Any) -> Any:
        """One request; a connection failure is a ``KubeError`` naming the call."""
        import requests

        try:
            return self.session.request(method, self.url + path, timeout=self.timeout, **kwargs)
        except requests.RequestException as exc:
            from fabric.redact import redact

            raise KubeError(
                f"{method} {self.url}{path}: {type(exc).__name__}: {redact(str(exc))[:200]}"
            ) from None

    def _call(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        reply = self._send(method, path, **kwargs)
        if reply.status_code >= 400:
            from fabric.redact import redact

            detail = redact(reply.text[:300])
            raise KubeError(f"{method} {path}: HTTP {reply.status_code}: {detail}")
        return reply.json() if reply.content else {}

    def get(self, path: str) -> dict[str, Any]:
        return self._call("GET", path)

    def create(self, path: str, obj: dict[str, Any]) -> dict[str, Any]:
        return self._call("POST", path, json=obj)

    def exists(self, path: str) -> bool:
        """Whether the object at ``path`` exists."""
        reply = self._send("GET", path)
        if reply.status_code == 404:
            return False
        if reply.status_code >= 400:
            raise KubeError(f"GET {path}: HTTP {reply.status_code}")
        return True

    def delete(self, path: str) -> None:
        """Delete the object at ``path``; one already gone is fine."""
        reply = self._send("DELETE", path)
        if reply.status_code >= 400 and reply.status_code != 404:
            raise KubeError(f"DELETE {path}: HTTP {reply.status_code}")

    def merge_patch(self, path: str, patch: dict[str, Any]) -> dict[str, Any]:
        """A JSON merge patch (a ``metadata.resourceVersion`` in it: only over that version)."""
        import json

        return self._call(
            "PATCH",
            path,
            data=json.dumps(patch),
            headers={"Content-Type": "application/merge-patch+json"},
        )

    def apply(self, path: str, obj: dict[str, Any]) -> dict[str, Any]:
        """Server-side apply ``obj`` at ``path`` (the object's own URL)."""
        import json

        return self._call(
            "PATCH",
            path,
            params={"fieldManager": "railyard", "force": "true"},
            data=json.dumps(obj),
            headers={"Content-Type": "application/apply-patch+yaml"},
        )


#: The resource (plural) name of each kind railyard applies.
PLURALS = {
    "Node": "nodes",
    "Topology": "topologies",
    "NicClusterPolicy": "nicclusterpolicies",
    "IPPool": "ippools",
    "IPoIBNetwork": "ipoibnetworks",
    "MacvlanNetwork": "macvlannetworks",
    "HostDeviceNetwork": "hostdevicenetworks",
    "CustomResourceDefinition": "customresourcedefinitions",
    "ResourceFlavor": "resourceflavors",
}


def object_path(obj: dict[str, Any]) -> str:
    """The URL path of ``obj`` (core ``v1`` or a group's, cluster-scoped or namespaced)."""
    api = obj["apiVersion"]
    base = f"/api/{api}" if "/" not in api else f"/apis/{api}"
    meta = obj["metadata"]
    namespace = f"/namespaces/{meta['namespace']}" if meta.get("namespace") else ""
    kind = PLURALS.get(obj["kind"], obj["kind"].lower() + "s")
    return f"{base}{namespace}/{kind}/{meta['name']}"


#: API groups served by every API server (no CRD needed); any other group's kinds are CRDs.
BUILTIN_GROUPS = ("", "apps", "batch", "rbac.authorization.k8s.io", "apiextensions.k8s.io")


def crd_name(obj: dict[str, Any]) -> str | None:
    """The CustomResourceDefinition ``obj``'s kind needs (``<plural>.<group>``), or None for
    a built-in kind."""
    group = obj["apiVersion"].rpartition("/")[0]
    if group in BUILTIN_GROUPS:
        return None
    return f"{PLURALS.get(obj['kind'], obj['kind'].lower() + 's')}.{group}"


def missing_crds(client: Client, objects: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(CRD name, kind) of each custom kind in ``objects`` the API server does not serve, in
    the order the objects name them."""
    needed = {name: o["kind"] for o in objects if (name := crd_name(o)) is not None}
    base = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"
    return [(name, kind) for name, kind in needed.items() if not client.exists(base + name)]


def node_labels(client: Client) -> dict[str, dict[str, str]]:
    """Every Node's labels, by node name."""
    items = client.get("/api/v1/nodes").get("items") or []
    return {n["metadata"]["name"]: n["metadata"].get("labels") or {} for n in items}


#: The taint and the node condition railyard's fabric health sets on a node.
TAINT_KEY = "railyard.dev/fabric-unhealthy"
CONDITION = "RailyardFabricHealthy"


def mark_health(client: Client, node: str, healthy: bool, reason: str, message: str) -> bool:
    """Reflect a node's fabric health where Kubernetes looks: a ``NoSchedule`` taint while it is
    unhealthy (lifted when it recovers; other taints kept) and a ``RailyardFabricHealthy``
    condition. Returns whether anything changed: the same verdict twice changes nothing."""
    current = client.get(f"/api/v1/nodes/{node}")
    before = (current.get("spec") or {}).get("taints") or []
    taints = [t for t in before if t["key"] != TAINT_KEY]
    if not healthy:
        taints.append({"key": TAINT_KEY, "value": reason, "effect": "NoSchedule"})
    changed = taints != before
    if changed:
        patch = {
            "metadata": {"resourceVersion": current["metadata"]["resourceVersion"]},
            "spec": {"taints": taints or None},
        }
        client.merge_patch(f"/api/v1/nodes/{node}", patch)
    status = "True" if healthy else "False"
    old = next(
        (
            c
            for c in (current.get("status") or {}).get("conditions") or []
            if c["type"] == CONDITION
        ),
        None,
    )
    if old is not None and (old["status"], old.get("reason"), old.get("message")) == (
        status,
        reason,
        message,
    ):
        return changed
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    since = old["lastTransitionTime"] if old is not None and old["status"] == status else now
    condition = {
        "type": CONDITION,
        "status": status,
        "reason": reason,
        "message": message,
        "lastHeartbeatTime": now,
        "lastTransitionTime": since,
    }
    client.apply(
        f"/api/v1/nodes/{node}/status",
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": node},
            "status": {"conditions": [condition]},
        },
    )
    return True
