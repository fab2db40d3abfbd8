"""The stack's top-level ``Cluster`` component: target, then hand-off, then verification."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pulumi
import pytest
import yaml
from conftest import Mocks

from fabric.components.target import TARGET_OUTPUTS
from fabric.inventory import inventory_text
from fabric.spec import ClusterSpec

LAB = yaml.safe_load((Path(__file__).parents[2] / "Pulumi.lab.yaml").read_text())["config"][
    "railyard:cluster"
]


@pytest.fixture
def mocks(mock_pulumi: Callable[..., Mocks], state_root: Path) -> Mocks:
    return mock_pulumi("lab")


def _names(mocks: Mocks) -> list[str]:
    return mocks.names


@pulumi.runtime.test
def test_cluster_runs_handoff_then_verification(mocks: Mocks) -> pulumi.Output:
    from fabric.components.cluster import Cluster, ClusterArgs

    cluster = Cluster("lab", ClusterArgs(spec=ClusterSpec.model_validate(LAB), stack="lab"))

    def check(values: list[Any]) -> None:
        by_name = {args.name: args for args in mocks.resources}
        assert by_name["lab-handoff"].inputs["playbook"] == "playbooks/site.yml"
        assert by_name["lab-verify"].inputs["after"] == "ok=1 changed=0"
        assert "gpu01" in by_name["lab-handoff"].inputs["inventory"]
        assert by_name["lab-handoff"].inputs["inventory"] == inventory_text(values[1])
        # The hand-off writes the very text the lab's own inventory file has.
        assert (
            by_name["lab-handoff"].inputs["inventory"] == by_name["lab-inventory"].inputs["content"]
        )

    return pulumi.Output.all(cluster.outputs["verification"], cluster.inventory).apply(check)


@pulumi.runtime.test
def test_target_component_is_a_child_of_the_cluster(mocks: Mocks) -> pulumi.Output:
    from fabric.components.cluster import Cluster, ClusterArgs

    cluster = Cluster("lab", ClusterArgs(spec=ClusterSpec.model_validate(LAB), stack="lab"))

    def check(_: Any) -> None:
        types = [args.typ for args in mocks.resources]
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
        assert set(cluster.outputs) == set(TARGET_OUTPUTS)

    return cluster.inventory.apply(check)
