"""What ``orchestrator: kubernetes`` applies (``fabric.components.kubernetes.cluster_objects``):
on a cluster, the Network Operator's objects first, then labels and the Kueue objects; on the
one-machine lab the operator's objects rendered only. The CRD each custom kind needs, and
railyard-health's Kubernetes section refused without its fields (no call made). The calls
themselves run against a real kube-apiserver in tests/integration/test_kubernetes_lab.py."""

from __future__ import annotations

from typing import Any

from fabric.components.kubernetes import CLUSTER_LABEL, cluster_objects
from fabric.kube_client import crd_name
from fabric.spec import spec_from_mapping
from fabric.verify import health
from tests.unit.test_kube_labels_family import _spec


def _kinds(objects: list[dict[str, Any]]) -> list[str]:
    return [o["kind"] for o in objects]


def test_a_cluster_applies_the_operator_then_labels_and_kueue() -> None:
    spec = spec_from_mapping(_spec())  # target existing: a cluster with its own operator
    applied, rendered = cluster_objects(spec)
    assert rendered == []
    assert _kinds(applied)[0] == "NicClusterPolicy"
    assert _kinds(applied)[-2:] == ["Topology", "ResourceFlavor"]
    nodes = [o for o in applied if o["kind"] == "Node"]
    assert [n["metadata"]["name"] for n in nodes] == ["gpu01", "gpu02", "gpu03", "gpu04", "sm1"]
    assert all(n["metadata"]["labels"][CLUSTER_LABEL] == "k8s" for n in nodes)
    flavor = applied[-1]
    assert flavor["spec"] == {"nodeLabels": {CLUSTER_LABEL: "k8s"}, "topologyName": "k8s"}
    assert applied[-2]["metadata"]["name"] == "k8s"  # kueue_topology unset: the cluster's name


def test_the_lab_renders_the_operator_objects_only() -> None:
    from tests.integration.test_kubernetes_lab import _kubernetes_spec

    spec = spec_from_mapping(_kubernetes_spec(0, "https://127.0.0.1:6443"))
    applied, rendered = cluster_objects(spec)
    assert _kinds(rendered) == ["NicClusterPolicy", "IPPool", "IPoIBNetwork"]
    assert "NicClusterPolicy" not in _kinds(applied)


def test_the_crd_each_kind_needs() -> None:
    assert crd_name({"apiVersion": "mellanox.com/v1alpha1", "kind": "NicClusterPolicy"}) == (
        "nicclusterpolicies.mellanox.com"
    )
    assert crd_name({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor"}) == (
        "resourceflavors.kueue.x-k8s.io"
    )
    assert crd_name({"apiVersion": "v1", "kind": "Node"}) is None


def test_health_kubernetes_section_needs_its_fields() -> None:
    said = health.mark_kubernetes({"api_server": "https://127.0.0.1:1"}, "n1", ["x"])
    assert said == "kubernetes: not marked: no 'token_file' in the kubernetes section"
