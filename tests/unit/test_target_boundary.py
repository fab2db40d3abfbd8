"""Shared code never names a target: everything it asks of one goes through the registry
(``fabric.targets.part`` / ``hook`` / ``hooks``), so a target is its folder and one line.

Outside ``fabric/targets/<name>/`` this fails on
- any import of ``fabric.targets.<name>`` (or below), at module level, inside a function or
  under ``if TYPE_CHECKING:``, and any ``import_module("fabric.targets.<name>...")``;
- any comparison (``==``, ``!=``, ``in``, ``not in``, ``match``/``case``) of a target-valued
  expression (``spec.target``, ``target``, ``provider``, ``cloud``) with a literal naming a
  registered target;
- any attribute access ``<x>.<name>`` where ``<name>`` is a registered target with a spec
  section of its own (``spec.aws``): a target's settings are read by its own folder's code.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from fabric.state import REPO_ROOT
from fabric.targets import TARGETS, hooks

#: The Python the rule covers: the package, the program, roles' and playbooks' plugins.
SOURCES = (
    "fabric/**/*.py",
    "roles/*/filter_plugins/*.py",
    "roles/*/library/*.py",
    "roles/*/files/*.py",
    "playbooks/filter_plugins/*.py",
    "__main__.py",
)

#: Names whose value is a target (or the provider a target stands for).
TARGET_VALUED = frozenset({"target", "provider", "cloud", "railyard_target"})


def _shared_files() -> Iterator[Path]:
    targets = REPO_ROOT / "fabric" / "targets"
    for pattern in SOURCES:
        for path in sorted(REPO_ROOT.glob(pattern)):
            if path.parent == targets or targets not in path.parents:
                yield path


def _rel(path: Path) -> str:
    return str(path.relative_to(REPO_ROOT))


def _names_target(module: str) -> bool:
    parts = module.split(".")
    return len(parts) >= 3 and parts[:2] == ["fabric", "targets"] and parts[2] in TARGETS


def named_imports(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, module) of every import of a target's own modules."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if _names_target(a.name)]
        elif isinstance(node, ast.ImportFrom) and node.module:
            if _names_target(node.module):
                found.append((node.lineno, node.module))
            elif node.module == "fabric.targets":
                found += [
                    (node.lineno, f"fabric.targets.{a.name}")
                    for a in node.names
                    if a.name in TARGETS
                ]
        elif isinstance(node, ast.Call) and node.args:
            first = node.args[0]
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if (
                called == "import_module"
                and isinstance(first, ast.Constant)
                and isinstance(first.value, str)
                and _names_target(first.value)
            ):
                found.append((node.lineno, first.value))
    return sorted(found)


def _is_target_valued(node: ast.AST) -> bool:
    if isinstance(node, ast.Attribute):
        return node.attr in TARGET_VALUED
    if isinstance(node, ast.Name):
        return node.id in TARGET_VALUED
    if isinstance(node, ast.Subscript):  # args["target"]
        key = node.slice
        return isinstance(key, ast.Constant) and key.value in TARGET_VALUED
    return False


def _target_literals(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value] if node.value in TARGETS else []
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return [v for e in node.elts for v in _target_literals(e)]
    return []


def literal_comparisons(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, literal) of every comparison of a target-valued expression with a target's name."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(_is_target_valued(s) for s in sides):
                found += [(node.lineno, v) for s in sides for v in _target_literals(s)]
        elif isinstance(node, ast.Match) and _is_target_valued(node.subject):
            for case in node.cases:
                for sub in ast.walk(case.pattern):
                    if isinstance(sub, ast.MatchValue):
                        found += [(sub.lineno, v) for v in _target_literals(sub.value)]
    return sorted(found)


def _sections() -> frozenset[str]:
    """The targets with a spec section of their own (``spec.<name>``)."""
    return frozenset(name for name, _ in hooks("section", "MODEL"))


def section_reads(tree: ast.AST, sections: frozenset[str]) -> list[tuple[int, str]]:
    """(line, attribute) of every ``<x>.<target>`` read of a target's own spec section."""
    return sorted(
        (node.lineno, node.attr)
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and node.attr in sections
    )


def _findings() -> list[str]:
    sections = _sections()
    out = []
    for path in _shared_files():
        tree = ast.parse(path.read_text(), filename=str(path))
        for line, module in named_imports(tree):
            out.append(f"{_rel(path)}:{line}: imports {module}; ask fabric.targets.hook instead")
        for line, value in literal_comparisons(tree):
            out.append(f"{_rel(path)}:{line}: compares a target with {value!r}; use a hook")
        for line, attr in section_reads(tree, sections):
            out.append(f"{_rel(path)}:{line}: reads spec.{attr}; the {attr} folder reads it")
    return out


def test_shared_code_names_no_target():
    findings = _findings()
    assert not findings, "\n".join(findings)


# --- the finders find what they are for (so the test above can fail) ------------------------


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (
            "from fabric.targets.aws.catalog import aws_instance",
            [(1, "fabric.targets.aws.catalog")],
        ),
        ("def f():\n    import fabric.targets.gcp.model", [(2, "fabric.targets.gcp.model")]),
        ("from fabric.targets import lab", [(1, "fabric.targets.lab")]),
        ("importlib.import_module('fabric.targets.gcp.rules')", [(1, "fabric.targets.gcp.rules")]),
        ("from fabric.targets import hook, part", []),
        ("from fabric.targetsfoo import aws", []),
    ],
)
def test_named_imports_are_found(source: str, expected: list[tuple[int, str]]):
    assert named_imports(ast.parse(source)) == expected


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("spec.target == 'aws'", [(1, "aws")]),
        ("'lab' != c.spec.target", [(1, "lab")]),
        ("target in ('baremetal', 'existing')", [(1, "baremetal"), (1, "existing")]),
        ("provider == 'gcp'", [(1, "gcp")]),
        ("match spec.target:\n    case 'aws':\n        pass", [(2, "aws")]),
        ("spec.fabric.kind == 'roce'", []),
        ("stack == 'lab'", []),
        ("spec.target == other", []),
    ],
)
def test_target_literals_are_found(source: str, expected: list[tuple[int, str]]):
    assert literal_comparisons(ast.parse(source)) == expected


def test_section_reads_are_found():
    tree = ast.parse("x = spec.aws.region\ny = spec.gcp\nz = spec.slurm")
    assert section_reads(tree, frozenset({"aws", "gcp"})) == [(1, "aws"), (2, "gcp")]
