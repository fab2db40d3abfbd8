"""A role's interface is written three times: defaults/main.yml, meta/argument_specs.yml and the
README's variable table. For every role under roles/ (found, not listed) they must name the same
variables with the same defaults; a variable is set in defaults (null when another source fills
it), never only in a comment there (a commented example of a set variable is fine); and an
option with a default is not ``required``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from fabric.state import REPO_ROOT

ROLES = REPO_ROOT / "roles"
ALL = sorted(p.name for p in ROLES.iterdir() if (p / "tasks").is_dir())
#: A commented-out assignment in defaults: ``# name: value`` (or ``#name:``), a variable a user
#: cannot see in the role's interface.
_COMMENTED = re.compile(r"^#\s*([a-z][a-z0-9_]*):(\s|$)")


def _readme_variables(role: str) -> set[str]:
    names: set[str] = set()
    for line in (ROLES / role / "README.md").read_text().splitlines():
        if line.startswith("| `"):
            first = line.split("|")[1]
            names |= set(re.findall(r"`([a-z0-9_]+)`", first))
    return names


def _interface(role: str) -> tuple[Path, dict[str, Any], dict[str, Any]]:
    path = ROLES / role / "defaults/main.yml"
    defaults = yaml.safe_load(path.read_text()) or {}
    spec = yaml.safe_load((ROLES / role / "meta/argument_specs.yml").read_text())
    return path, defaults, spec["argument_specs"]["main"].get("options") or {}


def commented_variables(text: str, prefix: str) -> list[str]:
    """The role's variables (named ``<prefix>...``) assigned only in a comment of ``text``."""
    found = (_COMMENTED.match(line.strip()) for line in text.splitlines())
    return [m.group(1) for m in found if m and m.group(1).startswith(prefix)]


def test_every_role_is_found():
    assert len(ALL) >= 11 and {"rdma_stack", "roce_qos", "subnet_manager"} <= set(ALL)


@pytest.mark.parametrize("role", ALL)
def test_defaults_argument_specs_and_readme_agree(role: str) -> None:
    _, defaults, options = _interface(role)
    assert set(defaults) == set(options), set(defaults) ^ set(options)
    assert set(defaults) == _readme_variables(role), set(defaults) ^ _readme_variables(role)
    for name, value in defaults.items():
        if isinstance(value, str) and "{{" in value:
            continue  # computed from other variables: the spec documents it in words
        assert "default" in options[name], f"{name}: argument_specs gives no default"
        assert options[name]["default"] == value, name


@pytest.mark.parametrize("role", ALL)
def test_no_variable_is_set_only_in_a_comment(role: str) -> None:
    path, defaults, _ = _interface(role)
    hidden = [v for v in commented_variables(path.read_text(), f"{role}_") if v not in defaults]
    assert not hidden, f"{path}: set these (null for unset) instead of commenting them: {hidden}"


@pytest.mark.parametrize("role", ALL)
def test_an_option_with_a_default_is_not_required(role: str) -> None:
    _, defaults, options = _interface(role)
    both = sorted(n for n, o in options.items() if o.get("required") and n in defaults)
    assert not both, f"required, yet defaults/main.yml sets them: {both}"


def test_a_commented_out_variable_is_found():
    text = "---\n# rdma_stack_x:\n#   - a\n#rdma_stack_y: 1\n# Where: prose\nrdma_stack_z: 1\n"
    assert commented_variables(text, "rdma_stack_") == ["rdma_stack_x", "rdma_stack_y"]
