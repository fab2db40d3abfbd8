"""The compiled topology.conf writer (``_ibnetdiscover_tree.c``) against its reference,
``fabric.topology.slurm.tree_conf(parse(text))``.

Both must give byte-identical text, or the compiled one declines (None) and the reference runs:
checked on every ibnetdiscover fixture, on the benchmark's rail-optimized fabrics (2,048 and
4,096 hosts here; every size in ``bench.topology``), on a three-level fabric, on names at the
edges of the naming, placement and host-list rules, and on seeded random mutations. The
reference alone raises errors, so refusals are the same with and without a C compiler.
"""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest
from test_ibnetdiscover_scan import TEXTS, mutate
from test_topology_three_level import graph as three_level_graph

from bench.topology.fabric import graph as bench_graph
from bench.topology.fabric import render_ibnetdiscover
from fabric.cli import main
from fabric.graph import LANE_GBPS, WIDTH_LANES, GraphError
from fabric.parsers import ParseError
from fabric.parsers.ibnetdiscover import parse, tree
from fabric.parsers.ibnetdiscover.fast import _parse_fast
from fabric.state import REPO_ROOT
from fabric.topology.slurm import tree_conf as reference_conf

LAB = TEXTS["ibnetdiscover__ibsim_lab__1.txt"]


def compiled(text: str) -> str | None:
    """The compiled writer, as ``tree.compiled_tree_conf`` calls it (fails when it was not built)."""
    assert tree._tree_compiled is not None, (
        "fabric/parsers/ibnetdiscover/_ibnetdiscover_tree.c was not built: scripts/bootstrap.sh "
        "installs gcc and builds it with `pip install -e .`; rerun `make bootstrap`"
    )
    return tree._tree_compiled(text, tree.WIDTHS, tree.SPEEDS)


def reference(text: str) -> str | Exception:
    """What the Python path gives: the text, or the error it refuses the input with."""
    try:
        return reference_conf(parse(text))
    except (ParseError, GraphError) as err:
        return err


def agree(text: str) -> bool:
    """Assert the compiled writer gives the reference's text or declines; True if it gave it."""
    got = compiled(text)
    if got is None:
        return False
    assert got == reference(text), text[-300:]
    return True


def test_the_compiled_writer_is_built() -> None:
    assert compiled(LAB) is not None


def test_widths_and_speeds_are_the_graphs() -> None:
    assert frozenset(WIDTH_LANES) == tree.WIDTHS
    assert frozenset(LANE_GBPS) == tree.SPEEDS


def test_every_fixture() -> None:
    """Same text on every fixture; it takes every one that the bulk parser takes and that has a
    Slurm tree (the others carry stderr lines or quotes, or no host on a switch)."""
    taken = [name for name, text in TEXTS.items() if text.isascii() and agree(text)]
    bulk = [
        name
        for name, text in TEXTS.items()
        if _parse_fast(text) is not None and isinstance(reference(text), str)
    ]
    assert taken == bulk
    assert len(taken) >= 5, taken


@pytest.mark.parametrize("hosts", [64, 2048, 4096])
def test_the_benchmark_fabrics(hosts: int) -> None:
    """Rail-optimized, 8 planes: hosts under their rail-0 leaf, each plane's spines merged."""
    text = render_ibnetdiscover(bench_graph(hosts))
    conf = compiled(text)
    assert conf is not None and conf == reference(text)
    assert "switches with the same children" in conf
    assert conf.count("Nodes=") == hosts // 32  # one rail-0 leaf per scalable unit


def test_a_three_level_fabric() -> None:
    text = render_ibnetdiscover(three_level_graph())
    conf = compiled(text)
    assert conf is not None and conf == reference(text)
    assert "SwitchName=superspine01 Switches=spine[01,05]" in conf


def rename(text: str, old: str, new: str) -> str:
    """Every description ``"old"`` (the node's header and the port lines naming it) as ``new``."""
    assert f'"{old}"' in text
    return text.replace(f'"{old}"', f'"{new}"')


