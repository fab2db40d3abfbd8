"""Kubernetes topology labels and the Kueue Topology (fabric.topology.kubernetes, ``python -m
fabric topology --plugin kubernetes``): goldens on the lab and on real ibnetdiscover captures,
and the rules behind them checked against the Slurm writers' tree."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from fabric.cli import main
from fabric.graph import Ca, FabricGraph, GraphError, Link, Switch
from fabric.parsers.ibnetdiscover import parse
from fabric.spec import load_spec
from fabric.state import REPO_ROOT
from fabric.topology.from_spec import graph_from_spec
from fabric.topology.kubernetes import (
    HOSTNAME_LABEL,
    KUEUE_API,
    fnv1a64,
    label_value,
    node_labels,
    tier_key,
)
from fabric.topology.slurm import slurm_tree

FIXTURES = REPO_ROOT / "tests" / "fixtures"
SPECS = REPO_ROOT / "tests" / "unit" / "specs"
GOLDEN = REPO_ROOT / "tests" / "unit" / "golden" / "topology_kubernetes"
TIER0, TIER1, TIER2 = (f"fabric.topograph.run/tier-{n}" for n in range(3))

#: golden file -> the command line that prints it.
CASES = {
    "lab_stack.yaml": ["--spec", str(REPO_ROOT / "Pulumi.lab.yaml")],
    "roce_spec.yaml": ["--spec", str(SPECS / "valid" / "roce.yaml")],
    "ibnetdiscover__superbench__1.v0.yaml": [
        "--label-scheme",
        "topograph-v0",
        "--from-ibnetdiscover",
        str(FIXTURES / "ibnetdiscover__superbench__1.txt"),
    ],
    **{
        f"ibnetdiscover__{name}.yaml": [
            "--from-ibnetdiscover",
            str(FIXTURES / f"ibnetdiscover__{name}.txt"),
        ]
        for name in (
            "ibsim_lab__1",
            "ibsim_lab__2",
            "ibsim_quirks__1",
            "ibtopotool__2",
            "ibtopotool__3",
            "ibtopotool__4",
            "superbench__1",
        )
    },
}


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["topology", "--plugin", "kubernetes", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def _docs(text: str) -> tuple[dict[str, dict[str, str]], list[str], dict]:
    """Node name -> labels, the Topology's levels, and the Topology."""
    nodes, topology = list(yaml.safe_load_all(text))
    labels = {n["metadata"]["name"]: n["metadata"]["labels"] for n in nodes["items"]}
    return labels, [level["nodeLabel"] for level in topology["spec"]["levels"]], topology


@pytest.mark.parametrize("golden", sorted(CASES))
def test_golden(capsys: pytest.CaptureFixture[str], golden: str) -> None:
    code, out, _ = _run(capsys, *CASES[golden])
    assert code == 0
    assert out == (GOLDEN / golden).read_text()


def test_every_golden_has_its_case() -> None:
    assert {p.name for p in GOLDEN.glob("*.yaml")} == set(CASES)


def test_lab_labels_match_the_slurm_tree_and_the_discovered_lab(
    capsys: pytest.CaptureFixture[str],
) -> None:
    _, declared, _ = _run(capsys, "--spec", str(REPO_ROOT / "Pulumi.lab.yaml"))
    labels, levels, topology = _docs(declared)
    tree = slurm_tree(graph_from_spec(load_spec(REPO_ROOT / "Pulumi.lab.yaml")))
    assert {h: node[TIER0] for h, node in labels.items()} == {
        h: leaf for leaf, hosts in tree.leaves.items() for h in hosts
    }
    assert {node[TIER1] for node in labels.values()} == {"spine01"}
    assert levels == [TIER1, TIER0, HOSTNAME_LABEL]
    assert (topology["apiVersion"], topology["kind"]) == (KUEUE_API, "Topology")
    assert topology["metadata"]["name"] == "lab"  # the cluster's name: the stack has no kubernetes
    _, discovered, _ = _run(
        capsys, "--from-ibnetdiscover", str(FIXTURES / "ibnetdiscover__ibsim_lab__1.txt")
    )
    assert _docs(discovered)[0] == labels  # ibsim's capture of the lab: the same labels


