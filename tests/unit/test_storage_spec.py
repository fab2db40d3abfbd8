"""The ``storage:`` block's rules (issue 40): the cases of ``specs/storage_invalid.yaml``, one
broken rule each, every problem of a spec reported together, and each target's kinds."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from test_spec import SPECS, base, broken, problems

from fabric.spec import spec_from_mapping
from fabric.spec.storage_rules import min_size_gib
from fabric.state import REPO_ROOT

CASES = yaml.safe_load((SPECS / "storage_invalid.yaml").read_text())
EXISTING = REPO_ROOT / "Pulumi.existing.example.yaml"


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_case_reports_its_path_and_fix(case: dict[str, Any]) -> None:
    found = problems(broken(case))
    paths = [path for path, _ in found]
    assert set(case["expect"]) <= set(paths), paths
    first = dict(reversed(found))[case["expect"][0]]
    assert case["says"] in first, first


def test_case_ids_are_distinct_from_each_other_and_invalid_yaml() -> None:
    ids = [c["id"] for c in CASES]
    shared = {c["id"] for c in yaml.safe_load((SPECS / "invalid.yaml").read_text())}
    assert len(ids) == len(set(ids)) and not shared & set(ids)


def test_a_lab_spec_with_nfs_and_scratch_validates() -> None:
    data = base("lab")
    data["storage"] = {
        "shared": [{"name": "home", "kind": "nfs", "server": "198.18.0.10", "export": "/srv"}],
        "scratch": {"devices": ["/dev/nvme1n1", "/dev/nvme2n1"], "filesystem": "ext4"},
    }
    spec = spec_from_mapping(data)
    assert spec.storage is not None and spec.storage.shared[0].mount == "/home"


def test_every_storage_problem_is_reported_together() -> None:
    data = base("lab")
    data["storage"] = {
        "shared": [
            {"name": "home", "kind": "nfs", "mount": "/usr"},
            {"name": "data", "kind": "efs", "server": "fs-1"},
        ],
        "scratch": {"mount": "/scratch", "devices": ["sdb"]},
    }
    paths = {path for path, _ in problems(data)}
    assert {
        "storage.shared[0].mount",
        "storage.shared[0].server",
        "storage.shared[1].server",
        "storage.shared[1].kind",
        "storage.scratch.devices[0]",
    } <= paths


def test_existing_target_offers_nfs_only() -> None:
    data = yaml.safe_load(EXISTING.read_text())["config"]["railyard:cluster"]
    data["storage"] = {"shared": [{"kind": "filestore", "size_gib": 1024}]}
    found = dict(problems(data))
    assert found["storage.shared[0].kind"].startswith("filestore: target existing offers nfs")
    data["storage"] = {"shared": [{"kind": "nfs", "server": "198.18.0.10"}]}
    assert spec_from_mapping(data).storage is not None


@pytest.mark.parametrize(
    ("kind", "tier", "least"),
    [
        ("filestore", None, 1024),
        ("filestore", "BASIC_HDD", 1024),
        ("filestore", "BASIC_SSD", 2560),
        ("filestore", "ZONAL", 1024),
        ("fsx_lustre", "SCRATCH_2", 1200),
        ("efs", None, None),
        ("nfs", None, None),
    ],
)
def test_min_size_per_kind(kind: str, tier: str | None, least: int | None) -> None:
    assert min_size_gib(kind, tier) == least