#: (switch or CA description in the lab capture, new description, whether the compiled writer
#: takes it): names at the edges of _switch_names, natural_key, the Slurm name check, _ca and
#: hostlist.compress.
EDGES = [
    ("leaf01", "MF0;leaf01:MQM9700/U1", True),
    ("leaf01", "MF0;dir1:CS8500/L05/U1", True),
    ("leaf01", "MF0;a:b/U1/U2", True),
    ("leaf01", "MF0;a:b/c/d/U1", True),
    ("leaf01", "MF0;a:b/U", True),
    ("leaf01", "MF0;:b/U1", True),
    ("leaf01", "MF0;a;b:c/U1", True),
    ("leaf01", "MF0;a:b/L1/U1x", True),
    ("leaf01", "leaf02", True),  # two switches one name: made unique by GUID
    ("leaf01", "leaf1", True),
    ("leaf01", "leaf3", True),
    ("leaf01", "leaf2", False),  # equal to leaf02 in natural order: declined
    ("leaf02", "leaf001", False),
    ("spine01", "leaf01", True),
    ("leaf01", "leaf 01", True),  # a space: S-<guid>
    ("leaf01", " leaf01\t", True),
    ("leaf01", "\t", False),  # an empty name: declined
    ("leaf01", "", True),
    ("leaf01", "leaf=01", False),  # Slurm cannot take it: the reference refuses
    ("leaf01", "leaf[01]", False),
    ("leaf01", "9", True),
    ("leaf01", "0leaf", True),
    ("spine01", "spine" + "9" * 30, True),  # compared by value however long
    ("leaf01", "leaf" + "9" * 30, False),  # a host list number of more than 18 digits
    ("gpu01 mlx5_0", "gpu1 mlx5_0", True),  # unpadded beside padded
    ("gpu01 mlx5_0", "gpu001 mlx5_0", True),
    ("gpu05 mlx5_0", "gpu10 mlx5_0", True),
    ("gpu01 mlx5_0", "gpu02 mlx5_0", True),  # one host twice on a leaf
    ("gpu01 mlx5_0", "login mlx5_0", True),
    ("gpu01 mlx5_0", "login", True),
    ("gpu01 mlx5_0", "gpu1x mlx5_0", True),
    ("gpu01 mlx5_0", "a1b2c3 mlx5_0", True),
    ("gpu01 mlx5_0", "gpu" + "1" * 19 + " mlx5_0", False),  # more than 18 digits: declined
    ("gpu01 mlx5_0", "gpu" + "0" * 25 + "7 mlx5_0", True),
    ("gpu01 mlx5_0", "MT4129 ConnectX7 Mellanox Technologies", True),  # never set: no host
    ("gpu01 mlx5_0", "MT4129x mlx5_0", True),
    ("gpu01 mlx5_0", "MT mlx5_0", True),
    ("gpu01 mlx5_0", "Mellanox Aggregation Node", True),
    ("gpu01 mlx5_0", " ", True),
    ("gpu01 mlx5_0", "\x1cgpu01\x1fmlx5_0", True),  # str.split's whitespace
    ("gpu01 mlx5_0", "gpu01,x mlx5_0", True),
]


@pytest.mark.parametrize(("old", "new", "taken"), EDGES)
def test_names_at_the_rules_edges(old: str, new: str, taken: bool) -> None:
    assert agree(rename(LAB, old, new)) is taken


def test_every_host_renamed_away_is_refused_by_the_reference() -> None:
    text = re.sub(r'"(gpu|sm)\d+ mlx5_\d"', '"MT4129 ConnectX7"', LAB)
    assert compiled(text) is None
    assert isinstance(reference(text), GraphError)


def test_router_records_have_no_host() -> None:
    text = LAB.replace('Ca\t1 "H-0002c90302000010"', 'Rt\t1 "H-0002c90302000010"')
    assert text != LAB and agree(text)


