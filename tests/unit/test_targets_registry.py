"""The registry of targets (fabric/targets/__init__.py) and the folders agree: every registered
target has its required parts, every folder is registered, and every part the table names is
there (and none it does not name), so the layers that find parts by name find them all."""

from __future__ import annotations

import ast
import inspect

import pytest

from fabric.components.target import TargetCluster
from fabric.spec.models import ClusterSpec
from fabric.state import REPO_ROOT
from fabric.targets import REQUIRED, ROLES, TARGETS, has_part, part, parts

FOLDER = REPO_ROOT / "fabric" / "targets"


def test_every_folder_is_a_registered_target_and_every_target_a_folder():
    folders = {p.name for p in FOLDER.iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert folders == set(TARGETS)


def test_the_spec_accepts_exactly_the_registered_targets():
    """``target:`` in a spec names a registered target (the model's Literal) and nothing else."""
    annotation = ClusterSpec.model_fields["target"].annotation
    assert set(getattr(annotation, "__args__", ())) == set(TARGETS)


@pytest.mark.parametrize("name", list(TARGETS))
def test_a_target_has_its_required_parts(name: str):
    folder = FOLDER / name
    for role in REQUIRED:
        assert (folder / f"{role}.py").is_file(), f"fabric/targets/{name}/{role}.py is missing"
    component = getattr(part(name, "component"), TARGETS[name].component)
    assert inspect.isclass(component) and issubclass(component, TargetCluster)
    rules = part(name, "rules").RULES
    assert rules and all(callable(rule) for rule in rules)


@pytest.mark.parametrize("name", list(TARGETS))
def test_the_table_names_exactly_the_parts_the_folder_has(name: str):
    present = {role for role in ROLES if (FOLDER / name / f"{role}.py").is_file()}
    assert {role for role in ROLES if has_part(name, role)} == present


def test_each_kind_of_part_has_its_interface():
    for _, checks in parts("checks"):
        assert checks.FAMILIES and set(checks.PARAMETERS) >= {
            s for _, s in checks.FAMILIES.values()
        }
        assert set(checks.SELECT) <= set(checks.FAMILIES)
        assert callable(checks.not_generated)
    for _, handoff in parts("handoff"):
        assert callable(handoff.role_vars) and callable(handoff.job_environment)
    for _, hostkeys in parts("hostkeys"):
        assert callable(hostkeys.command) and callable(hostkeys.parse)


def test_the_spec_rules_run_every_targets_rules():
    from fabric.spec.rules import RULES

    for _, rules in parts("rules"):
        assert set(rules.RULES) <= set(RULES)


@pytest.mark.parametrize("name", list(TARGETS))
def test_a_target_package_imports_nothing(name: str):
    """Loading a spec-layer part (``rules``) runs the target package's ``__init__``: it must
    not pull in the component (Pulumi, a cloud SDK) or anything else."""
    tree = ast.parse((FOLDER / name / "__init__.py").read_text())
    assert not [n for n in ast.walk(tree) if isinstance(n, ast.Import | ast.ImportFrom)]


def test_an_unknown_part_or_target_is_refused():
    with pytest.raises(ValueError, match="no target part"):
        part("lab", "widgets")
    with pytest.raises(KeyError, match="no catalog part"):
        part("lab", "catalog")
    with pytest.raises(KeyError):
        part("mainframe", "rules")
