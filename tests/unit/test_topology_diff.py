"""diff: the lab's declared fabric vs real ibnetdiscover output of it, healthy and faulty."""

from __future__ import annotations

import yaml

from fabric.graph import FabricGraph
from fabric.parsers.ibnetdiscover import parse
from fabric.spec import ClusterSpec
from fabric.state import REPO_ROOT
from fabric.topology.diff import Discrepancy, diff
from fabric.topology.from_spec import graph_from_spec
from fabric.topology.ibsim import simulated


def declared() -> FabricGraph:
    data = yaml.safe_load((REPO_ROOT / "Pulumi.lab.yaml").read_text())
    return simulated(
        graph_from_spec(ClusterSpec.model_validate(data["config"]["railyard:cluster"]))
    )


def discovered(n: int) -> FabricGraph:
    return parse((REPO_ROOT / f"tests/fixtures/ibnetdiscover__ibsim_lab__{n}.txt").read_text())


def by_host(found: list[Discrepancy]) -> dict[str | None, list[Discrepancy]]:
    out: dict[str | None, list[Discrepancy]] = {}
    for d in found:
        out.setdefault(d.host, []).append(d)
    return out


def test_healthy_fabric_has_no_discrepancies() -> None:
    assert diff(declared(), discovered(1)) == []


def test_declared_ndr_against_ibsim_hdr_is_wrong_speed_everywhere() -> None:
    data = yaml.safe_load((REPO_ROOT / "Pulumi.lab.yaml").read_text())
    raw = graph_from_spec(ClusterSpec.model_validate(data["config"]["railyard:cluster"]))
    found = diff(raw, discovered(1))
    assert {d.kind for d in found} == {"wrong_speed"} and len(found) == len(raw.links)


def test_faulty_fabric_reports_each_injected_fault() -> None:
    found = diff(declared(), discovered(2))
    hosts = by_host(found)
    assert sorted(d.kind for d in found) == [
        "extra",
        "miscabled",
        "missing",
        "wrong_speed",
        "wrong_width",
    ]
    assert [d.kind for d in hosts["gpu02"]] == ["miscabled"]
    assert [d.kind for d in hosts["gpu04"]] == ["wrong_width"]
    assert [d.kind for d in hosts["gpu05"]] == ["wrong_speed"]
    assert [d.kind for d in hosts["gpu07"]] == ["missing"]


def test_miscabled_names_switch_port_host_hca_and_fix() -> None:
    (d,) = by_host(diff(declared(), discovered(2)))["gpu02"]
    assert (d.switch, d.port, d.host, d.hca, d.expected, d.found) == (
        "leaf01",
        2,
        "gpu02",
        "mlx5_0",
        "leaf01 port 2",
        "leaf01 port 7",
    )
    assert d.message == (
        "miscabled: gpu02 mlx5_0 port 1 reaches leaf01 port 7, declared leaf01 port 2; "
        "move the cable to leaf01 port 2"
    )


def test_wrong_width_and_speed_show_both_values() -> None:
    hosts = by_host(diff(declared(), discovered(2)))
    assert (hosts["gpu04"][0].expected, hosts["gpu04"][0].found) == ("4x", "1x")
    assert (hosts["gpu05"][0].expected, hosts["gpu05"][0].found) == ("HDR", "EDR")


def test_missing_link_names_the_leaf_port() -> None:
    (d,) = by_host(diff(declared(), discovered(2)))["gpu07"]
    assert (d.switch, d.port, d.hca) == ("leaf02", 2, "mlx5_0")
    assert d.message.startswith("missing link: gpu07 mlx5_0 port 1 should reach leaf02 port 2")


def test_extra_switch_to_switch_cable() -> None:
    (d,) = [d for d in diff(declared(), discovered(2)) if d.kind == "extra"]
    assert (d.switch, d.port, d.host) == ("leaf01", 20, None)
    assert "leaf01 port 20 <-> leaf02 port 20" in d.message
