"""A Pulumi stack file's own config must agree with its spec: provider settings, secrets."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from fabric.spec import SpecError, load_spec
from fabric.state import REPO_ROOT


def stack(tmp_path: Path, example: str, **config: Any) -> Path:
    """A copy of ``Pulumi.<example>.example.yaml`` with ``config`` keys set (None deletes)."""
    data = yaml.safe_load((REPO_ROOT / f"Pulumi.{example}.example.yaml").read_text())
    for key, value in config.items():
        key = key.replace("__", ":")
        if value is None:
            data["config"].pop(key, None)
        else:
            data["config"][key] = value
    path = tmp_path / f"Pulumi.{example}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def problems(path: Path) -> dict[str, str]:
    with pytest.raises(SpecError) as caught:
        load_spec(path)
    assert caught.value.source == str(path)
    return {problem.path: problem.message for problem in caught.value.problems}


def test_examples_agree_with_their_config(tmp_path: Path) -> None:
    for example in ("aws-efa", "gcp-a3-high", "gcp-a3-mega", "gcp-a3-ultra", "baremetal-ib"):
        assert load_spec(stack(tmp_path, example)).name


def test_aws_provider_region_differs(tmp_path: Path) -> None:
    found = problems(stack(tmp_path, "aws-efa", aws__region="us-west-2"))
    assert found == {
        "config aws:region": "'us-west-2' differs from aws.region 'us-east-2' in"
        " railyard:cluster; set them equal"
    }


def test_aws_provider_region_missing(tmp_path: Path) -> None:
    found = problems(stack(tmp_path, "aws-efa", aws__region=None))
    assert "pulumi config set aws:region us-east-2" in found["config aws:region"]


@pytest.mark.parametrize(
    ("key", "value", "field"),
    [
        ("gcp:project", "other-project", "gcp.project 'my-gpu-project'"),
        ("gcp:zone", "us-central1-b", "gcp.zone 'us-central1-a'"),
        ("gcp:region", "europe-west4", "gcp.region 'us-central1'"),
    ],
)
def test_gcp_provider_settings_differ(tmp_path: Path, key: str, value: str, field: str) -> None:
    found = problems(stack(tmp_path, "gcp-a3-high", **{key.replace(":", "__"): value}))
    assert f"{value!r} differs from {field}" in found[f"config {key}"]


def test_plaintext_bmc_password_in_stack_config_is_refused_unshown(tmp_path: Path) -> None:
    mark = "S3CRET-MARK-stack-bmc"
    path = stack(tmp_path, "baremetal-ib", railyard__bmcPassword=mark)
    found = problems(path)
    message = found["config railyard:bmcPassword"]
    assert "pulumi config set --secret bmcPassword" in message
    assert mark not in message


def test_secure_bmc_password_in_stack_config_is_accepted(tmp_path: Path) -> None:
    path = stack(tmp_path, "baremetal-ib", railyard__bmcPassword={"secure": "v1:AAAA"})
    assert load_spec(path).bmc is not None


def test_baremetal_boot_target_unknown_to_redfish(tmp_path: Path) -> None:
    found = problems(stack(tmp_path, "baremetal-ib", railyard__bootTarget="Network"))
    assert found == {
        "config railyard:bootTarget": "'Network'; use one of Pxe, Hdd, Cd, UefiHttp, UefiTarget, Usb"
    }


def test_plaintext_munge_key_in_stack_config_is_refused_unshown(tmp_path: Path) -> None:
    mark = "S3CRET-MARK-stack-munge"
    path = stack(tmp_path, "aws-efa", **{"railyard__mungeKey": mark})
    data = yaml.safe_load(path.read_text())
    data["config"]["railyard:cluster"]["slurm"]["munge_key"] = {"config": "mungeKey"}
    path.write_text(yaml.safe_dump(data))
    message = problems(path)["config railyard:mungeKey"]
    assert "slurm.munge_key names it" in message
    assert "pulumi config set --secret mungeKey" in message
    assert mark not in message
