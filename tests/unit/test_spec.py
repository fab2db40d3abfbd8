"""The cluster spec: valid specs load, every broken rule is reported with its path."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

import fabric.spec.rules
from fabric.spec import (
    SKIP_RULES,
    ClusterSpec,
    Problem,
    SpecError,
    cross_field_problems,
    format_path,
    load_spec,
    spec_from_mapping,
)
from fabric.spec.rules import Checker, path_parts
from fabric.state import REPO_ROOT
from fabric.targets.aws.catalog import aws_instance
from fabric.targets.gcp.catalog import gcp_machine

SPECS = Path(__file__).parent / "specs"
VALID = sorted((SPECS / "valid").glob("*.yaml"))
INVALID = yaml.safe_load((SPECS / "invalid.yaml").read_text())
MIXED = yaml.safe_load((SPECS / "mixed.yaml").read_text())


def base(name: str) -> dict[str, Any]:
    """A fresh copy of the valid spec ``specs/valid/<name>.yaml``."""
    return yaml.safe_load((SPECS / "valid" / f"{name}.yaml").read_text())


def _parts(path: str) -> list[str | int]:
    return [int(i) if i else key for key, i in re.findall(r"([^.\[\]]+)|\[(\d+)\]", path)]


def _parent(data: Any, parts: list[str | int]) -> Any:
    for part in parts[:-1]:
        if isinstance(part, str) and part not in data:
            data[part] = {}
        data = data[part]
    return data


def set_path(data: dict[str, Any], path: str, value: Any) -> None:
    """Set ``path`` (``a.b[1].c``) in ``data``; an index one past a list's end appends."""
    parts = _parts(path)
    parent, last = _parent(data, parts), parts[-1]
    if isinstance(last, int) and last == len(parent):
        parent.append(value)
    else:
        parent[last] = value


def delete_path(data: dict[str, Any], path: str) -> None:
    parts = _parts(path)
    del _parent(data, parts)[parts[-1]]


def problems(data: dict[str, Any]) -> list[Problem]:
    """The problems SpecError reports for ``data``; fails the test if it validates."""
    with pytest.raises(SpecError) as caught:
        spec_from_mapping(data)
    return caught.value.problems


def broken(case: dict[str, Any]) -> dict[str, Any]:
    data = base(case["base"])
    for path, value in case.get("set", {}).items():
        set_path(data, path, value)
    for path in case.get("delete", []):
        delete_path(data, path)
    return data


# --- valid specs ---------------------------------------------------------------------------


@pytest.mark.parametrize("path", VALID, ids=[p.stem for p in VALID])
def test_valid_spec_loads(path: Path) -> None:
    assert isinstance(load_spec(path), ClusterSpec)


def test_lab_stack_validates() -> None:
    spec = load_spec(REPO_ROOT / "Pulumi.lab.yaml")
    assert (spec.name, len(spec.hosts)) == ("lab", 11)


EXAMPLES = sorted((REPO_ROOT / "examples").glob("*.yaml"))


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_validates(path: Path) -> None:
    assert isinstance(load_spec(path), ClusterSpec)


def test_hosts_keep_declaration_order() -> None:
    spec = spec_from_mapping(base("lab"))
    assert list(spec.hosts)[:2] + list(spec.hosts)[-3:] == ["gpu01", "gpu02", "sm1", "sm2", "ctl1"]


# --- one broken rule per case --------------------------------------------------------------


@pytest.mark.parametrize("case", INVALID, ids=[c["id"] for c in INVALID])
def test_invalid_case_reports_path(case: dict[str, Any]) -> None:
    paths = [path for path, _ in problems(broken(case))]
    assert set(case["expect"]) <= set(paths), paths


@pytest.mark.parametrize("case", INVALID, ids=[c["id"] for c in INVALID])
def test_invalid_case_message_explains(case: dict[str, Any]) -> None:
    found = dict(reversed(problems(broken(case))))  # first message per path
    assert case["says"] in found[case["expect"][0]]


def test_invalid_cases_cover_distinct_ids() -> None:
    ids = [case["id"] for case in INVALID]
    assert len(ids) == len(set(ids))


# --- all problems at once ------------------------------------------------------------------


def test_every_problem_is_reported_together() -> None:
    data = base("lab")
    set_path(data, "fabric.mtu", 9000)
    set_path(data, "fabric.infiniband.subnet_managers[1].priority", 20)
    set_path(data, "slurm.controller", "ctl9")
    set_path(data, "nodes[1].names", "sm1,gpu01")
    set_path(data, "slurm.topology_plugin", "block")
    assert {path for path, _ in problems(data)} >= {
        "fabric.mtu",
        "fabric.infiniband.subnet_managers[1].priority",
        "slurm.controller",
        "nodes[1].names",
        "slurm.block_size",
    }


def test_malformed_host_list_does_not_cascade() -> None:
    data = base("lab")
    set_path(data, "nodes[0].names", "gpu[01-08")
    assert [path for path, _ in problems(data)] == ["nodes[0].names"]


