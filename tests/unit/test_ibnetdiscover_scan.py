"""The compiled ibnetdiscover scanner against the pure-Python reference (``_scan_regex``).

Both must accept exactly the same texts and return the same columns: checked on every
ibnetdiscover fixture (tests/fixtures/SOURCES.md) and on seeded random mutations of them.
"""

from __future__ import annotations

import random

import pytest

from fabric.parsers.ibnetdiscover import fast, parse
from fabric.parsers.ibnetdiscover.fast import _SPEEDS, _WIDTHS, _scan_regex
from fabric.parsers.ibnetdiscover.lines import _parse
from fabric.state import REPO_ROOT

FIXTURES = REPO_ROOT / "tests" / "fixtures"
TEXTS = {path.name: path.read_text() for path in sorted(FIXTURES.glob("ibnetdiscover__*.txt"))}

#: What a mutation inserts or substitutes: the characters and words the grammar turns on.
PALETTE = [
    '"',
    "[",
    "]",
    "(",
    ")",
    "#",
    " ",
    "\t",
    "\n",
    "\r",
    "0",
    "9",
    "a",
    "f",
    "g",
    "x",
    "X",
    "S-",
    "H-",
    "Switch ",
    "Ca\t",
    "Rt ",
    "lid ",
    " lmc 0 ",
    "4xNDR",
    "12xHDR",
    "4xFDR10",
    "4xFDR10A",
    "3xNDR",
    "4xXDR",
    "1xSDR",
    "vendid=",
    "Chassis ",
    "Non-Chassis Nodes",
    "é",
]


def scan_compiled():
    """The compiled scanner, as the parser calls it (fails when the install did not build it)."""
    assert fast._scan_compiled is not None, (
        "fabric/parsers/ibnetdiscover/_ibnetdiscover_scan.c was not built: scripts/bootstrap.sh "
        "installs gcc and builds it with `pip install -e .`; rerun `make bootstrap`"
    )
    return lambda text: fast._scan_compiled(text, _WIDTHS, _SPEEDS)


def mutate(text: str, rng: random.Random) -> str:
    """One to three random edits: insert, substitute or delete characters (half of them at a
    quote, bracket, blank or line boundary, where the grammar decides), or repeat, drop or swap
    whole lines."""
    for _ in range(rng.randint(1, 3)):
        lines = text.split("\n")
        op = rng.randrange(6)
        if op <= 2 and text:
            at = rng.randrange(len(text))
            if rng.random() < 0.5:
                marks = [
                    i
                    for i in range(max(0, at - 80), min(len(text), at + 80))
                    if text[i] in '"[]()# \t\n'
                ]
                at = rng.choice(marks) + rng.randint(0, 1) if marks else at
            piece = rng.choice(PALETTE)
            cut = (0, 1, rng.randint(1, 6))[op]
            text = text[:at] + ("" if op == 2 else piece) + text[at + cut :]
        elif op == 3:
            i = rng.randrange(len(lines))
            lines.insert(i, lines[i])
            text = "\n".join(lines)
        elif op == 4 and len(lines) > 1:
            del lines[rng.randrange(len(lines))]
            text = "\n".join(lines)
        elif len(lines) > 1:
            i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
            lines[i], lines[j] = lines[j], lines[i]
            text = "\n".join(lines)
    return text


#: Single lines around the grammar's edges, each appended to a fixture the bulk path accepts.
EDGE_LINES = [
    "",
    " ",
    "\t \t",
    "\r",
    " \r",
    "#",
    '# "quoted"',
    "vendid=0x2c9",
    'devid="x"',
    "Chassis 1",
    "Chassis",
    "Non-Chassis Nodes",
    "Non-Chassis",
    "caguid=0x1",
    "rtguid=",
    "switchguid=0x1(2)",
    "sysimgguid=0x1",
    'Switch\t36 "S-0002c903000e1000"\t\t# "sw" base port 0 lid 1 lmc 0',
    'Switch 36 "S-0002c903000e1000" # "sw"',
    'Switch36 "S-1" # "sw"',
    'Switch\t "S-1" # "sw"',
    'Switch\t36 "" # "sw"',
    'Switch\t36 "S-1" # ""',
    'Switch\t36 "S-1" "sw"',
    'Switch\t36 "S-1" # "sw',
    'Switch\t36 "S-1" # "sw" "x"',
    'Ca\t2 "H-1"\t\t# "gpu01 mlx5_0"',
    'Ca 2 "H-1"#"h"',
    'Cat 2 "H-1" # "h"',
    'Rt\t1 "R-1" # "router"',
    'rt\t1 "R-1" # "router"',
    "Switch",
    "Ca",
    "Rt",
    '[1]\t"H-1"[1](2c9)\t\t# "gpu01 mlx5_0" lid 4 4xHDR',
    '[1](2c9) "H-1"[1] # lid 3 lmc 0 "h" lid 4 4xHDR s=4 w=2',
    '[1]() "H-1"[1] # "h" lid 4 4xHDR',
    '[1](2c9 "H-1"[1] # "h" lid 4 4xHDR',
    '[1](xyz) "H-1"[1] # "h" lid 4 4xHDR',
    '[] "H-1"[1] # "h" lid 4 4xHDR',
    '[1 "H-1"[1] # "h" lid 4 4xHDR',
    '[1] ""[1] # "h" lid 4 4xHDR',
    '[1] "H-1" [1] # "h" lid 4 4xHDR',
    '[1] "H-1"[1] "h" lid 4 4xHDR',
    '[1] "H-1"[1] # lid 3 "h" lid 4 4xHDR',
    '[1] "H-1"[1] # lid 3 lmc 0"h" lid 4 4xHDR',
    '[1] "H-1"[1] # "h"lid 4 4xHDR',
    '[1] "H-1"[1] # "h" lid4 4xHDR',
    '[1] "H-1"[1] # "h" lid 4 4x HDR',
    '[1] "H-1"[1] # "h" lid 4 4xHDR "',
    '[1] "H-1"[1] # "h" lid 4 4xHDR\r',
    '[1] "H-1"[1] # "h" lid 4 4xHDR-',
    '[1] "H-1"[1] # "h" lid 4 4xHDRx',
    '[1] "H-1"[1] # "h" lid 4 4xHDR0',
    '[1] "H-1"[1] # "h" lid  4\t4xHDR',
    '[1] "H-1"[1] # "h" lid 4 4xHDR\t',
    '[1]\t"H-1"[1]#"h"\tlid\t4\t1xSDR',
]


