"""The stack's top-level ``Cluster`` component: target, then hand-off, then verification."""

from __future__ import annotations

import os
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
from fabric.state import REPO_ROOT

LAB = yaml.safe_load((REPO_ROOT / "Pulumi.lab.yaml").read_text())["config"]["railyard:cluster"]


@pytest.fixture
def mocks(mock_pulumi: Callable[..., Mocks], state_root: Path) -> Mocks:
    return mock_pulumi("lab")


def _names(mocks: Mocks) -> list[str]:
    return mocks.names


@pulumi.runtime.test
def test_cluster_runs_handoff_then_verification(mocks: Mocks) -> pulumi.Output:
    from fabric.program import Cluster, ClusterArgs

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
    from fabric.program import Cluster, ClusterArgs

    cluster = Cluster("lab", ClusterArgs(spec=ClusterSpec.model_validate(LAB), stack="lab"))

    def check(_: Any) -> None:
        types = [args.typ for args in mocks.resources]
        assert types.count("railyard:index:Cluster") == 1
        assert types.count("railyard:lab:LabCluster") == 1

    return cluster.inventory.apply(check)


@pulumi.runtime.test
def test_handoff_and_verification_can_be_switched_off(mocks: Mocks) -> pulumi.Output:
    from fabric.program import Cluster, ClusterArgs

    spec = ClusterSpec.model_validate(LAB)
    cluster = Cluster("lab", ClusterArgs(spec=spec, stack="lab", handoff=False, verify=False))

    def check(_: Any) -> None:
        assert "lab-handoff" not in _names(mocks)
        assert "lab-verify" not in _names(mocks)
        assert set(cluster.outputs) == set(TARGET_OUTPUTS)

    return cluster.inventory.apply(check)


AWS_EXAMPLE = yaml.safe_load((REPO_ROOT / "Pulumi.aws-efa.example.yaml").read_text())["config"]


def test_pulumi_up_refuses_the_stack_config_validate_refuses(
    mock_pulumi: Callable[..., Mocks], state_root: Path
) -> None:
    """``aws:region`` apart from ``aws.region``: the program refuses it before any resource,
    with the message ``python -m fabric validate`` gives for the same stack file."""
    from fabric.program import Cluster, ClusterArgs
    from fabric.spec import SpecError, spec_from_mapping
    from fabric.spec.targets import stack_config_problems

    mocks = mock_pulumi("efa", config={"aws:region": "eu-west-1"})
    spec = spec_from_mapping(AWS_EXAMPLE["railyard:cluster"])
    expected = stack_config_problems({**AWS_EXAMPLE, "aws:region": "eu-west-1"}, spec)
    assert [p.path for p in expected] == ["config aws:region"]
    with pytest.raises(SpecError) as refused:
        Cluster("efa", ClusterArgs(spec=spec, stack="efa"))
    assert refused.value.problems == expected
    assert not [r for r in mocks.resources if r.typ != "railyard:index:Cluster"]


def test_the_program_sees_whether_a_config_value_is_secret_not_its_value(
    mock_pulumi: Callable[..., Mocks], state_root: Path
) -> None:
    """A munge key set in plain text reaches the check as plain text (and is refused); set
    with ``--secret`` it reaches it hidden (and passes)."""
    from fabric.program import program_config
    from fabric.spec import spec_from_mapping
    from fabric.spec.targets import stack_config_problems

    cluster = AWS_EXAMPLE["railyard:cluster"]
    spec = spec_from_mapping(
        {**cluster, "slurm": {**cluster["slurm"], "munge_key": {"config": "mungeKey"}}}
    )
    config = {"aws:region": "us-east-2", "railyard:mungeKey": "S3CRET-VALUE"}
    mock_pulumi("efa", config=config)
    plain = program_config(spec)
    assert [p.path for p in stack_config_problems(plain, spec)] == ["config railyard:mungeKey"]
    mock_pulumi("efa", config=config, secret_keys=["railyard:mungeKey"])
    hidden = program_config(spec)
    assert hidden["railyard:mungeKey"] == {"secure": "(hidden)"}
    assert "S3CRET-VALUE" not in repr(hidden)
    assert stack_config_problems(hidden, spec) == []


def test_the_program_checks_the_config_keys_each_target_declares() -> None:
    """The stack config keys the program reads come from the targets' ``CONFIG_KEYS``
    (their ``rules.py``), through the registry: shared code names none of them."""
    from fabric.program import checked_config
    from fabric.targets import hooks

    declared = [key for _, keys in hooks("rules", "CONFIG_KEYS") for key in keys]
    assert checked_config() == tuple(declared)
    assert {"aws:region", "gcp:project", "gcp:zone", "railyard:bootTarget"} <= set(declared)
    assert all(":" in key for key in declared)


@pulumi.runtime.test
def test_the_handoff_gets_the_api_servers_token_as_a_secret(
    mock_pulumi: Callable[..., Mocks], state_root: Path
) -> pulumi.Output:
    """With a ``kubernetes`` section, the hand-off hands railyard-health the API server's
    token and CA (its taints), from the stack's config secrets, as secret inputs."""
    from fabric.program import Cluster, ClusterArgs

    token, ca = "lab-token-0123", "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----"
    mocks = mock_pulumi(
        "lab",
        config={"railyard:kubernetesToken": token, "railyard:kubernetesCa": ca},
        secret_keys=["railyard:kubernetesToken", "railyard:kubernetesCa"],
    )
    spec = {
        **LAB,
        "orchestrator": "both",
        "kubernetes": {
            "api_server": "https://198.18.0.2:6443",
            "token": {"config": "kubernetesToken"},
            "ca_certificate": {"config": "kubernetesCa"},
            "network_operator": {"repository": "registry.example.com/mellanox"},
        },
    }
    cluster = Cluster("lab", ClusterArgs(spec=ClusterSpec.model_validate(spec), stack="lab"))

    def check(_: Any) -> None:
        handoff = next(args for args in mocks.resources if args.name == "lab-handoff")
        for prop, value in (("kube_token", token), ("kube_ca", ca)):  # secrets, not plain text
            wrapped = handoff.inputs[prop]
            assert (
                wrapped[pulumi.runtime.rpc._special_sig_key]
                == pulumi.runtime.rpc._special_secret_sig
            )
            assert wrapped["value"] == value

    return cluster.outputs["handoff"].apply(check)


def test_the_run_takes_the_kubernetes_secrets_out_of_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from fabric.handoff.secrets import kube_secrets

    monkeypatch.setenv("RAILYARD_KUBE_TOKEN", "t0ken")
    monkeypatch.delenv("RAILYARD_KUBE_CA", raising=False)
    assert kube_secrets() == {"node_health_kube_token": "t0ken"}
    assert "RAILYARD_KUBE_TOKEN" not in os.environ  # the playbook's children never see it
    assert kube_secrets() == {}
