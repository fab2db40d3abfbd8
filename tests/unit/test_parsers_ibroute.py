"""ibroute / dump_fts parser, on real output captured from ibsim + OpenSM
(``python -m bench.routing.capture_fixtures``)."""

import pytest

from fabric.parsers import ParseError
from fabric.parsers.ibroute import parse
from fabric.state import REPO_ROOT

FIXTURES = REPO_ROOT / "tests" / "fixtures"


def read(name: str) -> str:
    return (FIXTURES / name).read_text()


def test_dump_fts_every_switch_every_lid() -> None:
    report = parse(read("ibroute__ibsim_routing__5.txt"))
    assert report.ok
    assert sorted(s.name for s in report.switches) == [
        "leaf01",
        "leaf02",
        "leaf03",
        "leaf04",
        "spine01",
        "spine02",
    ]
    leaf04 = next(s for s in report.switches if s.name == "leaf04")
    assert leaf04.guid == "0x0002c90301000003"
    assert leaf04.address.startswith("DR path")
    assert leaf04.lid_range == (0, 0x16)
    assert len(leaf04.ports) == 22  # "22 valid lids dumped"
    assert leaf04.ports[5] == 0  # its own LID
    kind, guid, desc = leaf04.destinations[1]
    assert (kind, guid, desc) == ("Channel Adapter", "0x0002c90302000001", "gpu01 mlx5_0")


def test_ibroute_one_switch_by_lid() -> None:
    report = parse(read("ibroute__ibsim_routing__3.txt"))
    assert report.ok
    (leaf01,) = report.switches
    assert (leaf01.name, leaf01.address) == ("leaf01", "Lid 2")
    assert leaf01.ports[1] == 1 and leaf01.ports[2] == 0
    assert leaf01.destinations[2] == ("Switch", "0x0002c90301000000", "leaf01")


def test_a_ca_lid_is_the_tools_own_failure() -> None:
    report = parse(read("ibroute__ibsim_routing__4.txt"))
    assert not report.ok
    assert report.reason == "ibroute: iberror: failed: dump tables: not a switch"


def test_dump_fts_n_has_no_destinations() -> None:
    plain, named = (
        parse(read("ibroute__ibsim_routing__1.txt")),
        parse(read("ibroute__ibsim_routing__5.txt")),
    )
    assert plain.ok and all(t.destinations == {} for t in plain.switches)
    assert {t.guid: t.ports for t in plain.switches} == {t.guid: t.ports for t in named.switches}


def test_a_table_cut_before_its_count_is_not_ok() -> None:
    text = read("ibroute__ibsim_routing__1.txt")
    cut = "\n".join(text.splitlines()[:20]) + "\n"
    report = parse(cut)
    assert not report.ok
    assert "leaf04" in (report.reason or "") and "cut short" in (report.reason or "")


def test_other_text_is_a_parse_error() -> None:
    with pytest.raises(ParseError, match="^ibroute: line 1"):
        parse("Usage: something else\n")