@pytest.mark.parametrize("line", EDGE_LINES)
def test_same_columns_at_the_grammars_edges(line: str) -> None:
    base = TEXTS["ibnetdiscover__ibsim_lab__1.txt"].rstrip("\n")
    for text in (base + "\n" + line, base + "\n" + line + "\n", line, line + "\n" + base):
        assert scan_compiled()(text) == _scan_regex(text), repr(text[-200:])


def test_the_compiled_scanner_is_built() -> None:
    assert callable(scan_compiled())


@pytest.mark.parametrize("name", list(TEXTS))
def test_same_columns_on_every_fixture(name: str) -> None:
    assert scan_compiled()(TEXTS[name]) == _scan_regex(TEXTS[name])


def test_non_ascii_text_takes_the_regex_scanner() -> None:
    """The compiled scanner reads ASCII only; ``_scan`` hands anything else to the regex one."""
    text = TEXTS["ibnetdiscover__ibsim_lab__1.txt"].replace('# "gpu01 mlx5_0"', '# "gpü01 mlx5_0"')
    assert text != TEXTS["ibnetdiscover__ibsim_lab__1.txt"]
    with pytest.raises(ValueError, match="ASCII"):
        scan_compiled()(text)
    columns = fast._scan(text)
    assert columns is not None and columns == _scan_regex(text)
    assert "gpü01 mlx5_0" in columns[3]
    assert any(ca.host == "gpü01" for ca in parse(text).cas.values())


def test_fixtures_the_bulk_path_takes() -> None:
    """Most fixtures are plain output that both scanners accept (the rest carry stderr lines,
    quotes in descriptions or web-collapsed whitespace, and take the line parser)."""
    accepted = [
        name for name, text in TEXTS.items() if text.isascii() and _scan_regex(text) is not None
    ]
    assert len(accepted) >= 5
    for name in accepted:
        ids, headers, kinds, descs = scan_compiled()(TEXTS[name])
        assert len(headers) == len(kinds) == len(descs) and headers[0] == 0, name
        assert {kind for kind, _ in kinds} <= {"Switch", "Ca", "Rt"}


def test_same_result_on_random_mutations() -> None:
    """4,000 seeded mutations of the fixtures: the same columns, or both decline the text."""
    rng = random.Random(20261123)
    scan = scan_compiled()
    names = list(TEXTS)
    outcomes = {"accepted": 0, "declined": 0}
    for _ in range(4000):
        text = mutate(TEXTS[rng.choice(names)], rng)
        if not text.isascii():
            with pytest.raises(ValueError, match="ASCII"):
                scan(text)
            continue
        expected = _scan_regex(text)
        assert scan(text) == expected, text
        outcomes["accepted" if expected is not None else "declined"] += 1
    assert outcomes["accepted"] > 400 and outcomes["declined"] > 400, outcomes


@pytest.mark.parametrize("rate", ["4xNDR", "12xHDR", "4xFDR10", "1xSDR", "2xEDR", "8xXDR"])
def test_known_rates_are_accepted(rate: str) -> None:
    text = TEXTS["ibnetdiscover__ibsim_lab__1.txt"].replace("4xHDR", rate)
    assert _scan_regex(text) is not None
    assert scan_compiled()(text) == _scan_regex(text)


@pytest.mark.parametrize("rate", ["3xNDR", "4xFDR10A", "4xNDR1", "4xndr", "x4NDR", "4x", "04xNDR"])
def test_unknown_rates_are_declined(rate: str) -> None:
    text = TEXTS["ibnetdiscover__ibsim_lab__1.txt"].replace("4xHDR", rate)
    assert scan_compiled()(text) is None and _scan_regex(text) is None


def test_huge_port_count_is_an_int() -> None:
    text = TEXTS["ibnetdiscover__ibsim_lab__1.txt"]
    line = next(line for line in text.split("\n") if line.startswith("Switch"))
    count = line.split()[1]
    big = text.replace(line, line.replace(count, "0" + "9" * 40, 1), 1)
    _, _, kinds, _ = scan_compiled()(big)
    assert kinds == _scan_regex(big)[2]
    assert int("9" * 40) in {ports for _, ports in kinds}


@pytest.mark.parametrize("name", list(TEXTS))
def test_parse_without_the_compiled_scanner(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The fallback install (no C compiler): same graph as with it and as the line parser."""
    text = TEXTS[name]
    with_scanner = parse(text)
    monkeypatch.setattr(fast, "_scan_compiled", None)
    assert parse(text) == with_scanner == _parse(text)