def test_field_errors_are_reported_together() -> None:
    data = base("lab")
    set_path(data, "fabric.topology.leaves", 0)
    set_path(data, "target", "oci")
    set_path(data, "bogus", 1)
    assert {path for path, _ in problems(data)} == {"fabric.topology.leaves", "target", "bogus"}


# --- field errors and cross-field rules together ------------------------------------------


@pytest.mark.parametrize("case", MIXED, ids=[c["id"] for c in MIXED])
def test_mixed_case_reports_each_path_once(case: dict[str, Any]) -> None:
    paths = [path for path, _ in problems(broken(case))]
    assert sorted(paths) == sorted(case["expect"])


@pytest.mark.parametrize("case", MIXED, ids=[c["id"] for c in MIXED])
def test_mixed_case_messages_explain(case: dict[str, Any]) -> None:
    found = dict(problems(broken(case)))
    assert {path: text for path, text in case["says"].items() if text not in found[path]} == {}


def test_mixed_field_problems_come_before_rule_problems() -> None:
    data = base("lab")
    set_path(data, "fabric.mtu", 9000)
    set_path(data, "name", "Bad")
    assert [path for path, _ in problems(data)] == ["name", "fabric.mtu"]


def test_mixed_rule_message_names_value_and_fix() -> None:
    data = base("roce")
    set_path(data, "target", "oci")
    set_path(data, "fabric.roce.pfc_priority", 8)
    assert Problem(
        "fabric.roce.pfc_priority", "8 is outside the PFC priority range 0-7"
    ) in problems(data)


def test_unbuildable_spec_reports_field_errors_only() -> None:
    data = {"name": "x", "target": "lab", "nodes": "gpu01", "fabric": 1, "management": None}
    assert [path for path, _ in problems(data)] == ["nodes", "fabric", "management"]


def test_best_effort_does_not_touch_input() -> None:
    data = base("lab")
    set_path(data, "nodes[0].names", 5)
    before = copy.deepcopy(data)
    problems(data)
    assert data == before


# --- the rules module ----------------------------------------------------------------------


def test_skip_rules_context_validates_fields_only() -> None:
    data = base("lab")
    set_path(data, "fabric.mtu", 9000)
    spec = ClusterSpec.model_validate(data, context={SKIP_RULES: True})
    assert [path for path, _ in cross_field_problems(spec)] == ["fabric.mtu"]


def test_cross_field_problems_skip_unknown_paths() -> None:
    data = base("lab")
    set_path(data, "fabric.mtu", 9000)
    set_path(data, "slurm.controller", "ctl9")
    spec = ClusterSpec.model_validate(data, context={SKIP_RULES: True})
    found = cross_field_problems(spec, unknown=["fabric.kind", "nodes[1].names"])
    assert found == []


def test_spec_reexports_rules() -> None:
    assert cross_field_problems is fabric.spec.rules.cross_field_problems


@pytest.mark.parametrize(
    ("path", "parts"),
    [("nodes[0].hcas[*].rail", ("nodes", "[0]", "hcas", "[*]", "rail")), ("name", ("name",))],
)
def test_path_parts(path: str, parts: tuple[str, ...]) -> None:
    assert path_parts(path) == parts


@pytest.mark.parametrize(
    ("unknown", "read", "known"),
    [
        ("nodes[1].names", "nodes[*].names", False),
        ("nodes[1]", "nodes[*].names", False),
        ("nodes", "nodes[0].hcas", False),
        ("nodes[1].gpus", "nodes[*].names", True),
        ("fabric.kind", "fabric.mtu", True),
        ("fabric.topology.leaves", "fabric.topology", False),
    ],
)
def test_checker_known(unknown: str, read: str, known: bool) -> None:
    spec = spec_from_mapping(base("lab"))
    assert Checker(spec, unknown=frozenset([path_parts(unknown)])).known(read) is known


def test_checker_add_drops_findings_inside_unknown_fields() -> None:
    checker = Checker(spec_from_mapping(base("lab")), unknown=frozenset([path_parts("fabric")]))
    checker.add("fabric.mtu", "in an unknown block")
    checker.add("fabric", "at the unknown block")
    checker.add("slurm.block_size", "reads an unknown field", reads=["fabric.kind"])
    checker.add("slurm.controller", "unrelated")
    assert checker.problems == [Problem("slurm.controller", "unrelated")]


def test_pydantic_error_lists_cross_field_problems() -> None:
    data = base("lab")
    set_path(data, "fabric.mtu", 9000)
    with pytest.raises(ValueError, match=r"fabric\.mtu: 9000 is not an InfiniBand MTU"):
        ClusterSpec.model_validate(data)


def test_spec_error_str_is_one_problem_per_line() -> None:
    error = SpecError([Problem("a.b", "bad"), Problem("c", "worse")])
    assert str(error) == "a.b: bad\nc: worse"


def test_spec_error_takes_pairs_as_problems() -> None:
    assert SpecError([("a.b", "bad")]).problems == [Problem("a.b", "bad")]