def test_unplugged_host_gets_no_labels(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = _run(
        capsys, "--from-ibnetdiscover", str(FIXTURES / "ibnetdiscover__ibsim_lab__2.txt")
    )
    labels = _docs(out)[0]
    assert "gpu07" not in labels  # unplugged in this capture
    assert labels["gpu02"][TIER0] == "leaf01"


def test_rail_optimized_hosts_get_their_unit_and_every_rail(
    capsys: pytest.CaptureFixture[str],
) -> None:
    _, out, _ = _run(capsys, "--spec", str(SPECS / "valid" / "roce.yaml"))
    labels, levels, _ = _docs(out)
    assert set(labels) == {"gpu1", "gpu2", "gpu3", "gpu4"}  # head1 has no HCA
    for node in labels.values():
        assert node[TIER0] == "leaf01"  # the unit's rail-0 leaf, as Slurm's block
        assert [node[f"railyard.dev/rail-{k}"] for k in range(8)] == [
            f"leaf{k + 1:02d}" for k in range(8)
        ]
    assert levels == [TIER1, TIER0, HOSTNAME_LABEL]


def test_discovered_host_on_two_leaves_gets_both_rails() -> None:
    graph = parse((FIXTURES / "ibnetdiscover__ibsim_quirks__1.txt").read_text())
    labels = node_labels(graph).labels
    node = labels["a08-p1-dgx-04-c01"]
    assert node[TIER0] == node["railyard.dev/rail-0"] == "A09-P1-IBLEAF-04-04"
    assert node["railyard.dev/rail-1"] == "A09-P1-IBLEAF-04-05"
    assert "railyard.dev/rail-0" not in labels["edr-host"]  # on one leaf: no rails


def test_three_levels_from_a_spec_with_pods(tmp_path: Path) -> None:
    data = yaml.safe_load((SPECS / "valid" / "lab.yaml").read_text())
    data["fabric"]["topology"] = {
        "kind": "fat-tree",
        "leaves": 4,
        "spines": 4,
        "pods": 2,
        "super_spines": 1,
        "uplinks_per_spine": 2,
        "ports_per_switch": 16,
        "nodes_per_leaf": 3,
        "uplinks_per_leaf": 2,
    }
    spec = tmp_path / "pods.yaml"
    spec.write_text(yaml.safe_dump(data))
    result = node_labels(graph_from_spec(load_spec(spec)))
    assert result.levels == [TIER2, TIER1, TIER0, HOSTNAME_LABEL]
    pods = {(n[TIER0], n[TIER1], n[TIER2]) for n in result.labels.values()}
    assert pods == {
        ("leaf01", "spine01", "superspine01"),
        ("leaf02", "spine01", "superspine01"),
        ("leaf03", "spine03", "superspine01"),
        ("leaf04", "spine03", "superspine01"),
    }


def test_v0_scheme_keys_and_deeper_tiers_left_out() -> None:
    assert [tier_key("topograph-v0", t) for t in range(4)] == [
        "network.topology.nvidia.com/leaf",
        "network.topology.nvidia.com/spine",
        "network.topology.nvidia.com/core",
        None,
    ]
    assert tier_key("topograph", 7) == "fabric.topograph.run/tier-7"


def _graph(host: str, switch: str = "leaf01") -> FabricGraph:
    sw = Switch("0x0000000000000001", switch, switch, 8)
    ca = Ca("0x0000000000000010", host, "mlx5_0", f"{host} mlx5_0", 1)
    link = Link(sw.guid, 1, ca.guid, 1, "4x", "HDR", 200.0)
    return FabricGraph(switches={sw.guid: sw}, cas={ca.guid: ca}, links=[link])


def test_label_values_long_or_invalid_are_hashed_as_topograph_does() -> None:
    assert label_value("A09-P1-IBLEAF-04-04") == "A09-P1-IBLEAF-04-04"
    assert (fnv1a64(b"a"), fnv1a64(b"foobar")) == (0xAF63DC4C8601EC8C, 0x85944171F73967E8)
    assert label_value("a b") == f"x{fnv1a64(b'a b'):x}"
    long = "x" * 64
    assert label_value(long).startswith("x") and len(label_value(long)) <= 17
    assert label_value("Quantum switch") != "Quantum switch"  # a space: no label value
    node = node_labels(_graph("gpu01", "Infiniscale-IV Mellanox Technologies")).labels["gpu01"]
    assert node[TIER0] == label_value("Infiniscale-IV Mellanox Technologies")


def test_node_names_are_lower_case_and_invalid_ones_left_out_with_a_warning() -> None:
    assert set(node_labels(_graph("GPU01")).labels) == {"gpu01"}
    result = node_labels(_graph("gpu_01"))
    assert result.labels == {}
    assert "1 hosts have no Kubernetes node name (gpu_01)" in result.warnings[0]


def test_fabric_without_hosts_is_an_error_naming_the_fix() -> None:
    graph = parse((FIXTURES / "ibnetdiscover__topograph__2.txt").read_text())
    with pytest.raises(GraphError, match="no node would get a topology label"):
        node_labels(graph)


def test_spec_names_the_scheme_and_the_topology(capsys: pytest.CaptureFixture[str]) -> None:
    spec = str(SPECS / "valid" / "kubernetes.yaml")
    _, out, _ = _run(capsys, "--spec", spec)
    labels, levels, topology = _docs(out)
    assert topology["metadata"]["name"] == "fabric"  # kubernetes.labels.kueue_topology
    _, out, _ = _run(
        capsys, "--spec", spec, "--label-scheme", "topograph-v0", "--kueue-topology", "tas"
    )
    labels, levels, topology = _docs(out)
    assert topology["metadata"]["name"] == "tas"
    assert levels[0] == "network.topology.nvidia.com/spine"
    assert labels["gpu01"]["network.topology.nvidia.com/leaf"] == "leaf01"


def test_nodes_option_keeps_only_those_hosts(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = _run(capsys, "--spec", str(REPO_ROOT / "Pulumi.lab.yaml"), "--nodes", "gpu[01-08]")
    assert sorted(_docs(out)[0]) == [f"gpu{n:02d}" for n in range(1, 9)]


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--kueue-topology", "Bad_Name"], "--kueue-topology 'Bad_Name' is not an object name"),
        (
            ["--from-ibnetdiscover", str(FIXTURES / "ibnetdiscover__topograph__2.txt")],
            "no node would get a topology label",
        ),
    ],
)
def test_bad_input_exits_2_with_one_line(
    capsys: pytest.CaptureFixture[str], argv: list[str], says: str
) -> None:
    if "--from-ibnetdiscover" not in argv:
        argv = [*argv, "--spec", str(SPECS / "valid" / "lab.yaml")]
    code, out, err = _run(capsys, *argv)
    assert (code, out) == (2, "")
    assert says in err and len(err.strip().splitlines()) == 1


def test_label_options_need_the_kubernetes_plugin(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        ["topology", "--spec", str(SPECS / "valid" / "lab.yaml"), "--label-scheme", "topograph"]
    )
    assert code == 2
    assert "go with --plugin kubernetes" in capsys.readouterr().err
