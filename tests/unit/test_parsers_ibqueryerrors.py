"""ibqueryerrors parser, on real captures from ibsim (tests/fixtures/SOURCES.md)."""

from pathlib import Path

import pytest

from fabric.parsers import ParseError
from fabric.parsers.ibqueryerrors import parse

FIXTURES = Path(__file__).parents[1] / "fixtures"


def read(name: str) -> str:
    return (FIXTURES / name).read_text()


def test_errors_and_pma_failures() -> None:
    report = parse(read("ibqueryerrors__ibsimparse__1.txt"))
    assert (report.ok, report.complete, report.nodes_checked, report.ports_checked) == (
        True,
        True,
        6,
        20,
    )
    assert (report.bad_ports, report.pma_failures) == (3, 2)
    assert [(f.what, f.name, f.lid, f.port) for f in report.failures] == [
        ("classportinfo", "gpu02", 4, 1),
        ("IB_GSI_PORT_COUNTERS", "gpu02", 4, 1),
    ]
    gpu03, leaf01 = report.nodes
    assert (gpu03.name, gpu03.guid) == ("gpu03", None)
    assert [(p.guid, p.port, p.counters) for p in gpu03.ports] == [
        ("0x0000000000100005", 1, {"PortRcvErrors": 5})
    ]
    assert (leaf01.name, leaf01.guid) == ("leaf01", "0x0000000000200000")
    assert [(p.port, p.counters) for p in leaf01.ports] == [
        (None, {"SymbolErrorCounter": 37, "PortXmitDiscards": 6}),
        (2, {"PortXmitDiscards": 6}),
        (4, {"SymbolErrorCounter": 37}),
    ]


def test_healthy_run_lists_no_node() -> None:
    report = parse(read("ibqueryerrors__ibsimparse__3.txt"))
    assert (report.ok, report.complete, report.nodes, report.failures) == (True, True, [], [])
    assert (report.nodes_checked, report.ports_checked, report.bad_ports) == (6, 20, 0)


def test_default_thresholds_run() -> None:
    report = parse(read("ibqueryerrors__ibsimparse__4.txt"))
    assert [(n.name, [(p.port, p.counters) for p in n.ports]) for n in report.nodes] == [
        ("gpu04", [(1, {"SymbolErrorCounter": 4})]),
        (
            "leaf02",
            [
                (None, {"SymbolErrorCounter": 37, "LinkDownedCounter": 2}),
                (3, {"SymbolErrorCounter": 37, "LinkDownedCounter": 2}),
            ],
        ),
    ]


def test_tool_failure_without_an_sm() -> None:
    report = parse(read("ibqueryerrors__ibsimparse__2.txt"))
    assert (report.ok, report.reason) == (
        False,
        "Query SA failed: Connection timed out; sa call path_query failed",
    )


def test_run_cut_before_its_summary_is_not_ok() -> None:
    text = read("ibqueryerrors__ibsimparse__1.txt").split("\n## Summary")[0]
    report = parse(text)
    assert (report.ok, report.complete, len(report.nodes)) == (False, False, 2)
    assert report.reason == "ibqueryerrors: no summary: the run did not complete"


def test_not_ibqueryerrors_output() -> None:
    with pytest.raises(ParseError, match="^ibqueryerrors: line 1: expected"):
        parse(read("perfquery__ibsimparse__1.txt"))