def test_ids_in_other_spellings_are_declined() -> None:
    """Only ``X-`` + 16 lower-case hex digits is taken; the reference reads the rest."""
    text = LAB.replace("S-0002c90301000000", "S-0002C90301000000")
    assert compiled(text) is None and isinstance(reference(text), str)


def shuffle_names(text: str, rng: random.Random) -> str:
    """Rename one to three nodes (all of a description's occurrences) with names at the rules'
    edges, or move a port line to another record: texts the grammar still takes."""
    palette = [new for _, new, _ in EDGES] + ["leaf01", "spine1", "gpu3 mlx5_1", "x", "S-1"]
    for _ in range(rng.randint(1, 3)):
        descs = sorted(set(re.findall(r'# "([^"\n]*)"', text)))
        if rng.random() < 0.7 and descs:
            text = text.replace(f'"{rng.choice(descs)}"', f'"{rng.choice(palette)}"')
            continue
        lines = text.split("\n")
        ports = [i for i, line in enumerate(lines) if line.startswith("[")]
        if len(ports) > 1:
            i, j = rng.sample(ports, 2)
            lines.insert(j, lines.pop(i))
        text = "\n".join(lines)
    return text


def test_same_text_on_random_mutations() -> None:
    """3,000 seeded mutations of the fixtures, a small benchmark fabric and a three-level one:
    the same text as the reference, or declined; many of each."""
    rng = random.Random(20261124)
    texts = [
        *(t for t in TEXTS.values() if t.isascii()),
        render_ibnetdiscover(bench_graph(64)),
        render_ibnetdiscover(three_level_graph()),
    ]
    outcomes = {"taken": 0, "declined": 0}
    for n in range(3000):
        base = rng.choice(texts)
        text = mutate(base, rng) if n % 2 else shuffle_names(base, rng)
        if not text.isascii():
            continue
        outcomes["taken" if agree(text) else "declined"] += 1
    assert outcomes["taken"] > 500 and outcomes["declined"] > 500, outcomes


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["topology", *argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(
    "name", ["ibnetdiscover__ibsim_lab__1.txt", "ibnetdiscover__superbench__1.txt"]
)
def test_the_command_without_the_compiled_writer(
    name: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fallback install (no C compiler): the command prints the same text."""
    path = str(REPO_ROOT / "tests" / "fixtures" / name)
    with_writer = run(capsys, "--from-ibnetdiscover", path)
    monkeypatch.setattr(tree, "_tree_compiled", None)
    assert run(capsys, "--from-ibnetdiscover", path) == with_writer
    assert with_writer[0] == 0 and "SwitchName=" in with_writer[1]


@pytest.mark.parametrize(
    "text",
    ["", "#\n# Topology file: generated on x\n#\n", LAB[: LAB.index("[2]\t")], LAB + "\0"],
    ids=["empty", "comments-only", "cut", "binary"],
)
def test_refusals_are_the_same_without_the_compiled_writer(
    text: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    path = tmp_path / "capture.txt"
    path.write_text(text)
    refused = run(capsys, "--from-ibnetdiscover", str(path))
    monkeypatch.setattr(tree, "_tree_compiled", None)
    assert run(capsys, "--from-ibnetdiscover", str(path)) == refused
    assert refused[0] == 2 and refused[1] == "" and refused[2].count("\n") == 1, refused


def test_several_captures_in_one_file() -> None:
    """One capture per plane, joined as the hand-off writes them: two parts, said in a comment;
    the first capture cut after its last record's first port line is refused."""
    second = TEXTS["ibnetdiscover__ibtopotool__2.txt"]
    assert agree(LAB + second)
    assert "# this fabric has 2 disjoint parts" in compiled(LAB + second)
    last = LAB.rstrip("\n").rsplit("\n", 1)[0] + "\n"  # its last port line dropped
    assert compiled(last + second) is None
    assert isinstance(reference(last + second), ParseError)
