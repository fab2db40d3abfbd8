"""The aws-ofi-nccl release NCCL loads on EFA nodes against the declared one
(``aws.ofi_nccl_version``), read from a real NCCL_DEBUG=INFO log (aws/aws-k8s-tester#454)."""

from __future__ import annotations

from pathlib import Path

import pytest

from fabric.parsers import nccl
from fabric.spec import SpecError, load_spec, spec_from_mapping
from fabric.state import REPO_ROOT
from fabric.verify.nccl import expectation, plugin_version_problems

FIXTURES = Path(__file__).parents[1] / "fixtures"
LOG = nccl.parse((FIXTURES / "nccl__awsk8stester454__1.txt").read_text())
EFA_LOG = nccl.parse((FIXTURES / "nccl__nccl1597__1.txt").read_text())


def test_the_plugins_version_is_read() -> None:
    assert LOG.ofi_nccl_version == "1.9.1-aws"
    assert EFA_LOG.ofi_nccl_version is None  # that log's excerpt has no Initializing line


def test_the_declared_release_passes_and_another_is_named() -> None:
    assert plugin_version_problems(LOG, "1.9.1") == []
    assert plugin_version_problems(LOG, None) == []
    [problem] = plugin_version_problems(LOG, "1.13.2")
    assert problem.startswith("NCCL loaded aws-ofi-nccl 1.9.1-aws, declared 1.13.2")
    [missing] = plugin_version_problems(EFA_LOG, "1.13.2")
    assert "shows no aws-ofi-nccl version" in missing


def test_efa_expectation_carries_the_declared_release() -> None:
    assert expectation("efa", plugin_version="1.13.2").plugin_version == "1.13.2"
    assert expectation("infiniband").plugin_version is None


def test_spec_takes_a_release_and_refuses_anything_else() -> None:
    data = load_spec(REPO_ROOT / "Pulumi.aws-efa.example.yaml").model_dump(
        mode="json", exclude_none=True
    )
    data["aws"]["ofi_nccl_version"] = "1.13.2"
    assert spec_from_mapping(data).aws.ofi_nccl_version == "1.13.2"
    data["aws"]["ofi_nccl_version"] = "latest"
    with pytest.raises(SpecError, match="ofi_nccl_version"):
        spec_from_mapping(data)
