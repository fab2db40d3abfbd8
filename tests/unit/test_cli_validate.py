"""``python -m fabric validate`` and ``schema``, run through ``fabric.cli.main``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from fabric.cli import main
from fabric.spec import load_spec
from fabric.state import REPO_ROOT
from fabric.verify.plan import CheckPlan

SPECS = Path(__file__).parent / "specs"


def write_broken_lab(tmp_path: Path) -> Path:
    """The lab spec with three problems: IB MTU, SM priority, undeclared controller."""
    data = yaml.safe_load((SPECS / "valid" / "lab.yaml").read_text())
    data["fabric"]["mtu"] = 9000
    data["fabric"]["infiniband"]["subnet_managers"][1]["priority"] = 20
    data["slurm"]["controller"] = "ctl9"
    path = tmp_path / "broken.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def write_mixed_lab(tmp_path: Path) -> Path:
    """The lab spec with two field errors (name, a misspelled key) and two rule errors."""
    data = yaml.safe_load((SPECS / "valid" / "lab.yaml").read_text())
    data["name"] = "Bad"
    data["fabric"]["topology"]["spine"] = 1
    data["fabric"]["mtu"] = 9000
    data["fabric"]["infiniband"]["subnet_managers"][1]["priority"] = 20
    path = tmp_path / "mixed.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


MIXED_PATHS = [
    "name",
    "fabric.topology.spine",
    "fabric.mtu",
    "fabric.infiniband.subnet_managers[1].priority",
]


def test_validate_lab_stack_exits_zero(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", "--spec", str(REPO_ROOT / "Pulumi.lab.yaml")]) == 0


def test_validate_lab_stack_prints_summary(capsys: pytest.CaptureFixture[str]) -> None:
    main(["validate", "--spec", str(REPO_ROOT / "Pulumi.lab.yaml")])
    assert capsys.readouterr().out == (
        "lab: valid — 11 hosts, infiniband fat-tree 2 leaves/1 spine, 2 subnet managers\n"
    )


def test_validate_roce_lab_example_exits_zero(capsys: pytest.CaptureFixture[str]) -> None:
    """The RoCE lab example (``make up STACK=roce-lab``) validates as it ships, and its checks
    cross its switch: one hop per declared port, path-MTU pairs between the hosts behind it."""
    example = REPO_ROOT / "Pulumi.roce-lab.example.yaml"
    assert main(["validate", "--spec", str(example)]) == 0
    assert capsys.readouterr().out.startswith("rocelab: valid — 4 hosts, roce")
    spec = load_spec(example)
    plan = CheckPlan(spec=spec, hosts=list(spec.hosts))
    assert [h.id for h in plan.roce_hops] == [
        "r1/fab0-leaf1/swp1",
        "r2/fab0-leaf1/swp2",
        "r3/fab0-leaf1/swp3",
    ]
    assert [p.id for p in plan.netdev_pairs] == ["r1->r2", "r2->r3", "r3->r1"]


def test_validate_roce_summary_names_qos(capsys: pytest.CaptureFixture[str]) -> None:
    main(["validate", "--spec", str(SPECS / "valid" / "roce.yaml")])
    out = capsys.readouterr().out
    assert "roce rail-optimized fat-tree 8 leaves/4 spines, PFC priority 3" in out


def test_validate_cloud_summary_names_instance_type(capsys: pytest.CaptureFixture[str]) -> None:
    main(["validate", "--spec", str(SPECS / "valid" / "aws.yaml")])
    assert "efa on aws (p5.48xlarge)" in capsys.readouterr().out


def test_validate_broken_exits_one(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", "--spec", str(write_broken_lab(tmp_path))]) == 1


def test_validate_broken_lists_every_problem(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_broken_lab(tmp_path)
    main(["validate", "--spec", str(path)])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"{path}: 3 problems"
    assert [line.split(": ")[0].strip() for line in lines[1:]] == [
        "fabric.mtu",
        "fabric.infiniband.subnet_managers[1].priority",
        "slurm.controller",
    ]


def test_validate_problem_line_has_value_and_fix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    main(["validate", "--spec", str(write_broken_lab(tmp_path))])
    assert "  fabric.mtu: 9000 is not an InfiniBand MTU; use one of 256, 512, 1024, 2048, 4096" in (
        capsys.readouterr().out.splitlines()
    )


def test_validate_mixed_lists_field_and_rule_problems(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_mixed_lab(tmp_path)
    code = main(["validate", "--spec", str(path)])
    lines = capsys.readouterr().out.splitlines()
    assert (code, lines[0]) == (1, f"{path}: 4 problems")
    assert [line.split(": ")[0].strip() for line in lines[1:]] == MIXED_PATHS


def test_validate_mixed_problem_lines_explain(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    main(["validate", "--spec", str(write_mixed_lab(tmp_path))])
    out = capsys.readouterr().out
    assert "  name: use lowercase letters, digits and hyphens" in out
    assert "  fabric.topology.spine: unknown key 'spine'; allowed keys: kind, leaves" in out
    assert "  fabric.infiniband.subnet_managers[1].priority: 20 is outside the sm_priority" in out


def test_validate_json_mixed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", "--json", "--spec", str(write_mixed_lab(tmp_path))]) == 1
    result = json.loads(capsys.readouterr().out)
    assert (result["valid"], [p["path"] for p in result["problems"]]) == (False, MIXED_PATHS)


def test_validate_missing_file_is_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["validate", "--spec", str(tmp_path / "none.yaml")]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        f"railyard validate: error: cannot read {tmp_path / 'none.yaml'}: "
        "No such file or directory; pass a spec YAML or Pulumi.<stack>.yaml\n"
    )


def test_validate_directory_is_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["validate", "--spec", str(tmp_path)]) == 2
    assert "Is a directory" in capsys.readouterr().err


def test_validate_json_missing_file_is_a_json_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["validate", "--json", "--spec", str(tmp_path / "none.yaml")]) == 2
    captured = capsys.readouterr()
    doc = json.loads(captured.out)
    assert (doc["exit_code"], "cannot read" in doc["error"], captured.err) == (2, True, "")


def test_validate_invalid_yaml_is_a_problem(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("name: [lab\n")
    assert main(["validate", "--spec", str(path)]) == 1
    assert "invalid YAML" in capsys.readouterr().out


def test_validate_json_reports_problems(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    main(["validate", "--json", "--spec", str(write_broken_lab(tmp_path))])
    result = json.loads(capsys.readouterr().out)
    assert (result["valid"], result["problems"][2]["path"]) == (False, "slurm.controller")


def test_validate_json_valid(capsys: pytest.CaptureFixture[str]) -> None:
    main(["validate", "--json", "--spec", str(REPO_ROOT / "Pulumi.lab.yaml")])
    assert json.loads(capsys.readouterr().out)["valid"] is True


def test_schema_prints_cluster_schema(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert schema["title"] == "ClusterSpec"


def test_schema_is_indented(capsys: pytest.CaptureFixture[str]) -> None:
    main(["schema"])
    assert capsys.readouterr().out.startswith('{\n  "$defs"')


def test_schema_output_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "cluster.schema.json"
    main(["schema", "--output", str(out)])
    assert "fabric" in json.loads(out.read_text())["properties"]


def test_validate_help_shows_examples(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["validate", "--help"])
    assert "railyard validate --spec examples/roce-rail.yaml" in capsys.readouterr().out


def test_validate_without_a_spec_takes_the_stacks(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate"]) == 0  # Pulumi.lab.yaml: --stack defaults to lab
    assert capsys.readouterr().out.startswith("lab: valid")
    assert main(["validate", "--stack", "nosuch"]) == 2
    assert "no stack named 'nosuch'" in capsys.readouterr().err


def test_schema_unwritable_output_is_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["schema", "--output", str(tmp_path / "no" / "dir" / "schema.json")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("railyard schema: error: cannot access ") and "schema.json" in err
