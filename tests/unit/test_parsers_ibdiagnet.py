"""ibdiagnet parser, on every ibdiagnet fixture."""

import pytest

from fabric.parsers import ParseError
from fabric.parsers.ibdiagnet import parse
from fabric.state import REPO_ROOT

FIXTURES = REPO_ROOT / "tests" / "fixtures"


def read(name: str) -> str:
    return (FIXTURES / name).read_text()


@pytest.mark.parametrize(
    ("name", "summary"),
    [
        ("ibdiagnet__openairecipe__1.txt", (15, 3, 9, 3, 0)),
        ("ibdiagnet__openairecipe__2.txt", (24, 4, 16, 4, 0)),
        ("ibdiagnet__magnate3__1.txt", (None, None, None, None, None)),
    ],
)
def test_fabric_summary(name: str, summary: tuple[int | None, ...]) -> None:
    r = parse(read(name))
    assert (
        r.total_nodes,
        r.switches,
        r.channel_adapters,
        r.aggregation_nodes,
        r.routers,
    ) == summary


def test_stage_table() -> None:
    report = parse(read("ibdiagnet__openairecipe__1.txt"))
    assert [(s.stage, s.warnings, s.errors) for s in report.stages] == [
        ("Discovery", 3, 0),
        ("Virtualization", 0, 0),
        ("Routing", 0, 0),
    ]


def test_adaptive_routing_count() -> None:
    assert parse(read("ibdiagnet__openairecipe__1.txt")).adaptive_routing_switches == 3


def test_sharp_counts_kept() -> None:
    counts = parse(read("ibdiagnet__openairecipe__2.txt")).counts
    assert (counts["Unique job IDs"], counts["Number of LL aggregation trees"]) == (1024, 2)


def test_info_messages_kept() -> None:
    assert parse(read("ibdiagnet__openairecipe__2.txt")).info == [
        "SHARP check trees finished successfully"
    ]


def test_sm_report() -> None:
    sm = parse(read("ibdiagnet__magnate3__1.txt")).subnet_managers[0]
    assert (sm.role, sm.lid, sm.guid, sm.device_id, sm.priority) == (
        "master",
        4,
        "0x08c0eb0300f6fc26",
        54000,
        15,
    )


@pytest.mark.parametrize(
    "name",
    [
        "ibdiagnet__magnate3__1.txt",
        "ibdiagnet__openairecipe__1.txt",
        "ibdiagnet__openairecipe__2.txt",
    ],
)
def test_no_errors_is_ok(name: str) -> None:
    report = parse(read(name))
    assert (report.ok, report.total_errors) == (True, 0)


@pytest.mark.parametrize("text", [read("ibstat__gpud__1.txt"), read("mlxconfig__skyao__1.txt"), ""])
def test_not_ibdiagnet_raises_parse_error(text: str) -> None:
    with pytest.raises(ParseError, match="^ibdiagnet: "):
        parse(text)


def test_console_summary_is_what_parse_reads() -> None:
    """The check hands ``parse`` the console's closing summary: on a real console tail it is
    the text from ``Fabric Summary`` on, and its stage table comes through whole."""
    from fabric.parsers.ibdiagnet import console_summary

    text = read("ibdiagnet__openairecipe__1.txt")
    summary = console_summary(text)
    assert summary.splitlines()[0] == "Fabric Summary"
    stages = parse(summary).stages
    assert [(s.stage, s.warnings, s.errors) for s in stages] == [
        ("Discovery", 3, 0),
        ("Virtualization", 0, 0),
        ("Routing", 0, 0),
    ]
    # a summary without a stage table (the --sharp excerpt): the check calls that a harness
    # error, never a pass
    assert parse(console_summary(read("ibdiagnet__openairecipe__2.txt"))).stages == []