def test_problem_unpacks_as_path_and_message() -> None:
    path, message = Problem("a.b", "bad")
    assert (path, message, str(Problem("a.b", "bad"))) == ("a.b", "bad", "a.b: bad")


def test_rule_problem_is_a_spec_error_inside_pydantic() -> None:
    data = base("lab")
    set_path(data, "fabric.mtu", 9000)
    with pytest.raises(ValueError) as caught:
        ClusterSpec.model_validate(data)
    cause = caught.value.errors()[0]["ctx"]["error"]  # type: ignore[attr-defined]
    assert isinstance(cause, SpecError)
    assert [p.path for p in cause.problems] == ["fabric.mtu"]


@pytest.mark.parametrize(
    ("loc", "path"),
    [
        (
            ("fabric", "infiniband", "subnet_managers", 1, "priority"),
            "fabric.infiniband.subnet_managers[1].priority",
        ),
        (("nodes", 0), "nodes[0]"),
        (("name",), "name"),
    ],
)
def test_format_path(loc: tuple[str | int, ...], path: str) -> None:
    assert format_path(loc) == path


# --- the JSON Schema -----------------------------------------------------------------------


def test_schema_documents_sm_priority_range() -> None:
    priority = ClusterSpec.model_json_schema()["$defs"]["SubnetManager"]["properties"]["priority"]
    assert (priority["minimum"], priority["maximum"]) == (0, 15)


def test_schema_documents_pfc_priority_range() -> None:
    pfc = ClusterSpec.model_json_schema()["$defs"]["RoceSpec"]["properties"]["pfc_priority"]
    assert (pfc["minimum"], pfc["maximum"]) == (0, 7)


# --- loading files -------------------------------------------------------------------------


def test_load_plain_spec_equals_stack_spec(tmp_path: Path) -> None:
    stack = tmp_path / "Pulumi.x.yaml"
    stack.write_text(yaml.safe_dump({"config": {"railyard:cluster": base("lab")}}))
    assert load_spec(stack) == load_spec(SPECS / "valid" / "lab.yaml")


def test_load_missing_file_names_it(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match=r"nope\.yaml: no such file"):
        load_spec(tmp_path / "nope.yaml")


def test_load_directory_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="is a directory"):
        load_spec(tmp_path)


def test_load_yaml_syntax_error_gives_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: lab\nnodes: [gpu01\n")
    with pytest.raises(SpecError, match=r"bad\.yaml:3:1: invalid YAML"):
        load_spec(bad)


def test_load_duplicate_key_is_an_error(tmp_path: Path) -> None:
    bad = tmp_path / "dup.yaml"
    bad.write_text("name: lab\ntarget: lab\nname: other\n")
    with pytest.raises(SpecError, match="found the key 'name' twice"):
        load_spec(bad)


def test_load_empty_file_is_an_error(tmp_path: Path) -> None:
    empty = tmp_path / "empty.yaml"
    empty.write_text("# nothing\n")
    with pytest.raises(SpecError, match="is empty"):
        load_spec(empty)


def test_load_stack_without_cluster_key(tmp_path: Path) -> None:
    stack = tmp_path / "Pulumi.x.yaml"
    stack.write_text("config:\n  aws:region: us-east-2\n")
    with pytest.raises(SpecError, match=r"config\.railyard:cluster: missing .* aws:region"):
        load_spec(stack)


def test_spec_from_non_mapping() -> None:
    with pytest.raises(SpecError, match=r"\(spec\): expected a mapping"):
        spec_from_mapping(["name", "lab"])


def test_spec_error_keeps_source(tmp_path: Path) -> None:
    data = base("lab")
    set_path(data, "fabric.mtu", 9000)
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(SpecError) as caught:
        load_spec(path)
    assert caught.value.source == str(path)


def test_broken_does_not_touch_base() -> None:
    before = copy.deepcopy(base("lab"))
    broken({"base": "lab", "set": {"fabric.mtu": 1}})
    assert base("lab") == before


# --- the machine type catalog the EFA and GCP rules read ---------------------------------


@pytest.mark.parametrize(
    ("instance_type", "efa_interfaces"),
    [
        ("p5.48xlarge", 32),
        ("p5e.48xlarge", 32),
        ("p5en.48xlarge", 16),
        ("p4d.24xlarge", 4),
        ("p4de.24xlarge", 4),
        ("trn1.32xlarge", 8),
        ("g5.xlarge", 0),
        ("m5.large", 0),
    ],
)
def test_catalog_efa_interfaces(instance_type: str, efa_interfaces: int) -> None:
    known = aws_instance(instance_type)
    assert known is not None and known.efa_interfaces == efa_interfaces


@pytest.mark.parametrize(("machine_type", "gpu_nics"), [("a3-highgpu-8g", 4), ("a3-megagpu-8g", 8)])
def test_catalog_gpu_nics(machine_type: str, gpu_nics: int) -> None:
    known = gcp_machine(machine_type)
    assert known is not None and known.gpu_nics == gpu_nics


def test_catalog_unknown_type_is_none() -> None:
    assert (aws_instance("p9.mega"), gcp_machine("a9-gpu")) == (None, None)
