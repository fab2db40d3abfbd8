"""OpenSM log parser, on real logs of ``opensm -o -R ftree`` against ibsim
(``python -m bench.routing.capture_fixtures``)."""

import pytest

from fabric.parsers import ParseError
from fabric.parsers.opensm_log import parse
from fabric.state import REPO_ROOT

FIXTURES = REPO_ROOT / "tests" / "fixtures"


def read(name: str) -> str:
    return (FIXTURES / name).read_text()


def test_ftree_configured_the_switches() -> None:
    report = parse(read("opensm_log__ibsim_routing__1.txt"))
    assert report.ok and report.passes == 1 and report.version == "3.3.23"
    assert report.last is not None
    assert report.last.engine == "ftree"
    assert report.last.failed_engines == [] and report.last.reasons == []
    assert report.last.ended.level == 0x02


def test_ftree_fell_back_to_minhop() -> None:
    report = parse(read("opensm_log__ibsim_routing__2.txt"))
    last = report.last
    assert last is not None
    assert last.engine == "minhop"
    assert last.failed_engines == ["ftree"]
    assert [m.message for m in last.reasons] == ["Fabric topology is not a fat-tree"]
    assert "ERR AB26: CN port" in last.errors[0].message


def test_grepped_lines_and_the_last_pass_win() -> None:
    """A grep of the log parses; with two passes the last one is reported."""
    fell = read("opensm_log__ibsim_routing__2.txt")
    fine = read("opensm_log__ibsim_routing__1.txt")
    grepped = "".join(
        line + "\n" for line in (fell + fine).splitlines() if "tables configured" in line
    )
    report = parse(grepped)
    assert report.passes == 2 and report.last is not None and report.last.engine == "ftree"
    assert report.last.failed_engines == []


def test_other_text_is_a_parse_error() -> None:
    with pytest.raises(ParseError, match="^opensm_log: line 1"):
        parse("hello\n")
