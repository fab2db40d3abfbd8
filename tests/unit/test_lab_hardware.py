"""A replaced HCA in the lab (``lab.hca_guids``): the simulated HCA's GUID in the graph and in
ibsim's net file, every cable kept; the spec refuses names that have no InfiniBand HCA."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from fabric.graph import GraphError
from fabric.lab.hardware import with_hca_guids
from fabric.spec import SpecError, spec_from_mapping
from fabric.state import REPO_ROOT
from fabric.topology.from_spec import graph_from_spec
from fabric.topology.ibsim import render_net, simulated_device

NEW = "0x0002c903fe000010"


def _lab(**lab: object) -> dict[str, Any]:
    doc = yaml.safe_load((REPO_ROOT / "Pulumi.lab.yaml").read_text())["config"]["railyard:cluster"]
    doc.setdefault("lab", {}).update(lab)
    return doc


def test_the_named_hca_gets_the_new_guid_and_keeps_its_cable() -> None:
    spec = spec_from_mapping(_lab(hca_guids={"gpu02": NEW}))
    before = graph_from_spec(spec)
    after = with_hca_guids(before, spec)
    old = next(g for g, ca in before.cas.items() if ca.host == "gpu02")
    assert old != NEW and old not in after.cas
    assert (after.cas[NEW].host, after.cas[NEW].device) == (
        "gpu02",
        simulated_device(spec, "gpu02"),
    )
    assert len(after.links) == len(before.links)
    ends = {(k.a_guid, k.b_guid) for k in after.links}
    assert any(NEW in pair for pair in ends) and not any(old in pair for pair in ends)
    assert f"caguid={NEW}" in render_net(after) and f"caguid={old}" not in render_net(after)
    others = {g: ca for g, ca in before.cas.items() if ca.host != "gpu02"}
    assert all(after.cas[g] == ca for g, ca in others.items())


def test_no_hca_guids_leaves_the_graph_as_it_is() -> None:
    spec = spec_from_mapping(_lab())
    graph = graph_from_spec(spec)
    assert with_hca_guids(graph, spec) is graph


def test_a_guid_another_node_has_is_refused() -> None:
    spec = spec_from_mapping(_lab())
    taken = next(g for g, ca in graph_from_spec(spec).cas.items() if ca.host == "gpu01")
    spec = spec_from_mapping(_lab(hca_guids={"gpu02": taken}))
    with pytest.raises(GraphError, match=f"lab.hca_guids: {taken} is already"):
        with_hca_guids(graph_from_spec(spec), spec)


def test_the_spec_refuses_a_node_without_an_infiniband_hca_and_a_bad_guid() -> None:
    with pytest.raises(SpecError) as refused:
        spec_from_mapping(_lab(hca_guids={"nosuch": NEW, "ctl1": NEW}))
    assert [p.path for p in refused.value.problems] == [
        "lab.hca_guids.nosuch",
        "lab.hca_guids.ctl1",
    ]
    with pytest.raises(SpecError, match="hca_guids"):
        spec_from_mapping(_lab(hca_guids={"gpu02": "0xZZ"}))
