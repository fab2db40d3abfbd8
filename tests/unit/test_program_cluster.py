"""The stack's top-level ``Cluster`` component: target, then hand-off, then verification."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pulumi
import pytest
import yaml

from fabric.spec import ClusterSpec

LAB = yaml.safe_load((Path(__file__).parents[2] / "Pulumi.lab.yaml").read_text())["config"]["railyard:cluster"]


class Mocks(pulumi.runtime.Mocks):
    """Record every resource with its parent; dynamic resources echo their inputs."""

    def __init__(self) -> None:
        self.created: list[pulumi.runtime.MockResourceArgs] = []

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        self.created.append(args)
        outs = dict(args.inputs)
        outs.update({"tag": "localhost/railyard-node:0123456789ab", "public_key": "ssh-ed25519 AAAA x",
                     "private_key": "PRIVATE", "out_endpoints": {}, "recap": "ok=1 changed=0"})
        return f"{args.name}-id", outs

    def call(self, args: pulumi.runtime.MockCallArgs) -> tuple[dict[str, Any], list[tuple[str, str]] | None]:
        return {}, None


@pytest.fixture
def mocks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Mocks:
    monkeypatch.setenv("RAILYARD_STATE_DIR", str(tmp_path))
    m = Mocks()
    pulumi.runtime.set_mocks(m, project="railyard", stack="lab", preview=False)
    return m


def _names(mocks: Mocks) -> list[str]:
    return [args.name for args in mocks.created]


@pulumi.runtime.test
def test_cluster_runs_handoff_then_verification(mocks: Mocks) -> pulumi.Output:
    from fabric.components.cluster import Cluster, ClusterArgs

    cluster = Cluster("lab", ClusterArgs(spec=ClusterSpec.model_validate(LAB), stack="lab"))

    def check(_: Any) -> None:
        by_name = {args.name: args for args in mocks.created}
        assert by_name["lab-handoff"].inputs["playbook"] == "playbooks/site.yml"
        assert by_name["lab-verify"].inputs["after"] == "ok=1 changed=0"
        assert "gpu01" in by_name["lab-handoff"].inputs["inventory"]

    return pulumi.Output.all(cluster.outputs["verification"], cluster.inventory).apply(check)


@pulumi.runtime.test
def test_target_component_is_a_child_of_the_cluster(mocks: Mocks) -> pulumi.Output:
    from fabric.components.cluster import Cluster, ClusterArgs

    cluster = Cluster("lab", ClusterArgs(spec=ClusterSpec.model_validate(LAB), stack="lab"))

    def check(_: Any) -> None:
        types = [args.typ for args in mocks.created]
        assert types.count("railyard:index:Cluster") == 1
        assert types.count("railyard:lab:LabCluster") == 1

    return cluster.inventory.apply(check)


@pulumi.runtime.test
def test_handoff_and_verification_can_be_switched_off(mocks: Mocks) -> pulumi.Output:
    from fabric.components.cluster import Cluster, ClusterArgs

    spec = ClusterSpec.model_validate(LAB)
    cluster = Cluster("lab", ClusterArgs(spec=spec, stack="lab", handoff=False, verify=False))

    def check(_: Any) -> None:
        assert "lab-handoff" not in _names(mocks)
        assert "lab-verify" not in _names(mocks)
        assert set(cluster.outputs) == {"inventory", "hosts"}

    return cluster.inventory.apply(check)
