"""Three-level fat trees: pods of leaves and spines joined by super-spines, rail-optimized
scalable units under them; the spec's rules, the declared graph, ibsim's net file and real
ibsim-discovered output of it, the declared-vs-discovered diff and the Slurm tree."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from fabric.graph import FabricGraph
from fabric.spec import SpecError, spec_from_mapping
from fabric.topology.diff import diff
from fabric.topology.from_spec import graph_from_spec
from fabric.topology.ibsim import render_net, simulated
from fabric.topology.slurm import slurm_tree, tree_conf

TREE = {
    "kind": "fat-tree",
    "leaves": 16,
    "spines": 8,
    "ports_per_switch": 16,
    "nodes_per_leaf": 4,
    "uplinks_per_leaf": 4,
    "rail_optimized": True,
    "pods": 2,
    "super_spines": 4,
    "uplinks_per_spine": 4,
}


def mapping(**tree: Any) -> dict[str, Any]:
    """32 hosts x 2 rails in scalable units of 4 under a three-level tree (``tree`` changes it)."""
    return {
        "name": "three",
        "target": "lab",
        "nodes": [
            {"names": "gpu[01-32]", "hcas": [{"device": f"mlx5_{k}", "rail": k} for k in range(2)]}
        ],
        "fabric": {
            "kind": "infiniband",
            "mtu": 4096,
            "topology": {**TREE, **tree},
            "infiniband": {"subnet_managers": [{"host": "gpu01"}]},
        },
        "management": {"subnet": "198.18.0.0/24"},
    }


def graph(**tree: Any) -> FabricGraph:
    return graph_from_spec(spec_from_mapping(mapping(**tree)))


def names(g: FabricGraph, guids: set[str]) -> set[str]:
    return {g.node_name(guid) for guid in guids}


def test_pods_keep_their_leaves_and_spines_apart() -> None:
    g = graph()
    switch_links = [
        (g.node_name(k.a_guid), g.node_name(k.b_guid))
        for k in g.links
        if k.a_guid in g.switches and k.b_guid in g.switches
    ]
    leaf_spine = {(a, b) for a, b in switch_links if a.startswith("leaf")}
    # pod 1: leaf01-08 with spine01-04; pod 2: leaf09-16 with spine05-08
    assert all((int(a[4:]) <= 8) == (int(b[5:]) <= 4) for a, b in leaf_spine), sorted(leaf_spine)
    spine_super = [(a, b) for a, b in switch_links if a.startswith("spine")]
    assert len(spine_super) == 8 * 4 and {b for _, b in spine_super} == {
        f"superspine0{i}" for i in range(1, 5)
    }
    # super-spine ports are dealt evenly and the spine uplinks use the spines' top ports
    assert {k.a_port for k in g.links if g.node_name(k.a_guid).startswith("spine")} == {
        13,
        14,
        15,
        16,
    }


def test_every_leaf_reaches_every_other_over_at_most_a_super_spine() -> None:
    g = graph()
    assert g.switch_hops("leaf01", "leaf03") == 2  # same pod: over a spine
    assert g.switch_hops("leaf01", "leaf09") == 4  # other pod: spine, super-spine, spine
    assert g.switch_hops("leaf01", "leaf01") == 0


def test_slurm_tree_merges_each_pods_spines_and_the_super_spines() -> None:
    conf = tree_conf(graph())
    lines = [line for line in conf.splitlines() if not line.startswith("#")]
    assert lines[-3:] == [
        "SwitchName=spine01 Switches=leaf[01,03,05,07]",
        "SwitchName=spine05 Switches=leaf[09,11,13,15]",
        "SwitchName=superspine01 Switches=spine[01,05]",
    ]
    assert (
        "# SwitchName=superspine01 stands for 4 switches with the same children: superspine[01-04]"
        in conf
    )
    assert slurm_tree(graph()).tops() == ["superspine01"]
    assert "disjoint" not in conf


def test_ibsim_net_holds_the_third_tier() -> None:
    net = render_net(graph())
    assert net.count('Switch\t16 "superspine0') == 4
    assert '"superspine01"[1]' in net


def test_diff_finds_a_miscabled_super_spine_link() -> None:
    declared = simulated(graph())
    assert diff(declared, declared) == []
    moved = copy.copy(declared.links)
    i = next(n for n, k in enumerate(moved) if declared.node_name(k.b_guid) == "superspine02")
    super3 = next(g for g, sw in declared.switches.items() if sw.name == "superspine03")
    moved[i] = moved[i]._replace(b_guid=super3, b_port=16)
    found = diff(declared, FabricGraph(declared.switches, declared.cas, moved))
    assert {d.kind for d in found} >= {"miscabled"} and any(
        "superspine" in d.message for d in found
    )


@pytest.mark.parametrize(
    ("change", "path", "says"),
    [
        ({"pods": 3}, "fabric.topology.pods", "3 pods do not split 16 leaves evenly"),
        (
            {"super_spines": 0, "uplinks_per_spine": 0},
            "fabric.topology.super_spines",
            "2 pods need super-spines",
        ),
        (
            {"uplinks_per_spine": 0},
            "fabric.topology.uplinks_per_spine",
            "0 uplinks leave 4 super-spines unreachable",
        ),
        (
            {"super_spines": 1, "uplinks_per_spine": 4, "ports_per_switch": 16, "pods": 2},
            "fabric.topology.super_spines",
            "32 super-spine ports needed, but 1 super-spines x 16 ports = 16",
        ),
        ({"uplinks_per_spine": 12}, "fabric.topology.spines", "(16 ports - 12 uplinks_per_spine)"),
        (
            {"leaves": 18, "spines": 6, "pods": 6},
            "fabric.topology.pods",
            "3 leaves per pod do not hold whole scalable units of 2 rail leaves",
        ),
    ],
)
def test_rules_name_the_field_and_the_fix(change: dict[str, Any], path: str, says: str) -> None:
    with pytest.raises(SpecError) as caught:
        spec_from_mapping(mapping(**change))
    found = [(p.path, p.message) for p in caught.value.problems]
    assert any(where == path and says in message for where, message in found), found
