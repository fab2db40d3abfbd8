"""``fabric.topology.spec_yaml``: the directly written YAML of an imported spec is byte for byte
PyYAML's (libyaml's emitter, the settings ``import`` always used), on every real capture the
import tests use, on a capture scaled from a real one, and on values it must leave to PyYAML."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from bench.capture_cap.__main__ import copy_of
from fabric.parsers.ibnetdiscover import parse
from fabric.state import REPO_ROOT
from fabric.topology.importer import import_fabric
from fabric.topology.spec_yaml import Row, dump, pyyaml_dump, write

FIXTURES = REPO_ROOT / "tests" / "fixtures"
CAPTURES = sorted(
    p
    for p in FIXTURES.glob("ibnetdiscover__*.txt")
    # ibtopotool__1's CAs have no description; ibsim_defaults__1's default host names are
    # PLACEHOLDERs validate refuses (tests/unit/test_import_defaults.py)
    if p.name not in ("ibnetdiscover__ibtopotool__1.txt", "ibnetdiscover__ibsim_defaults__1.txt")
)
LAB = FIXTURES / "ibnetdiscover__ibsim_lab__1.txt"


def _scaled(copies: int) -> str:
    """The lab capture and ``copies`` renamed copies of its nodes (bench/capture_cap's way)."""
    text = LAB.read_text()
    body = text[text.index("vendid=") :]
    return text + "".join(copy_of(body, i) for i in range(1, copies + 1))


def _sections(text: str) -> list[tuple[dict[str, Any], int]]:
    """The sections ``import`` writes for a capture, each with its line width."""
    spec = import_fabric(parse(text), "imported").spec
    fabric = dict(spec["fabric"])
    cabling = fabric.pop("cabling")
    return [
        ({"name": spec["name"], "target": spec["target"]}, 100),
        ({"nodes": spec["nodes"]}, 100),
        ({"fabric": fabric}, 100),
        ({"cabling": [Row(c) for c in cabling]}, 1000),
        ({"management": spec["management"]}, 100),
        ({"existing": spec["existing"]}, 100),
    ]


@pytest.mark.parametrize("capture", CAPTURES, ids=lambda p: p.stem)
def test_every_section_of_a_real_capture_is_pyyaml_text(capture: Path) -> None:
    written = 0
    for data, width in _sections(capture.read_text()):
        assert dump(data, width) == pyyaml_dump(data, width)
        written += write(data, width) is not None
    assert written >= 3  # name/target, management and existing.ssh at least, directly


def test_a_scaled_capture_is_written_directly() -> None:
    """Every section but the node groups, whose host lists (``gpu[01-08],sm[1-2]``) are few
    and not of the simple shapes, is written directly, and is PyYAML's text."""
    for data, width in _sections(_scaled(3)):
        written = write(data, width)
        if "nodes" in data:
            assert written is None
        else:
            assert written == pyyaml_dump(data, width), next(iter(data))


def test_a_quoted_guid_cable_is_pyyaml_row_alone() -> None:
    """ibsim_quirks has CAs with no host name: their cable ends are GUIDs, which PyYAML quotes
    (a hex int otherwise); that row is PyYAML's, the rest are written directly, same text."""
    data, width = _sections((FIXTURES / "ibnetdiscover__ibsim_quirks__1.txt").read_text())[3]
    written = write(data, width)
    assert written == pyyaml_dump(data, width)
    assert re.search(r"\{guid: '0x[0-9a-f]+', port: \d+\}", written or "")


ODD: list[Any] = [
    "true",
    "yes",
    "No",
    "null",
    "~",
    "1.5",
    "1e3",
    "0x1f",
    "012",
    "0b101",
    "1_000",
    "2001-12-14",
    "1:20",
    ".inf",
    "a b",
    "a: b",
    "a:b",
    "a,b",
    "-x",
    "#x",
    "&x",
    "*x",
    "!x",
    "'x",
    '"x',
    "%x",
    "@x",
    "`x",
    "x#y",
    "[x]",
    "{x}",
    "",
    " ",
    "é",
    "x\ny",
    "---",
    "...",
    "?x",
    "=",
    "<<",
    "a" * 150,
    True,
    False,
    None,
    1.5,
    [],
    {},
    [["x"]],
    -3,
]


@pytest.mark.parametrize("value", ODD, ids=repr)
def test_values_it_cannot_write_are_pyyaml_text(value: Any) -> None:
    """Every shape, as a mapping value, a key, a list item and a row value: the same text."""
    cases: list[tuple[dict[str, Any], int]] = [
        ({"k": value}, 100),
        ({"k": [value, "x"]}, 100),
        ({"k": [{"n": value, "m": 1}]}, 100),
        ({"k": [Row({"a": {"switch": value, "port": 1}, "w": "4x"}), Row({"a": 1})]}, 1000),
        ({"k": {"n": Row({"v": value})}}, 100),
    ]
    if isinstance(value, str):
        cases.append(({"k": {value: "PLACEHOLDER"}}, 100))
    for data, width in cases:
        assert dump(data, width) == pyyaml_dump(data, width)


def test_simple_names_are_written_directly_and_long_rows_are_not() -> None:
    data = {"s": [{"name": "c1-leaf01", "role": "leaf"}], "n": {"gpu01": "PLACEHOLDER", "p": 8}}
    assert write(data) == pyyaml_dump(data, 100)
    wide = {"k": {"r": Row({f"key{i}": "c1-spine01" for i in range(20)})}}
    assert write(wide) is None
    assert dump(wide) == pyyaml_dump(wide, 100)


def test_the_whole_spec_text_is_pyyaml_sections() -> None:
    """A scaled capture's spec text, comments aside, is the sections as PyYAML writes them
    (the cabling indented under ``fabric:``)."""
    text = _scaled(2)
    expected = []
    for data, width in _sections(text):
        dumped = pyyaml_dump(data, width)
        if width == 1000:
            dumped = "".join(f"  {line}\n" for line in dumped.splitlines())
        expected.append(dumped)
    imported = import_fabric(parse(text), "imported")
    lines = imported.text.splitlines(keepends=True)
    assert "".join(line for line in lines if not line.startswith("#")) == "".join(expected)
