"""graph_from_spec: deterministic leaves, spines, rail placement, GUIDs and oversubscription."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from conftest import bare_metal_access

from fabric.graph import FabricGraph, GraphError
from fabric.hostlist import expand
from fabric.spec import ClusterSpec
from fabric.state import REPO_ROOT
from fabric.topology.from_spec import CA_GUID_BASE, graph_from_spec, guid_str


def lab() -> ClusterSpec:
    data = yaml.safe_load((REPO_ROOT / "Pulumi.lab.yaml").read_text())
    return ClusterSpec.model_validate(data["config"]["railyard:cluster"])


def rail_spec(hosts: int = 8, rails: int = 4, nodes_per_leaf: int = 4) -> ClusterSpec:
    units = -(-hosts // nodes_per_leaf)
    return ClusterSpec.model_validate(
        {
            "name": "rails",
            "target": "baremetal",
            "nodes": [
                {
                    "names": f"gpu[{1:03d}-{hosts:03d}]",
                    "hcas": [
                        {"device": f"mlx5_{k}", "rail": k, "rate_gbps": 400} for k in range(rails)
                    ],
                }
            ],
            "fabric": {
                "kind": "infiniband",
                "mtu": 4096,
                "topology": {
                    "kind": "fat-tree",
                    "leaves": units * rails,
                    "spines": 2,
                    "nodes_per_leaf": nodes_per_leaf,
                    "uplinks_per_leaf": 4,
                    "rail_optimized": True,
                    "ports_per_switch": 64,
                },
                "infiniband": {"subnet_managers": [{"host": "gpu001"}]},
            },
            **bare_metal_access(expand(f"gpu[{1:03d}-{hosts:03d}]")),
        }
    )


def with_topology(spec: ClusterSpec, **changes: Any) -> ClusterSpec:
    """``spec`` with topology fields changed, unvalidated: reaches graph_from_spec's own checks."""
    assert spec.fabric.topology is not None
    fabric = spec.fabric.model_copy(
        update={"topology": spec.fabric.topology.model_copy(update=changes)}
    )
    return spec.model_copy(update={"fabric": fabric})


def leaf_of(graph: FabricGraph, host: str, device: str) -> tuple[str, int]:
    ca = graph.ca_by_name[(host, device)]
    for link in graph.links:
        if link.b_guid == ca.guid:
            return graph.switches[link.a_guid].name, link.a_port
    raise AssertionError(f"{host} {device} has no link")


def test_lab_fills_leaves_in_declaration_order() -> None:
    graph = graph_from_spec(lab())
    assert [leaf_of(graph, h, "mlx5_0") for h in ("gpu01", "gpu05", "gpu06", "sm2")] == [
        ("leaf01", 1),
        ("leaf01", 5),
        ("leaf02", 1),
        ("leaf02", 5),
    ]


def test_lab_switch_names_and_counts() -> None:
    graph = graph_from_spec(lab())
    assert sorted(s.name for s in graph.switches.values()) == ["leaf01", "leaf02", "spine01"]
    assert len(graph.cas) == 10 and len(graph.links) == 10 + 2 * 4


def test_host_link_takes_width_and_rate_from_the_hca() -> None:
    graph = graph_from_spec(lab())
    assert {(link.width, link.speed, link.rate_gbps) for link in graph.links} == {
        ("4x", "NDR", 400.0)
    }


def test_guids_are_deterministic_and_unique() -> None:
    first, second = graph_from_spec(lab()), graph_from_spec(lab())
    assert first.cas.keys() == second.cas.keys()
    assert next(iter(first.cas)) == guid_str(CA_GUID_BASE)
    assert len(first.cas.keys() | first.switches.keys()) == 13


def test_rail_k_goes_to_leaf_k_of_the_unit() -> None:
    graph = graph_from_spec(rail_spec())
    assert leaf_of(graph, "gpu001", "mlx5_0") == ("leaf01", 1)
    assert leaf_of(graph, "gpu002", "mlx5_3") == ("leaf04", 2)
    assert leaf_of(graph, "gpu005", "mlx5_2") == ("leaf07", 1)
    assert sorted(graph.host_leaves()["gpu008"]) == ["leaf05", "leaf06", "leaf07", "leaf08"]


def test_uplinks_are_spread_evenly_over_spines() -> None:
    graph = graph_from_spec(rail_spec())
    spine_links: dict[str, int] = {}
    for link in graph.links:
        name = graph.switches.get(link.b_guid)
        if name is not None and name.name.startswith("spine"):
            spine_links[name.name] = spine_links.get(name.name, 0) + 1
    assert spine_links == {"spine01": 16, "spine02": 16}


def test_oversubscription_per_leaf() -> None:
    loads = {load.switch: load for load in graph_from_spec(lab()).leaf_loads()}
    assert (
        loads["leaf01"].down_gbps,
        loads["leaf01"].up_gbps,
        loads["leaf01"].oversubscription,
    ) == (2000.0, 1600.0, 1.25)


def test_too_few_leaves_names_the_field_and_the_fix() -> None:
    with pytest.raises(GraphError, match=r"fabric.topology.leaves is 4 .* raise leaves to 8"):
        graph_from_spec(with_topology(rail_spec(), leaves=4))


def test_leaf_out_of_ports_names_the_fix() -> None:
    with pytest.raises(GraphError, match=r"leaf01 is out of host ports .* lower nodes_per_leaf"):
        graph_from_spec(with_topology(rail_spec(), nodes_per_leaf=8, ports_per_switch=8))


def test_rate_that_is_not_an_ibta_speed_is_rejected() -> None:
    spec = with_topology(rail_spec(), link_rate_gbps=300)
    with pytest.raises(GraphError, match=r"rate 300 Gb/s over 4x is 75.0 Gb/s per lane"):
        graph_from_spec(spec)


def test_spine_out_of_ports_names_the_fix() -> None:
    with pytest.raises(
        GraphError, match=r"spine01 is out of ports: .* add spines or lower uplinks_per_leaf"
    ):
        graph_from_spec(with_topology(rail_spec(), ports_per_switch=8))
