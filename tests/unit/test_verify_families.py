"""The family table (``fabric.verify.families``): every family one unit the plan and the
suite's fixtures read; the table equal to the suite; a family module found by itself; the
targets' families through the registry, their testinfra modules naming no target."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

import fabric.verify.families as families
from fabric.spec import load_spec
from fabric.state import REPO_ROOT
from fabric.verify.families import checks_part, table
from fabric.verify.plan import FAMILIES, TABLE, CheckPlan, describe

CHECKS = REPO_ROOT / "fabric/verify/checks"


def _suite() -> dict[str, tuple[str | None, list[str]]]:
    """Each check function of the suite -> (its ``family`` marker, its parameter names)."""
    out: dict[str, tuple[str | None, list[str]]] = {}
    for module in sorted(CHECKS.glob("test_*.py")):
        tree = ast.parse(module.read_text())
        default = None
        for node in tree.body:
            if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets
            ):
                default = _marker(node.value)
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
                marked = [_marker(d) for d in node.decorator_list]
                family = next((m for m in marked if m), default)
                out[f"{module.stem}::{node.name}"] = (family, [a.arg for a in node.args.args])
    return out


def _marker(node: ast.expr) -> str | None:
    """The family name of ``pytest.mark.family("name")``, else None."""
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "family"
        and node.args
        and isinstance(node.args[0], ast.Constant)
    ):
        return str(node.args[0].value)
    return None


def test_every_check_is_in_the_family_its_marker_names() -> None:
    suite = _suite()
    assert suite
    for name, (family, _) in suite.items():
        assert family in FAMILIES, f"{name}: marked {family!r}, no such family"
        assert name.split("::")[1] in FAMILIES[family][0], f"{name}: not in {family}'s checks"


def test_every_check_takes_one_fixture_of_the_table_and_every_fixture_is_taken() -> None:
    taken: set[str] = set()
    for name, (_, args) in _suite().items():
        mine = [a for a in args if a in TABLE.fixtures]
        assert mine, f"{name}: takes no parameter fixture of the family table"
        taken |= set(mine)
    assert taken == set(TABLE.fixtures)


def test_each_family_names_a_source_the_plan_computes() -> None:
    plan = CheckPlan(spec=load_spec(REPO_ROOT / "Pulumi.lab.yaml"), hosts=["gpu01"])
    for family, (_, source) in FAMILIES.items():
        assert source in TABLE.sources, f"{family}: no source {source!r}"
        assert isinstance(plan.params(source), list)


def test_a_family_module_is_found_by_itself(tmp_path: Path, monkeypatch) -> None:
    """Adding a family is one module in the package (plus its testinfra file): no list to edit."""
    (tmp_path / "zz_extra.py").write_text(
        textwrap.dedent(
            """
            from fabric.verify.families.base import Family, Fixture

            ORDER = 15
            SOURCES = {"extra_hosts": lambda plan: list(plan.hosts)}
            FAMILIES = (
                Family(
                    "extra",
                    ("test_extra",),
                    "extra_hosts",
                    fixtures=(Fixture("extra_host", lambda plan: plan.extra_hosts),),
                ),
            )
            """
        )
    )
    monkeypatch.setattr(families, "__path__", [*families.__path__, str(tmp_path)])
    found = table()
    names = [f.name for f in found.families]
    assert names.index("ib_links") < names.index("extra") < names.index("phy")
    assert "extra_hosts" in found.sources and "extra_host" in found.fixtures


def test_two_families_of_one_name_are_refused(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "zz_twice.py").write_text(
        "from fabric.verify.families.base import Family\n"
        "ORDER = 15\n"
        "FAMILIES = (Family('ports', ('test_x',), 'host_ports'),)\n"
    )
    monkeypatch.setattr(families, "__path__", [*families.__path__, str(tmp_path)])
    with pytest.raises(ValueError, match="two check families named 'ports'"):
        table()


def test_the_targets_families_come_from_their_checks_parts_in_table_order() -> None:
    names = list(FAMILIES)
    assert names.index("slurm_provider_topology") < names.index("efa") < names.index("nccl")
    assert callable(checks_part("efa").efa_device_problems)
    assert callable(checks_part("gvnic").driver_problems)
    with pytest.raises(KeyError, match="no_such_family"):
        checks_part("no_such_family")


def test_a_families_parameters_are_its_sources_narrowed_by_its_selection() -> None:
    spec = load_spec(REPO_ROOT / "Pulumi.gcp-a3-ultra.example.yaml")
    plan = CheckPlan(spec=spec, hosts=list(spec.hosts))
    hosts = plan.params("gpu_nic_hosts")
    assert hosts and plan.family_params("gpu_nics") == hosts
    assert plan.family_params("gvnic") == [h for h in hosts if h.driver == "gve"] == []
    assert "not_generated" in describe(plan)["gvnic"]
