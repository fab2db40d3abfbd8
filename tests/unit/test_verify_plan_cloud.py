"""Checks from the instance catalog: cloud specs without HCAs get EFA / GPU NIC checks, and
``python -m fabric check --plan`` lists them (and the lab's IB checks) without touching a host."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from fabric.spec import load_spec, spec_from_mapping
from fabric.state import REPO_ROOT
from fabric.verify.plan import FAMILIES, CheckPlan, describe

AWS = REPO_ROOT / "Pulumi.aws-efa.example.yaml"
GCP = REPO_ROOT / "Pulumi.gcp-a3-high.example.yaml"
LAB = REPO_ROOT / "Pulumi.lab.yaml"


def _spec(path: Path, **changes: object):
    data = load_spec(path).model_dump(mode="json", exclude_none=True)
    for dotted, value in changes.items():
        node = data
        *keys, last = dotted.split("__")
        for key in keys:
            node = node[int(key)] if key.isdigit() else node[key]
        node[last] = value
    return spec_from_mapping(data)


def _plan(spec) -> CheckPlan:
    return CheckPlan(spec=spec, hosts=list(spec.hosts))


def test_aws_example_expects_the_catalogs_efa_devices() -> None:
    plan = _plan(_spec(AWS))
    assert [
        (e.host, e.devices, e.gpudirect_rdma, e.placement_group) for e in plan.params("efa_hosts")
    ] == [(f"gpu0{i}", 32, True, "efa-p5-pg") for i in range(1, 5)]
    reasons = plan.not_generated()
    assert {"efa", "efa_gpudirect", "placement_group"}.isdisjoint(reasons)
    assert reasons["gpu_nics"] == "fabric.kind is efa, not gcp-gpudirect"


def test_p4d_has_four_efa_devices_and_no_gpudirect_when_not_declared() -> None:
    spec = _spec(
        AWS,
        nodes__0__instance_type="p4d.24xlarge",
        nodes__0__gpu_type="a100",
        aws__gpudirect_rdma=False,
    )
    plan = _plan(spec)
    assert {e.devices for e in plan.params("efa_hosts")} == {4}
    assert plan.not_generated()["efa_gpudirect"] == "aws.gpudirect_rdma is false"


def test_gcp_examples_expect_gpu_nics_per_machine_type() -> None:
    high = _plan(_spec(GCP))
    assert [(g.host, g.nics, g.mtu, g.driver, g.rxdm) for g in high.params("gpu_nic_hosts")] == [
        ("a3-01", 4, 8244, "gve", True),
        ("a3-02", 4, 8244, "gve", True),
    ]
    assert high.params("gpu_nic_hosts")[0].subnets == [
        "172.16.0.0/20",
        "172.16.16.0/20",
        "172.16.32.0/20",
        "172.16.48.0/20",
    ]
    mega = _plan(_spec(GCP, nodes__0__instance_type="a3-megagpu-8g", gcp__gpu_subnet_cidrs=[]))
    assert {(g.nics, g.transport, len(set(g.subnets))) for g in mega.params("gpu_nic_hosts")} == {
        (8, "gpudirect-tcpxo", 8)
    }


def test_a3_ultra_has_no_gvnic_or_rxdm_checks() -> None:
    plan = _plan(
        _spec(
            GCP,
            nodes__0__instance_type="a3-ultragpu-8g",
            nodes__0__gpu_type="h200",
            gcp__gpu_subnet_cidrs=[],
            gcp__region="europe-west1",  # the zones the catalog knows offer A3 Ultra
            gcp__zone="europe-west1-b",
        )
    )
    reasons = plan.not_generated()
    assert "gpu_nics" not in reasons
    assert "A3 Ultra" in reasons["gvnic"]
    assert "TCPX" in reasons["rxdm"]


def test_families_name_every_check_of_the_suite() -> None:
    """FAMILIES (what --plan lists) holds exactly the suite's check functions."""
    listed = {name for checks, _ in FAMILIES.values() for name in checks}
    found = set()
    for module in (REPO_ROOT / "fabric/verify/checks").glob("test_*.py"):
        tree = ast.parse(module.read_text())
        found |= {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    assert {n for n in found if n.startswith("test_")} == listed


def test_describe_lists_fabric_checks_for_each_example() -> None:
    aws = describe(_plan(_spec(AWS)))
    assert len(aws["efa"]["parameters"]) == 4  # type: ignore[arg-type]
    gcp = describe(_plan(_spec(GCP)))
    assert len(gcp["gpu_nics"]["parameters"]) == 2  # type: ignore[arg-type]
    lab = describe(_plan(_spec(LAB)))
    assert lab["ib"]["parameters"] and "not_generated" in lab["efa"]


@pytest.mark.parametrize(
    ("path", "fabric_families"),
    [(AWS, {"efa", "efa_gpudirect", "placement_group"}), (GCP, {"gpu_nics", "gvnic", "rxdm"})],
)
def test_check_plan_cli_lists_fabric_checks_for_the_cloud_examples(
    path: Path, fabric_families: set[str]
) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "fabric", "check", "--plan", "--spec", str(path), "--json"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    families = json.loads(out.stdout)["families"]
    generated = {f for f, entry in families.items() if "parameters" in entry}
    assert fabric_families <= generated
    assert generated - {"slurm"}, "only Slurm's checks"


def test_check_plan_cli_lists_the_labs_ib_checks() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "fabric", "check", "--plan", "--spec", str(LAB)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert "ib: test_ib_active_mtu over" in out.stdout
    assert "sweep: test_declared_link_discovered, test_no_undeclared_links" in out.stdout
    assert '"host": "gpu01"' in out.stdout
    assert "efa: not generated: fabric.kind is infiniband, not efa" in out.stdout


def test_check_plan_cli_bad_spec_is_one_line_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\n")
    out = subprocess.run(
        [sys.executable, "-m", "fabric", "check", "--plan", "--spec", str(bad)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert out.returncode == 2
    assert out.stdout == ""
    assert len(out.stderr.strip().splitlines()) == 1
