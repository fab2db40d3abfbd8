"""``python -m fabric kubernetes``: every Kubernetes object of a spec in one YAML stream."""

from __future__ import annotations

import json

import pytest
import yaml

from fabric.cli import main
from fabric.state import REPO_ROOT

SPEC = str(REPO_ROOT / "tests" / "unit" / "specs" / "valid" / "kubernetes.yaml")
CAPTURE = str(REPO_ROOT / "tests" / "fixtures" / "ibnetdiscover__ibsim_lab__2.txt")


def _objects(capsys: pytest.CaptureFixture[str], *argv: str) -> list[dict]:
    assert main(["kubernetes", *argv]) == 0
    return list(yaml.safe_load_all(capsys.readouterr().out))


def test_spec_gives_the_policy_networks_labels_and_topology(
    capsys: pytest.CaptureFixture[str],
) -> None:
    objects = _objects(capsys, "--spec", SPEC)
    assert [o["kind"] for o in objects] == [
        "NicClusterPolicy",
        "IPPool",
        "IPoIBNetwork",
        "List",
        "Topology",
    ]
    policy = objects[0]["spec"]["rdmaSharedDevicePlugin"]
    assert json.loads(policy["config"])["configList"][0]["resourceName"] == "rdma_shared_device_a"
    nodes = {n["metadata"]["name"]: n["metadata"]["labels"] for n in objects[3]["items"]}
    assert nodes["gpu07"] == {
        "fabric.topograph.run/tier-0": "leaf02",
        "fabric.topograph.run/tier-1": "spine01",
    }
    assert objects[4]["metadata"]["name"] == "fabric"  # kubernetes.labels.kueue_topology


def test_labels_from_the_discovered_fabric(capsys: pytest.CaptureFixture[str]) -> None:
    objects = _objects(capsys, "--spec", SPEC, "--from-ibnetdiscover", CAPTURE)
    nodes = {n["metadata"]["name"] for n in objects[3]["items"]}
    assert "gpu07" not in nodes and "gpu06" in nodes  # gpu07 is unplugged in this capture


def test_spec_without_kubernetes_exits_2_naming_the_fix(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["kubernetes", "--stack", "lab"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert "orchestrator is 'slurm' and no kubernetes section is given" in err
    assert len(err.strip().splitlines()) == 1
