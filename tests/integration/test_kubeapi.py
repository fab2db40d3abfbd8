"""The topology labels, the Kueue Topology and the fabric health on a real API server: etcd and
kube-apiserver (scripts/kube-apiserver.sh) on loopback, the lab's nodes registered, Kueue's
published CRDs installed (fabric.lab.kubeapi). A second apply changes nothing; the CRD's own
schema refuses a bad level; the Pulumi provider applies, re-applies and removes."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from fabric.components.kube_client import (
    CONDITION,
    TAINT_KEY,
    Client,
    KubeError,
    mark_health,
    object_path,
)
from fabric.components.kubernetes import KubernetesObjectsProvider
from fabric.lab.kubeapi import (
    ApiServer,
    binaries,
    install_crds,
    kueue_crds,
    register_nodes,
    start_server,
    stop_server,
)
from fabric.spec import load_spec
from fabric.state import REPO_ROOT
from fabric.topology.from_spec import graph_from_spec
from fabric.topology.kubernetes import kueue_topology, node_labels, node_patches


def _built() -> bool:
    try:
        binaries()
        kueue_crds()
    except KubeError:
        return False
    return True


pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        not _built(),
        reason="needs scripts/kube-apiserver.sh run once (not in make bootstrap: a long Go build)",
    ),
]

SPEC = REPO_ROOT / "tests" / "unit" / "specs" / "valid" / "kubernetes.yaml"
TOPOLOGY = "/apis/kueue.x-k8s.io/v1beta2/topologies/"


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ApiServer, Client]]:
    server = start_server(tmp_path_factory.mktemp("kube"))
    try:
        client = Client(server.url, server.token(), server.ca_file)
        register_nodes(client, list(load_spec(SPEC).hosts))
        assert "topologies.kueue.x-k8s.io" in install_crds(client, kueue_crds())
        yield server, client
    finally:
        stop_server(server)


def _objects(scheme: str = "topograph", name: str = "fabric") -> tuple[list[dict], dict]:
    labels = node_labels(graph_from_spec(load_spec(SPEC)), scheme)  # type: ignore[arg-type]
    return [*node_patches(labels)["items"], kueue_topology(labels, name)], labels.labels


def test_labels_and_topology_applied_once_and_read_back(api: tuple[ApiServer, Client]) -> None:
    _, client = api
    objects, wanted = _objects()
    paths = [object_path(o) for o in objects]

    def apply_all() -> dict[str, str]:
        return {
            p: client.apply(p, o)["metadata"]["resourceVersion"]
            for p, o in zip(paths, objects, strict=True)
        }

    first = apply_all()
    assert apply_all() == first  # the second apply changes nothing
    for name, labels in wanted.items():
        node = client.get(f"/api/v1/nodes/{name}")["metadata"]["labels"]
        assert node == {**labels, "kubernetes.io/hostname": name}
    assert "ctl1" not in wanted  # no HCA: registered, never labelled
    levels = client.get(TOPOLOGY + "fabric")["spec"]["levels"]
    assert [lvl["nodeLabel"] for lvl in levels] == objects[-1]["spec"]["levels"] and levels
    bad = kueue_topology(node_labels(graph_from_spec(load_spec(SPEC))), "bad")
    bad["spec"]["levels"] = [{"nodeLabel": "kubernetes.io/hostname"}, {"nodeLabel": "x/y"}]
    with pytest.raises(KubeError, match="HTTP 422"):  # the CRD's schema, as Kueue publishes it
        client.apply(object_path(bad), bad)


def test_health_taints_the_node_and_recovery_lifts_it(api: tuple[ApiServer, Client]) -> None:
    _, client = api
    node = "gpu03"
    other = {"key": "example.com/maintenance", "value": "x", "effect": "NoExecute"}
    client.merge_patch(f"/api/v1/nodes/{node}", {"spec": {"taints": [other]}})
    down = ("CableDown", "leaf01 port 3 down (gpu03 mlx5_0)")
    assert mark_health(client, node, False, *down)
    assert not mark_health(client, node, False, *down)  # the same verdict: nothing changes
    got = client.get(f"/api/v1/nodes/{node}")
    assert got["spec"]["taints"] == [
        other,
        {"key": TAINT_KEY, "value": "CableDown", "effect": "NoSchedule"},
    ]
    (cond,) = [c for c in got["status"]["conditions"] if c["type"] == CONDITION]
    assert (cond["status"], cond["reason"]) == ("False", "CableDown")
    assert mark_health(client, node, True, "FabricHealthy", "every check passed")
    got = client.get(f"/api/v1/nodes/{node}")
    assert got["spec"]["taints"] == [other]  # railyard's lifted, the other kept
    (cond,) = [c for c in got["status"]["conditions"] if c["type"] == CONDITION]
    assert cond["status"] == "True"


def test_provider_applies_changes_and_removes(api: tuple[ApiServer, Client]) -> None:
    server, client = api
    provider = KubernetesObjectsProvider()
    objects, wanted = _objects(name="pulumi")
    ghost = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "gpu99", "labels": {"a": "b"}},
    }
    props = {
        "name": "lab",
        "api_server": server.url,
        "token": server.token(),
        "ca_certificate": server.ca_file.read_text(),
        "objects": [*objects, ghost],
    }
    outs = provider.create(props).outs
    assert outs["missing_nodes"] == ["gpu99"]  # skipped: a patch never creates a Node
    assert not client.exists("/api/v1/nodes/gpu99")
    assert not provider.diff("lab", outs, props).changes  # a second up changes nothing
    v0, v0_labels = _objects("topograph-v0", name="pulumi")
    news = {**props, "objects": v0}
    assert provider.diff("lab", outs, news).changes
    provider.update("lab", outs, news)
    labels = client.get("/api/v1/nodes/gpu01")["metadata"]["labels"]
    assert labels["network.topology.nvidia.com/leaf"] == "leaf01"
    assert "fabric.topograph.run/tier-0" not in labels  # railyard's old labels dropped
    provider.delete("lab", news)
    labels = client.get("/api/v1/nodes/gpu01")["metadata"]["labels"]
    assert not any(k.startswith("network.topology.nvidia.com/") for k in labels)
    assert not client.exists(TOPOLOGY + "pulumi")
    assert wanted and v0_labels
