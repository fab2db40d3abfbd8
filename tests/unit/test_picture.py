"""The fabric picture in layers (``fabric.verify.picture``): spines over leaves over hosts,
super-spines on top, and the leaf-level summary of a large fabric; placed by real graphviz
(``dot -Tplain`` gives each node's position) and rendered to PNG and SVG."""

from __future__ import annotations

import shlex
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from fabric.graph import FabricGraph
from fabric.parsers.ibnetdiscover import parse as parse_ibnetdiscover
from fabric.spec import spec_from_mapping
from fabric.state import REPO_ROOT
from fabric.topology.from_spec import graph_from_spec
from fabric.verify.picture import MAX_PAIRS, RED, SUMMARY_HOSTS, Marks, fabric_dot, layers
from fabric.verify.report import DOT_TIMEOUT, render_picture

FIXTURES = REPO_ROOT / "tests" / "fixtures"


def discovered(name: str) -> FabricGraph:
    return parse_ibnetdiscover((FIXTURES / f"ibnetdiscover__{name}.txt").read_text())


def declared(hosts: int, hcas: int = 1, **topology: Any) -> FabricGraph:
    """A declared fabric of ``hosts`` hosts (``gpu0001..``) with ``hcas`` rails each."""
    return graph_from_spec(
        spec_from_mapping(
            {
                "name": "pic",
                "target": "lab",
                "nodes": [
                    {
                        "names": f"gpu[0001-{hosts:04d}]",
                        "hcas": [{"device": f"mlx5_{k}", "rail": k} for k in range(hcas)],
                    }
                ],
                "fabric": {
                    "kind": "infiniband",
                    "mtu": 4096,
                    "topology": {"kind": "fat-tree", **topology},
                    "infiniband": {"subnet_managers": [{"host": "gpu0001"}]},
                },
                "management": {"subnet": "198.19.0.0/20"},
                "bmc": {"subnet": "198.19.16.0/20"},
            }
        )
    )


def positions(dot: str) -> dict[str, float]:
    """Node name -> its y in graphviz's own layout (``-Tplain``: y grows upwards)."""
    plain = subprocess.run(
        ["dot", "-Tplain"], input=dot, text=True, capture_output=True, check=True, timeout=60
    ).stdout
    out = {}
    for line in plain.splitlines():
        if line.startswith("node "):
            words = shlex.split(line)
            out[words[1]] = float(words[3])
    return out


def test_lab_capture_is_drawn_spines_over_leaves_over_hosts() -> None:
    graph = discovered("ibsim_lab__1")
    dot = fabric_dot(graph, Marks())
    y = positions(dot)
    hosts = [graph.node_name(g) for g in graph.cas]
    assert len(hosts) == 10 and all(h in y for h in hosts)  # every HCA drawn
    assert y["spine01"] > y["leaf01"] == y["leaf02"] > max(y[h] for h in hosts)
    assert len({y[h] for h in hosts}) == 1


def test_three_levels_put_super_spines_on_top() -> None:
    graph = declared(
        32,
        hcas=2,
        leaves=16,
        spines=8,
        ports_per_switch=16,
        nodes_per_leaf=4,
        uplinks_per_leaf=4,
        rail_optimized=True,
        pods=2,
        super_spines=4,
        uplinks_per_spine=4,
    )
    level = layers(graph)
    by_name = {graph.node_name(g): n for g, n in level.items()}
    assert {by_name[f"superspine0{i}"] for i in range(1, 5)} == {3}
    y = positions(fabric_dot(graph, Marks()))
    top = min(y[f"superspine0{i}"] for i in range(1, 5))
    spines = [f"spine0{i}" for i in range(1, 9)]
    leaves = [f"leaf{i:02d}" for i in range(1, 17)]
    assert top > max(y[s] for s in spines) and min(y[s] for s in spines) > max(y[x] for x in leaves)
    assert min(y[x] for x in leaves) > y["gpu0001/mlx5_0"]


def test_an_extra_cable_between_two_leaves_keeps_them_leaves() -> None:
    graph = discovered("ibsim_lab__2")  # leaf01[20] - leaf02[20] cabled, never declared
    by_name = {graph.node_name(g): n for g, n in layers(graph).items()}
    assert (by_name["leaf01"], by_name["leaf02"], by_name["spine01"]) == (1, 1, 2)


def _uplink_id(graph: FabricGraph, leaf: str) -> str:
    link = next(
        k
        for k in graph.links
        if leaf in (graph.node_name(k.a_guid), graph.node_name(k.b_guid))
        and k.a_guid in graph.switches
        and k.b_guid in graph.switches
    )
    return (
        f"{graph.node_name(link.a_guid)}/{link.a_port}-{graph.node_name(link.b_guid)}/{link.b_port}"
    )


