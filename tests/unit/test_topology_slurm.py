"""Slurm topology.conf (tree, block) and topology.yaml from declared and discovered fabrics."""

from __future__ import annotations

import pytest
import yaml
from conftest import bare_metal_access

from fabric.graph import Ca, DeferredLinks, FabricGraph, GraphError, Link, Switch
from fabric.hostlist import expand
from fabric.parsers.ibnetdiscover import parse
from fabric.spec import ClusterSpec
from fabric.state import REPO_ROOT
from fabric.topology.from_spec import graph_from_spec
from fabric.topology.render import only_hosts, slurm_switch_view
from fabric.topology.slurm import block_conf, natural_key, slurm_tree, topology_yaml, tree_conf

FIXTURES = REPO_ROOT / "tests/fixtures"


def lab() -> FabricGraph:
    data = yaml.safe_load((REPO_ROOT / "Pulumi.lab.yaml").read_text())
    return graph_from_spec(ClusterSpec.model_validate(data["config"]["railyard:cluster"]))


def rails() -> FabricGraph:
    return graph_from_spec(
        ClusterSpec.model_validate(
            {
                "name": "rails",
                "target": "baremetal",
                "nodes": [
                    {
                        "names": "gpu[001-008]",
                        "hcas": [{"device": f"mlx5_{k}", "rail": k} for k in range(4)],
                    }
                ],
                "fabric": {
                    "kind": "infiniband",
                    "mtu": 4096,
                    "topology": {
                        "kind": "fat-tree",
                        "leaves": 8,
                        "spines": 2,
                        "nodes_per_leaf": 4,
                        "uplinks_per_leaf": 4,
                        "rail_optimized": True,
                    },
                    "infiniband": {"subnet_managers": [{"host": "gpu001"}]},
                },
                **bare_metal_access(expand("gpu[001-008]")),
            }
        )
    )


def conf_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if not line.startswith("#")]


def test_lab_tree() -> None:
    assert conf_lines(tree_conf(lab())) == [
        "SwitchName=leaf01 Nodes=gpu[01-05]",
        "SwitchName=leaf02 Nodes=gpu[06-08],sm[1-2]",
        "SwitchName=spine01 Switches=leaf[01-02]",
    ]


def test_unpopulated_leaf_does_not_top_the_tree() -> None:
    """3 leaves, 2 nodes per leaf, 3 nodes: leaf03 has no host. By BFS distance it is one hop
    above spine01; it must not become a top switch listing spine01 (seen on the lab when a
    node was added to the handoff test's fabric)."""
    graph = graph_from_spec(
        ClusterSpec.model_validate(
            {
                "name": "gap",
                "target": "baremetal",
                "nodes": [{"names": "hn[1-3]", "hcas": [{"device": "mlx5_0"}]}],
                "fabric": {
                    "kind": "infiniband",
                    "mtu": 4096,
                    "topology": {
                        "kind": "fat-tree",
                        "leaves": 3,
                        "spines": 1,
                        "ports_per_switch": 8,
                        "nodes_per_leaf": 2,
                        "uplinks_per_leaf": 2,
                    },
                    "infiniband": {"subnet_managers": [{"host": "hn1"}]},
                },
                **bare_metal_access(expand("hn[1-3]")),
            }
        )
    )
    assert "leaf03" in {sw.name for sw in graph.switches.values()}
    assert conf_lines(tree_conf(graph)) == [
        "SwitchName=leaf01 Nodes=hn[1-2]",
        "SwitchName=leaf02 Nodes=hn3",
        "SwitchName=spine01 Switches=leaf[01-02]",
    ]


def test_rail_optimized_hosts_sit_under_their_rail0_leaf() -> None:
    """Both spines reach the same rail-0 leaves: one line, the merged spine named in a comment."""
    conf = tree_conf(rails())
    assert conf_lines(conf) == [
        "SwitchName=leaf01 Nodes=gpu[001-004]",
        "SwitchName=leaf05 Nodes=gpu[005-008]",
        "SwitchName=spine01 Switches=leaf[01,05]",
    ]
    assert "# SwitchName=spine01 stands for 2 switches with the same children: spine[01-02]" in (
        conf.splitlines()
    )
    assert slurm_tree(rails()).merged == {"spine01": ["spine01", "spine02"]}


def test_every_host_is_placed_exactly_once() -> None:
    hosts = slurm_tree(rails()).hosts()
    assert sorted(hosts) == [f"gpu{i:03d}" for i in range(1, 9)]


def test_block_conf_one_block_per_unit() -> None:
    assert conf_lines(block_conf(rails(), block_size=4)) == [
        "BlockName=leaf01 Nodes=gpu[001-004]",
        "BlockName=leaf05 Nodes=gpu[005-008]",
        "BlockSizes=4",
    ]


def test_block_size_larger_than_a_block_is_an_error_with_the_fix() -> None:
    with pytest.raises(GraphError, match=r"use --block-size 4 or less"):
        block_conf(rails(), block_size=8)


def test_topology_yaml_shape() -> None:
    doc = yaml.safe_load(topology_yaml(lab(), block_size=5))
    assert doc[0] == {
        "topology": "fabric",
        "cluster_default": True,
        "tree": {
            "switches": [
                {"switch": "leaf01", "nodes": "gpu[01-05]"},
                {"switch": "leaf02", "nodes": "gpu[06-08],sm[1-2]"},
                {"switch": "spine01", "children": "leaf[01-02]"},
            ]
        },
    }
    assert doc[1]["block"]["block_sizes"] == [5] and len(doc[1]["block"]["blocks"]) == 2


