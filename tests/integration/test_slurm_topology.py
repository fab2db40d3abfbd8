"""The generated topology.conf loads in a real slurmctld (Debian 12's Slurm 22.05, tree plugin):
``scontrol show topology`` reports the switches, levels, hosts and children of the graph, every
host under its leaf and reachable from a top switch; switches with the same children are one
line (bench.slurm_topology.slurmctld runs the private munged and slurmctld)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from bench.slurm_topology.slurmctld import available, load, munged, parse_show_topology
from fabric.graph import FabricGraph
from fabric.hostlist import compress, expand
from fabric.spec import ClusterSpec
from fabric.state import REPO_ROOT
from fabric.topology.from_spec import graph_from_spec
from fabric.topology.slurm import SlurmTree, slurm_tree, tree_conf

pytestmark = pytest.mark.integration


def lab_graph() -> FabricGraph:
    data = yaml.safe_load((REPO_ROOT / "Pulumi.lab.yaml").read_text())
    return graph_from_spec(ClusterSpec.model_validate(data["config"]["railyard:cluster"]))


def _spec(hosts: str, hcas: int, topology: dict[str, Any]) -> FabricGraph:
    return graph_from_spec(
        ClusterSpec.model_validate(
            {
                "name": "rails",
                "target": "lab",
                "nodes": [
                    {
                        "names": hosts,
                        "hcas": [{"device": f"mlx5_{k}", "rail": k} for k in range(hcas)],
                    }
                ],
                "fabric": {
                    "kind": "infiniband",
                    "mtu": 4096,
                    "topology": {"kind": "fat-tree", **topology},
                    "infiniband": {"subnet_managers": [{"host": expand(hosts)[0]}]},
                },
                "management": {"subnet": "198.18.0.0/24"},
            }
        )
    )


def rails_graph() -> FabricGraph:
    """16 hosts x 4 rails in scalable units of 4 under 16 rail leaves and 2 spines."""
    return _spec(
        "gpu[001-016]",
        4,
        {
            "leaves": 16,
            "spines": 2,
            "nodes_per_leaf": 4,
            "uplinks_per_leaf": 4,
            "rail_optimized": True,
        },
    )


def three_level_graph() -> FabricGraph:
    """32 hosts x 2 rails: 2 pods of 8 rail leaves and 4 spines, joined by 4 super-spines."""
    return _spec(
        "gpu[001-032]",
        2,
        {
            "leaves": 16,
            "spines": 8,
            "ports_per_switch": 16,
            "nodes_per_leaf": 4,
            "uplinks_per_leaf": 4,
            "rail_optimized": True,
            "pods": 2,
            "super_spines": 4,
            "uplinks_per_spine": 4,
        },
    )


@pytest.fixture(scope="module")
def munge() -> Iterator[Path]:
    missing = available()
    if missing:
        pytest.skip(missing)
    with munged() as sock:
        yield sock


def levels(tree: SlurmTree) -> dict[str, int]:
    """Switch -> its level as Slurm numbers them (leaves 0, a parent one above its highest child)."""
    out = dict.fromkeys(tree.leaves, 0)

    def level(sw: str) -> int:
        if sw not in out:
            out[sw] = 1 + max(map(level, tree.uppers[sw]))
        return out[sw]

    for sw in tree.uppers:
        level(sw)
    return out


@pytest.mark.parametrize(
    "make_graph",
    [lab_graph, rails_graph, three_level_graph],
    ids=["lab", "rail-optimized", "three-level"],
)
def test_scontrol_reports_the_generated_tree(make_graph, munge: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    graph = make_graph()
    tree = slurm_tree(graph)
    loaded = load(tree_conf(graph), compress(tree.hosts()), munge, tmp_path)
    (tmp_path / "scontrol_show_topology.txt").write_text(loaded.topology)
    shown = parse_show_topology(loaded.topology)
    # the switches written, and only those: merged ones are not there
    assert set(shown) == set(tree.leaves) | set(tree.uppers)
    # same host -> leaf placement
    assert {n: sorted(expand(v[1])) for n, v in shown.items() if v[0] == 0} == {
        n: sorted(h) for n, h in tree.leaves.items()
    }
    # levels, children, and the nodes below each upper switch
    level = levels(tree)

    def below(sw: str) -> set[str]:
        return (
            set(tree.leaves[sw]) if sw in tree.leaves else set().union(*map(below, tree.uppers[sw]))
        )

    for name, children in tree.uppers.items():
        lvl, nodes, switches = shown[name]
        assert (lvl, sorted(expand(switches))) == (level[name], sorted(children))
        assert set(expand(nodes)) == below(name)
    # every host reachable from a top switch (one here: no disjoint parts)
    tops = tree.tops()
    assert len(tops) == 1 and set(expand(shown[tops[0]][1])) == set(tree.hosts())
    assert "no switch can reach all nodes" not in loaded.log


def test_merged_spines_load_as_one_switch(munge: Path, tmp_path: Path) -> None:
    """The rail-optimized tree's two spines reach the same rail-0 leaves: one SwitchName line."""
    tree = slurm_tree(rails_graph())
    assert tree.merged == {"spine01": ["spine01", "spine02"]}
    loaded = load(tree_conf(rails_graph()), compress(tree.hosts()), munge, tmp_path)
    assert "spine02" not in parse_show_topology(loaded.topology)