def test_2048_hosts_are_a_leaf_level_summary(tmp_path: Path) -> None:
    graph = declared(
        2048, leaves=64, spines=32, ports_per_switch=64, nodes_per_leaf=32, uplinks_per_leaf=32
    )
    marks = Marks.of(
        {"port:gpu0003/mlx5_0/1", "host:gpu0040", f"link:{_uplink_id(graph, 'leaf05')}"}
        | {"counters:gpu0100/mlx5_0/1"}
    )
    started = time.perf_counter()
    dot = fabric_dot(graph, marks)
    built = time.perf_counter() - started
    assert "gpu0001" not in dot  # no host is drawn
    nodes = [line for line in dot.splitlines() if "[label=" in line and " -- " not in line]
    leaves = [n for n in nodes if n.lstrip().startswith('"leaf')]
    assert len(leaves) == 64 and all("\\n32 hosts" in n for n in leaves)
    leaf01 = next(n for n in leaves if n.lstrip().startswith('"leaf01"'))
    leaf02 = next(n for n in leaves if n.lstrip().startswith('"leaf02"'))
    leaf04 = next(n for n in leaves if n.lstrip().startswith('"leaf04"'))
    assert "1 failing port" in leaf01 and RED in leaf01  # gpu0003's port
    assert "1 failing port" in leaf02 and RED in leaf02  # gpu0040, a failing host
    assert "1 port with errors" in leaf04 and RED not in leaf04  # gpu0100's counters
    # 64 x 32 leaf-spine pairs are more than MAX_PAIRS: the 32 spines are one node
    assert 64 * 32 > MAX_PAIRS
    (spines,) = [n for n in nodes if n.lstrip().startswith('"spines"')]
    assert "32 switches" in spines
    edges = [line for line in dot.splitlines() if " -- " in line and "style=invis" not in line]
    assert len(edges) == 64 and all(e.lstrip().startswith('"spines" -- "leaf') for e in edges)
    failing = [e for e in edges if RED in e]
    assert len(failing) == 1 and '"leaf05"' in failing[0] and 'label="32 (1 failing)"' in failing[0]
    y = positions(dot)
    assert y["spines"] > max(y[f"leaf{i:02d}"] for i in range(1, 65))
    # 64 leaves in 4 rows of SUMMARY_ROW (16), stacked under the spines
    rows = [{y[f"leaf{i:02d}"] for i in range(r * 16 + 1, r * 16 + 17)} for r in range(4)]
    assert all(len(row) == 1 for row in rows) and sorted(rows, key=min, reverse=True) == rows
    started = time.perf_counter()
    files = render_picture(dot, tmp_path)
    drawn = time.perf_counter() - started
    assert [f.suffix for f in files] == [".png", ".svg"]
    assert files[0].read_bytes()[:4] == b"\x89PNG" and b"<svg" in files[1].read_bytes()
    assert built < 5 and drawn < DOT_TIMEOUT, (built, drawn)


def test_128_hosts_keep_each_spine_and_aggregate_its_cables_per_leaf() -> None:
    graph = declared(
        128, leaves=8, spines=4, ports_per_switch=64, nodes_per_leaf=16, uplinks_per_leaf=16
    )
    dot = fabric_dot(graph, Marks.of({f"link:{_uplink_id(graph, 'leaf03')}"}))
    edges = [line for line in dot.splitlines() if " -- " in line]
    assert len(edges) == 8 * 4  # one per leaf-spine pair, 4 cables each
    assert all(e.lstrip().startswith('"spine0') for e in edges)
    red = [e for e in edges if RED in e]
    assert len(red) == 1 and '"leaf03"' in red[0] and 'label="4 (1 failing)"' in red[0]
    y = positions(dot)
    assert min(y[f"spine0{i}"] for i in range(1, 5)) > max(y[f"leaf0{i}"] for i in range(1, 9))


@pytest.mark.parametrize(("hosts", "summary"), [(SUMMARY_HOSTS, False), (SUMMARY_HOSTS + 1, True)])
def test_the_summary_starts_above_64_hosts(hosts: int, summary: bool) -> None:
    graph = declared(
        hosts, leaves=5, spines=2, ports_per_switch=32, nodes_per_leaf=16, uplinks_per_leaf=4
    )
    dot = fabric_dot(graph, Marks())
    assert ("leaf-level summary" in dot) is summary
    assert ('"gpu0001/mlx5_0"' in dot) is not summary