def test_discovered_quirks_fabric_host_on_two_leaves_is_placed_once() -> None:
    tree = slurm_tree(parse((FIXTURES / "ibnetdiscover__ibsim_quirks__1.txt").read_text()))
    assert list(tree.leaves) == ["A09-P1-IBLEAF-04-04"]
    assert sorted(tree.leaves["A09-P1-IBLEAF-04-04"]) == [
        "a08-p1-dgx-04-c01",
        "edr-host",
        "narrow-host",
        "node1",
        "qdr-host",
    ]
    assert tree.uppers == {"A09-P1-IBSPINE-01": ["A09-P1-IBLEAF-04-04"]}


def test_discovered_director_fabric_has_three_levels() -> None:
    tree = slurm_tree(parse((FIXTURES / "ibnetdiscover__superbench__1.txt").read_text()))
    assert tree.uppers["rmd70-0101-0908-01ib1-A-S01"] == [
        "rmd70-0101-0908-01ib1-A-L01",
        "rmd70-0101-0908-01ib1-A-L02",
    ]
    assert tree.uppers["rmd70-0101-0908-01ib1-A-L02"] == [
        "rmd70-0101-0919-11ib0",
        "rmd70-0101-0919-12ib0",
    ]


def test_switch_without_a_usable_description_is_named_by_guid() -> None:
    graph = parse((FIXTURES / "ibnetdiscover__ibtopotool__2.txt").read_text())
    assert conf_lines(tree_conf(graph)) == [
        "SwitchName=S-000b8cffff0053ee Nodes=compute-00-[00-01]"
    ]


def test_natural_key() -> None:
    assert sorted(["leaf10", "leaf2", "leaf1"], key=natural_key) == ["leaf1", "leaf2", "leaf10"]


def _one_link(a: str, a_port: int, b: str, b_port: int) -> Link:
    return Link(a, a_port, b, b_port, "4X", "HDR", 200.0)


def test_a_host_sits_under_its_first_seen_leaf_among_leaves_of_one_rank() -> None:
    """``leaf1`` and ``leaf01`` sort alike: the host goes to the one its links reach first, and
    a leaf lists its hosts in the order their links come (issue 44 rewrote the placement)."""
    switches = {g: Switch(g, n, n, 8) for g, n in (("S1", "leaf01"), ("S2", "leaf1"))}
    switches["S3"] = Switch("S3", "spine1", "spine1", 8)
    cas = {f"C{h}{k}": Ca(f"C{h}{k}", f"n{h}", f"mlx5_{k}", "", 1) for h in (1, 2) for k in (0, 1)}
    links = [
        _one_link("C20", 1, "S2", 1),  # n2 first seen on leaf1
        _one_link("S1", 1, "C11", 1),  # n1 first seen on leaf01
        _one_link("C21", 1, "S1", 2),
        _one_link("S2", 2, "C10", 1),
        _one_link("S1", 8, "S3", 1),
        _one_link("S3", 2, "S2", 8),
    ]
    tree = slurm_tree(FabricGraph(switches=switches, cas=cas, links=links))
    assert tree.leaves == {"leaf1": ["n2"], "leaf01": ["n1"]}
    assert list(tree.leaves) == ["leaf1", "leaf01"]


def test_switch_ends_grouped_by_switch_give_the_same_tree() -> None:
    """``switch_ends`` may hold several far ends an entry (``DeferredLinks``, the fast
    ibnetdiscover parser): the tree is the one of the same ends one an entry."""
    graph = rails()
    grouped: list[tuple[str, list[str]]] = []
    for sw, others in graph.switch_ends():  # runs of one switch merged: the same end order
        if grouped and grouped[-1][0] == sw:
            grouped[-1][1].extend(others)
        else:
            grouped.append((sw, list(others)))
    assert len(grouped) < len(graph.switch_ends())
    deferred = FabricGraph(
        switches=graph.switches, cas=graph.cas, links=DeferredLinks(lambda: graph.links, grouped)
    )
    want, got = slurm_tree(graph), slurm_tree(deferred)
    assert (got.leaves, got.uppers, got.merged) == (want.leaves, want.uppers, want.merged)
    assert list(got.leaves) == list(want.leaves) and got.hosts() == want.hosts()


def test_switch_view_is_the_tree_of_the_kept_hosts() -> None:
    """``slurm_switch_view`` (no links built for the kept hosts) shows the tree ``tree_conf``
    writes for ``only_hosts``: every node below a switch, three levels deep."""
    graph = parse((FIXTURES / "ibnetdiscover__superbench__1.txt").read_text())
    hosts = sorted({ca.host for ca in graph.cas.values() if ca.host})[::2]
    tree = slurm_tree(only_hosts(graph, hosts))
    view = slurm_switch_view(graph, hosts)
    assert list(view) == [*tree.leaves, *tree.uppers]

    def below(sw: str) -> set[str]:
        return set(tree.leaves.get(sw, ())).union(*map(below, tree.uppers.get(sw, ())))

    for sw, (nodes, kids) in view.items():
        assert nodes == sorted(below(sw)) and kids == sorted(tree.uppers.get(sw, []))
    assert any(kid in tree.uppers for kids in tree.uppers.values() for kid in kids)