def test_three_level_tree_has_super_spine_on_top(munge: Path, tmp_path: Path) -> None:
    graph = three_level_graph()
    tree = slurm_tree(graph)
    shown = parse_show_topology(
        load(tree_conf(graph), compress(tree.hosts()), munge, tmp_path).topology
    )
    assert shown["superspine01"][0] == 2
    assert sorted(expand(shown["superspine01"][2])) == ["spine01", "spine05"]
    assert set(expand(shown["superspine01"][1])) == {f"gpu{i:03d}" for i in range(1, 33)}


def test_disjoint_planes_are_said_and_slurm_warns(munge: Path, tmp_path: Path) -> None:
    """Two real captures in one file, as one per plane would be: the comment says so, slurmctld
    loads the file and logs that no switch reaches all nodes."""
    from fabric.parsers.ibnetdiscover import parse

    fixtures = REPO_ROOT / "tests/fixtures"
    graph = parse(
        (fixtures / "ibnetdiscover__ibsim_lab__1.txt").read_text()
        + (fixtures / "ibnetdiscover__ibtopotool__2.txt").read_text()
    )
    conf = tree_conf(graph)
    assert "# this fabric has 2 disjoint parts (pods or planes)" in conf
    loaded = load(conf, compress(slurm_tree(graph).hosts()), munge, tmp_path)
    assert "no switch can reach all nodes" in loaded.log
    assert set(parse_show_topology(loaded.topology)) == {
        "leaf01",
        "leaf02",
        "spine01",
        "S-000b8cffff0053ee",
    }


def test_cloud_placement_loads_and_shows_what_the_check_expects(
    munge: Path, tmp_path: Path
) -> None:
    """The AWS CLI's documented DescribeInstanceTopology example, through the InfiniBand
    writer: slurmctld loads it (network node names end in text, so the writer does not bracket
    them: Slurm 22.05 exits on ``Switches=nn-[2222222222,5434334334]example``), and what it
    shows is what the provider topology check expects (no problem)."""
    import json

    from fabric.topology.cloud import aws_topology_graph
    from fabric.verify.cloud_topology import topology_problems

    fixture = REPO_ROOT / "tests/fixtures/aws_describe_instance_topology__aws-cli__example.json"
    ids = {"i-1111111111example": "gpu01", "i-2222222222example": "gpu02"}
    graph = aws_topology_graph(
        json.loads(fixture.read_text()), {**ids, "i-444444444example": "gpu04"}
    )
    loaded = load(tree_conf(graph), "gpu[01-02,04]", munge, tmp_path)
    assert parse_show_topology(loaded.topology)["nn-1111111111example"][0] == 2
    assert topology_problems(graph, ["gpu01", "gpu02", "gpu04"], loaded.topology) == []
