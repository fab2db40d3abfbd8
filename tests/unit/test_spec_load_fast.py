"""Reading a spec with libyaml (the fast path) gives what PyYAML's Python loader gives, and
any text the two read differently, or that uses aliases, goes to the Python loader."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from fabric.spec import SpecError, load_spec
from fabric.spec.load import _PLAIN_DEPTH, _load_plain, _load_yaml, _NotPlain, _UniqueKeyLoader


def test_pyyaml_here_has_libyaml() -> None:
    """The fast path needs PyYAML built with libyaml (PyPI's wheels are): without it every spec
    takes the Python loader, correct but several times slower (bench/plan)."""
    assert yaml.__with_libyaml__


def _python(text: str) -> Any:
    return yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 - a SafeLoader subclass


@pytest.mark.parametrize(
    "text",
    [
        "name: lab\nnodes:\n  - {names: 'gpu[01-04]', gpus: 8}\n",
        "a: 1\nb: 0x1F\nc: 1.5e3\nd: .inf\ne: yes\nf: ~\ng: 2001-12-14\nh: 1_000\n",
        "a: \"x\\ty\\u263a\"\nb: 'it''s'\nc: |-\n  one\n  two\nd: >\n  folded\n  text\n",
        "a: &only 1\nb: 2\n",  # an anchor nothing aliases
        "--- \n- [a, b]\n- {c: d}\n...\n",
        "a:\r\n  b: c\r\n",
    ],
)
def test_the_fast_path_reads_what_the_python_loader_reads(text: str) -> None:
    assert repr(_load_plain(text)) == repr(_python(text))


@pytest.mark.parametrize(
    "text",
    [
        "a: &x [1, 2]\nb: *x\n",  # an alias
        "a: &x [*x]\n",  # a loop
        "a: !\n",  # a tag: PyYAML reads null, libyaml ''
        "a:\tb\n",  # a tab
        "a: 1\n\ufeffb: 2\n",  # a byte order mark libyaml would skip
        "{a: b? c}\n",  # '?' in a flow scalar: libyaml takes it, PyYAML refuses it
        "a: |#c\n  x\n",  # '#' right after '|': libyaml takes it, PyYAML refuses it
        "a: " + "[" * (_PLAIN_DEPTH + 1) + "]" * (_PLAIN_DEPTH + 1) + "\n",  # deeper than a spec
        "",
    ],
)
def test_text_the_two_read_otherwise_goes_to_the_python_loader(text: str) -> None:
    with pytest.raises(_NotPlain):
        _load_plain(text)
    try:
        expected = ("ok", repr(_python(text)))
    except yaml.YAMLError as error:
        expected = ("error", str(error))
    try:
        got = ("ok", repr(_load_yaml(text)))
    except yaml.YAMLError as error:
        got = ("error", str(error))
    assert got == expected


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("name: lab\nname: lab2\n", ":2:1: invalid YAML: found the key 'name' twice"),
        ("name: lab\nnodes: [a\n", ":3:1: invalid YAML: expected ',' or ']'"),
        ("a: &x 1\nb: &x 2\n", ":2:4: invalid YAML: second occurrence"),
        ("a: {<<: {x: 2}}\n", ":1:5: invalid YAML: could not determine a constructor for the tag"),
    ],
)
def test_errors_are_worded_by_the_python_loader(tmp_path: Path, text: str, where: str) -> None:
    path = tmp_path / "spec.yaml"
    path.write_text(text)
    with pytest.raises(SpecError) as refused:
        load_spec(path)
    assert where in str(refused.value.problems[0])


def test_nesting_too_deep_is_refused_as_before(tmp_path: Path) -> None:
    path = tmp_path / "spec.yaml"
    path.write_text("a: " + "[" * 2000 + "]" * 2000 + "\n")
    with pytest.raises(SpecError) as refused:
        load_spec(path)
    assert "nested too deep to read" in str(refused.value.problems[0])
