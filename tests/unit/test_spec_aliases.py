"""Bad input, round 3: YAML aliases are bounded, and a message never builds the text of an
unbounded value.

A "billion laughs" spec (lists nesting aliases nine deep: 9**9 values once expanded) ran
``validate`` past 60 s and 3 GB: ``_shown`` built ``repr()`` of the whole expanded value before
cutting it. Now the reader counts the aliases and sizes their expansion on the composed nodes
(each distinct node once) and refuses it with one problem naming the line.
"""

from __future__ import annotations

import resource
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from fabric.redact import shown
from fabric.spec import SpecError, load_spec
from fabric.spec.load import MAX_ALIASED_VALUES, MAX_ALIASES

ROOT = Path(__file__).resolve().parents[2]
SPECS = Path(__file__).parent / "specs" / "valid"


def bomb(levels: int = 9, where: str = "nodes") -> str:
    """The classic billion laughs, its last level used as the spec's ``where``."""
    lines = ["name: lab", 'a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, levels + 1)]
    return "\n".join([*lines, f"{where}: *a{levels}", ""])


def problem_of(tmp_path: Path, text: str) -> str:
    path = tmp_path / "spec.yaml"
    path.write_text(text)
    with pytest.raises(SpecError) as caught:
        load_spec(path)
    assert len(caught.value.problems) == 1, caught.value.problems
    return str(caught.value.problems[0])


@pytest.mark.parametrize("where", ["nodes", "name", "lab"])
def test_billion_laughs_is_one_problem_naming_its_line(tmp_path: Path, where: str) -> None:
    got = problem_of(tmp_path, bomb(where=where))
    assert got.startswith(f"{tmp_path / 'spec.yaml'}:7:5: invalid YAML: ") and "laughs" in got
    assert f"more than {MAX_ALIASED_VALUES} values" in got and "write the values out" in got


def test_billion_laughs_process_is_quick_and_small(tmp_path: Path) -> None:
    """The whole command under a 512 MiB address-space limit and a 60 s timeout (it used to
    run past both): one problem, exit 1, no traceback."""
    path = tmp_path / "bomb.yaml"
    path.write_text(bomb())

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (512 << 20, 512 << 20))

    done = subprocess.run(
        [sys.executable, "-m", "fabric", "validate", "--spec", str(path)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
        preexec_fn=limit,  # noqa: PLW1509 - a resource limit, no threads here
        check=False,
    )
    assert done.returncode == 1 and done.stderr == "", done.stderr
    assert "billion laughs" in done.stdout and done.stdout.count("\n") == 2


def test_too_many_aliases(tmp_path: Path) -> None:
    text = "name: lab\nx: &x 1\nlab: [" + ", ".join(["*x"] * (MAX_ALIASES + 1)) + "]\n"
    assert f"more than {MAX_ALIASES} aliases" in problem_of(tmp_path, text)


def test_alias_inside_its_own_anchor(tmp_path: Path) -> None:
    assert "(a loop)" in problem_of(tmp_path, "name: lab\nlab: &x [1, *x]\n")


def test_ordinary_aliases_still_read(tmp_path: Path) -> None:
    """A spec sharing a node group's settings through an alias is the same spec."""
    data = yaml.safe_load((SPECS / "lab.yaml").read_text())
    text = (SPECS / "lab.yaml").read_text()
    assert "&" not in text
    first = data["nodes"][0]
    data["nodes"][0] = {"names": first.pop("names"), **first}
    plain = tmp_path / "plain.yaml"
    plain.write_text(yaml.safe_dump(data))
    aliased = tmp_path / "aliased.yaml"
    aliased.write_text(yaml.safe_dump(data).replace("nodes:", "shared: &s 1\nnodes:", 1))
    assert load_spec(plain) == load_spec(plain)
    with pytest.raises(SpecError, match="unknown key 'shared'"):
        load_spec(aliased)  # read fine (the alias bound is not the problem), then judged


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("name: lab\nlab: " + "[" * 3000 + "]" * 3000 + "\n", "nested too deep"),
        ("name: lab\nlab: " + "9" * 5000 + "\n", "too many digits"),
    ],
)
def test_deep_or_huge_yaml_is_one_problem(tmp_path: Path, text: str, message: str) -> None:
    assert message in problem_of(tmp_path, text)


def test_shown_is_cut_before_it_is_built() -> None:
    """A 9**9-value structure (shared lists, as YAML builds an alias) and a 64 MiB string are
    quoted in 60 characters; building either's repr() would take minutes or gigabytes."""
    value: list[object] = ["lol"] * 9
    for _ in range(9):
        value = [value] * 9
    text = shown(value)
    assert len(text) == 60 and text.startswith("[[[[[[[[[") and text.endswith("...")
    assert len(shown("x" * (64 << 20))) == 60
    assert shown(10**5000).startswith("<a 16610-bit number>")
    assert shown({"a": [1, 2]}) == "{'a': [1, 2]}"
