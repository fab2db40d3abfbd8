"""Harness errors are reported as errors, not fabric failures; the EFA checks run for real on
this machine (no EFA here: both fail as fabric failures, with the reason)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml

from fabric.state import REPO_ROOT
from fabric.verify.results import read_junit
from fabric.verify.runner import pytest_args


def test_harness_error_is_an_error_and_an_assertion_a_failure(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text(
        "from fabric.verify.harness import pytest_runtest_makereport  # noqa: F401\n"
    )
    (tmp_path / "test_x.py").write_text(
        "from fabric.verify.harness import HarnessError\n"
        "def test_tool_unreadable():\n    raise HarnessError('ip printed no JSON')\n"
        "def test_fabric_wrong():\n    assert 1 == 2, 'MTU 1460, expected 8244'\n"
        "def test_fine():\n    pass\n"
    )
    junit = tmp_path / "junit.xml"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            str(tmp_path),
            f"--junitxml={junit}",
            "-p",
            "no:cacheprovider",
            "-q",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    outcomes = {r.name.split("::")[-1].split(".")[-1]: r.outcome for r in read_junit(junit)}
    assert outcomes == {
        "test_tool_unreadable": "error",
        "test_fabric_wrong": "failed",
        "test_fine": "passed",
    }


def test_efa_checks_run_on_a_host_without_efa(tmp_path: Path) -> None:
    """The suite's EFA checks against this machine as gpu01 of the AWS example (Ansible's local
    connection): 0 EFA PCI devices where p5.48xlarge has 32, and no fi_info installed."""
    inventory = tmp_path / "inventory.yml"
    inventory.write_text(
        yaml.safe_dump(
            {
                "all": {
                    "hosts": {
                        "gpu01": {
                            "ansible_connection": "local",
                            "ansible_python_interpreter": sys.executable,
                        }
                    }
                }
            }
        )
    )
    junit = tmp_path / "checks.xml"
    args = pytest_args(
        inventory,
        junit,
        tmp_path,
        spec=REPO_ROOT / "Pulumi.aws-efa.example.yaml",
        extra=["-k", "test_efa_devices or test_efa_provider"],
    )
    run = subprocess.run(
        args, cwd=REPO_ROOT, capture_output=True, text=True, check=False, timeout=300
    )
    results = {r.name.split("[")[0].split(".")[-1]: r for r in read_junit(junit)}
    assert set(results) == {"test_efa_devices", "test_efa_provider"}, run.stdout[-2000:]
    devices, provider = results["test_efa_devices"], results["test_efa_provider"]
    assert devices.outcome == "failed"
    assert "gpu01 (p5.48xlarge): 0 EFA PCI devices" in devices.message
    assert "the instance type has 32" in devices.message
    assert provider.outcome == "failed"
    assert "/opt/amazon/efa/bin/fi_info is not installed" in provider.message
