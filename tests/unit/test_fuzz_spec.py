"""Property-based fuzzing of the spec reader and ``validate`` (hypothesis), bad input round 3.

Mutations of the valid specs (tests/unit/specs/valid and the documented Pulumi examples): keys
dropped, values replaced by any other kind (numbers past every bound, text, lists, mappings,
secrets, host lists), entries repeated, keys renamed; and the YAML text itself cut, spliced and
garbled. The outcome is always a valid spec, or a SpecError whose every problem has a path and
a one-line message; never another exception (``validate`` would print a traceback). Examples
are derandomized, so CI sees the same ones on every run; a failure found is kept below as an
explicit regression case.
"""

from __future__ import annotations

import contextlib
import copy
import io
import tempfile
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fabric.cli import main
from fabric.spec import ClusterSpec, SpecError, load_spec, spec_from_mapping
from fabric.spec.load import cluster_mapping

ROOT = Path(__file__).resolve().parents[2]
SOURCES = sorted((Path(__file__).parent / "specs" / "valid").glob("*.yaml")) + sorted(
    ROOT.glob("Pulumi.*.example.yaml")
)
BASES: dict[str, dict[str, Any]] = {
    path.name: cluster_mapping(yaml.safe_load(path.read_text()), path.name) for path in SOURCES
}

#: The budget: examples per property and the time one may take (a spec with every problem
#: found, best-effort rules included, is tens of milliseconds on this machine).
FUZZ = settings(
    max_examples=300,
    deadline=timedelta(seconds=10),  # a bound, wide enough for make test's loaded machine
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    database=None,
)

#: Text that looks almost right, or is what a careless operator pastes.
ODD_TEXT = [
    "",
    " ",
    "gpu[01-04]",
    "gpu[04-01]",
    "gpu[01-",
    "10.0.0.1",
    "10.0.0.0/24",
    "300.1.1.1",
    "0x7fff",
    "0x0000000000000000",
    "PLACEHOLDER",
    "admin:PASSWORD@host",
    "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjE=\n-----END OPENSSH PRIVATE KEY-----",
    "{config: bmcPassword}",
    "ÿ\u202e\u0663",
    "x" * 300,
]

values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(ODD_TEXT),
    st.text(max_size=20),
    st.lists(st.one_of(st.integers(-5, 70000), st.sampled_from(ODD_TEXT)), max_size=3),
    st.dictionaries(
        st.sampled_from(["name", "host", "x", "config", "url"]), st.integers(), max_size=2
    ),
)


def _places(data: Any, out: list[tuple[Any, Any]]) -> list[tuple[Any, Any]]:
    """Every (container, key or index) in ``data``."""
    items = (
        data.items()
        if isinstance(data, dict)
        else enumerate(data)
        if isinstance(data, list)
        else ()
    )
    for key, value in items:
        out.append((data, key))
        _places(value, out)
    return out


@st.composite
def mutated_data(draw: st.DrawFn) -> dict[str, Any]:
    data = copy.deepcopy(BASES[draw(st.sampled_from(sorted(BASES)))])
    for _ in range(draw(st.integers(1, 4))):
        places = _places(data, [])
        if not places:
            break
        parent, key = draw(st.sampled_from(places))
        action = draw(st.sampled_from(["delete", "replace", "repeat", "rename"]))
        if action == "delete":
            del parent[key]
        elif action == "replace":
            parent[key] = draw(values)
        elif action == "repeat" and isinstance(parent, list):
            parent.insert(key, copy.deepcopy(parent[key]))
        elif action == "rename" and isinstance(parent, dict):
            parent[draw(st.sampled_from([*ODD_TEXT[:8], "nodes", "fabric", "extra"]))] = parent.pop(
                key
            )
    return data


def assert_outcome(load: Any) -> ClusterSpec | SpecError:
    """A valid spec, or a SpecError whose problems each have a path and a one-line message."""
    try:
        return load()
    except SpecError as err:
        assert err.problems, "a SpecError without problems"
        for problem in err.problems:
            assert problem.path and problem.message, problem
            assert "\n" not in problem.path + problem.message, problem
        return err


@FUZZ
@given(data=mutated_data())
def test_mutated_spec_is_valid_or_problems_with_paths(data: dict[str, Any]) -> None:
    assert_outcome(lambda: spec_from_mapping(data, "spec.yaml"))


@st.composite
def mutated_text(draw: st.DrawFn) -> str:
    lines = yaml.safe_dump(BASES[draw(st.sampled_from(sorted(BASES)))], sort_keys=False).splitlines(
        keepends=True
    )
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(lines) - 1))
        action = draw(
            st.sampled_from(["drop", "repeat", "cut", "indent", "garble", "end", "alias"])
        )
        if action == "drop":
            del lines[at]
        elif action == "repeat":
            lines.insert(at, lines[at])
        elif action == "cut":
            lines[at] = lines[at][: draw(st.integers(0, len(lines[at])))]
        elif action == "indent":
            lines[at] = " " * draw(st.integers(1, 3)) + lines[at]
        elif action == "garble":
            lines[at] = draw(st.text(max_size=30)) + "\n"
        elif action == "alias":
            lines.insert(
                at, draw(st.sampled_from(["x: &a [1, 2]\n", "y: *a\n", "z: &b [*a, *a]\n"]))
            )
        else:
            lines = lines[:at]
        if not lines:
            break
    return "".join(lines)


@FUZZ
@given(text=mutated_text())
def test_mutated_yaml_is_valid_or_problems_with_paths(text: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "spec.yaml"
        path.write_text(text)
        assert_outcome(lambda: load_spec(path))


@FUZZ
@given(text=mutated_text())
def test_validate_command_never_a_traceback(text: str) -> None:
    """``python -m fabric validate`` on the mutated text: 0 with the summary, or 1 with every
    problem on stdout (one a line), nothing on stderr."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "spec.yaml"
        path.write_text(text)
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(["validate", "--spec", str(path)])
    assert code in (0, 1) and err.getvalue() == "", err.getvalue()
    if code == 1:
        lines = out.getvalue().splitlines()
        assert lines[0].endswith(("problem", "problems")) and all(
            line.startswith("  ") and ": " in line for line in lines[1:]
        ), lines


# -- failures the fuzzing found, kept as regression cases ----------------------------------


def test_found_control_character_is_one_line(tmp_path: Path) -> None:
    """Found by test_mutated_yaml_is_valid_or_problems_with_paths: a control character made
    PyYAML's error (and so the problem) two lines."""
    path = tmp_path / "spec.yaml"
    path.write_text("\x1f\n" + (SOURCES[0]).read_text())
    err = assert_outcome(lambda: load_spec(path))
    assert isinstance(err, SpecError)
    assert "invalid YAML: unacceptable character #x001f" in err.problems[0].message


@pytest.mark.parametrize("value", [True, 5, 3.5])
def test_found_number_as_network_is_refused(value: object) -> None:
    """Found by test_mutated_spec_is_valid_or_problems_with_paths: pydantic read ``subnet: 5``
    as 0.0.0.5/32 (and ``true`` as 0.0.0.1/32), so the problem named the wrong thing."""
    data = copy.deepcopy(BASES["lab.yaml"])
    data["management"]["subnet"] = value
    err = assert_outcome(lambda: spec_from_mapping(data))
    assert isinstance(err, SpecError)
    assert str(err.problems[0]) == (
        "management.subnet: expected an IPv4 network with no host bits set, e.g. 10.10.0.0/24;"
        f" got {value!r}"
    )
