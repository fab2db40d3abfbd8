"""A role's interface is written three times: defaults/main.yml, meta/argument_specs.yml and the
README's variable table. They must name the same variables, with the same defaults."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

ROLES = Path(__file__).resolve().parents[2] / "roles"
CHECKED = ("efa", "fabric_watch", "gcp_gpudirect", "node_health", "slurm")


def _readme_variables(role: str) -> set[str]:
    names: set[str] = set()
    for line in (ROLES / role / "README.md").read_text().splitlines():
        if line.startswith("| `"):
            first = line.split("|")[1]
            names |= set(re.findall(r"`([a-z0-9_]+)`", first))
    return names


@pytest.mark.parametrize("role", CHECKED)
def test_defaults_argument_specs_and_readme_agree(role: str) -> None:
    defaults = yaml.safe_load((ROLES / role / "defaults/main.yml").read_text())
    spec = yaml.safe_load((ROLES / role / "meta/argument_specs.yml").read_text())
    options = spec["argument_specs"]["main"]["options"]
    assert set(defaults) == set(options), set(defaults) ^ set(options)
    assert set(defaults) == _readme_variables(role), set(defaults) ^ _readme_variables(role)
    for name, value in defaults.items():
        if isinstance(value, str) and "{{" in value:
            continue  # computed from other variables: the spec documents it in words
        assert options[name].get("default") == value, name
