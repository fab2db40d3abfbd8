"""The ``kubernetes_labels`` family: labels read back against the fabric as discovered (a
recabled host under another leaf is named), and where the family is generated."""

from __future__ import annotations

import dataclasses
from typing import Any

from fabric.graph import FabricGraph, Link
from fabric.spec import spec_from_mapping
from fabric.topology.from_spec import graph_from_spec
from fabric.topology.kubernetes import node_labels
from fabric.verify.families.kubernetes import label_problems
from fabric.verify.plan import CheckPlan, describe

HCA = {"device": "mlx5_0", "link_layer": "InfiniBand", "rate_gbps": 400, "width": "4x"}
TIER0 = "fabric.topograph.run/tier-0"


def _spec(orchestrator: str = "kubernetes") -> dict[str, Any]:
    spec: dict[str, Any] = {
        "name": "k8s",
        "target": "existing",
        "nodes": [
            {"names": "gpu[01-04]", "role": "compute", "hcas": [HCA]},
            {"names": "sm1", "role": "sm", "hcas": [HCA]},
        ],
        "fabric": {
            "kind": "infiniband",
            "mtu": 4096,
            "topology": {
                "kind": "fat-tree",
                "leaves": 2,
                "spines": 1,
                "ports_per_switch": 8,
                "nodes_per_leaf": 3,
                "uplinks_per_leaf": 2,
            },
            "infiniband": {"subnet_managers": [{"host": "sm1", "priority": 14}]},
        },
        "management": {"subnet": "10.40.0.0/24", "ssh_user": "root"},
        "existing": {
            "ssh": {
                h: f"10.40.0.{10 + i}"
                for i, h in enumerate(["gpu01", "gpu02", "gpu03", "gpu04", "sm1"])
            }
        },
    }
    if orchestrator == "kubernetes":
        spec["orchestrator"] = "kubernetes"
        spec["kubernetes"] = {
            "api_server": "https://10.40.0.2:6443",
            "token": {"config": "kubernetesToken"},
            "network_operator": {"repository": "registry.example.com/mellanox"},
        }
    else:
        spec["slurm"] = {"controller": "sm1"}
    return spec


def _recabled(graph: FabricGraph, host: str, to_leaf: str) -> FabricGraph:
    """``graph`` with ``host``'s HCA cable moved to a free port of ``to_leaf``."""
    ca = next(c for c in graph.cas.values() if c.host == host)
    leaf = next(s for s in graph.switches.values() if s.name == to_leaf)
    used = {
        port
        for link in graph.links
        for guid, port in ((link.a_guid, link.a_port), (link.b_guid, link.b_port))
        if guid == leaf.guid
    }
    free = next(p for p in range(1, leaf.ports + 1) if p not in used)
    links: list[Link] = []
    for link in graph.links:
        if ca.guid in (link.a_guid, link.b_guid):
            link = link._replace(a_guid=leaf.guid, a_port=free, b_guid=ca.guid, b_port=1)
        links.append(link)
    return dataclasses.replace(graph, links=links)


def test_labels_as_discovered_pass() -> None:
    graph = graph_from_spec(spec_from_mapping(_spec()))
    labels = node_labels(graph).labels
    assert label_problems("gpu01", labels["gpu01"], graph) == []


def test_a_recabled_host_is_named_with_both_leaves() -> None:
    declared = graph_from_spec(spec_from_mapping(_spec()))
    applied = node_labels(declared).labels  # what pulumi up applied from the declared fabric
    assert applied["gpu01"][TIER0] == "leaf01"
    discovered = _recabled(declared, "gpu01", "leaf02")
    assert node_labels(discovered).labels["gpu01"][TIER0] == "leaf02"
    problems = label_problems("gpu01", applied["gpu01"], discovered)
    assert problems == [
        f"gpu01: label {TIER0}=leaf01, but the discovered fabric has it under leaf02"
        " (recabled, or labels not applied since)"
    ]
    # the hosts left where they were still agree
    assert all(label_problems(h, applied[h], discovered) == [] for h in ("gpu02", "gpu04"))


def test_missing_stale_and_absent_labels_are_named() -> None:
    graph = graph_from_spec(spec_from_mapping(_spec()))
    labels = dict(node_labels(graph).labels["gpu02"])
    del labels[TIER0]
    labels["fabric.topograph.run/tier-2"] = "core01"
    labels["example.com/other"] = "kept"  # not railyard's: not judged
    problems = label_problems("gpu02", labels, graph)
    assert problems == [
        f"gpu02: label {TIER0} missing; the discovered fabric says leaf01",
        "gpu02: label fabric.topograph.run/tier-2=core01 names no switch of the discovered fabric",
    ]
    assert label_problems("gpu02", None, graph) == ["gpu02: no Node object on the API server"]


def test_the_family_runs_from_the_discovery_host_for_kubernetes_only() -> None:
    plan = CheckPlan(spec=spec_from_mapping(_spec()), hosts=["gpu01", "gpu02", "sm1"])
    assert describe(plan)["kubernetes_labels"] == {
        "checks": ["test_topology_labels"],
        "parameters": ["gpu01", "gpu02", "sm1"],
    }
    assert plan.kubernetes_nodes == ["gpu01", "gpu02", "sm1"]
    assert "kubernetes_labels" not in plan.not_generated()
    slurm = CheckPlan(spec=spec_from_mapping(_spec("slurm")), hosts=["gpu01", "sm1"])
    assert slurm.not_generated()["kubernetes_labels"].startswith("orchestrator is slurm")
