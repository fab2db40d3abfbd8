"""saquery -s and smpquery nodeinfo/nodedesc parsers, on real output captured from ibsim with a
switch's SM (OpenSM attached to leaf01's port 0) as MASTER and sm2's OpenSM as STANDBY
(tests/fixtures/SOURCES.md, "Subnet managers in every mode")."""

import pytest

from fabric.parsers import PARSERS, ParseError
from fabric.parsers.saquery import parse as parse_saquery
from fabric.parsers.smpquery import NodeDescReport, NodeInfoReport, PortInfoReport, parse
from fabric.state import REPO_ROOT

FIXTURES = REPO_ROOT / "tests" / "fixtures"


def read(name: str) -> str:
    return (FIXTURES / name).read_text()


def test_saquery_lists_the_switch_sm_and_the_standby() -> None:
    report = parse_saquery(read("saquery__ibsim_smmodes__1.txt"))
    assert report.ok and report.sm_lids == [1, 13]
    switch, standby = report.ports
    assert (switch.port, switch.capability_mask, switch.master_sm_lid) == (0, 0xC04A, 1)
    assert (standby.port, standby.capability_mask, standby.is_sm) == (1, 0x50C04A, True)


def test_saquery_without_sa_is_a_typed_failure() -> None:
    report = parse_saquery(read("saquery__ibsim_smmodes__2.txt"))
    assert (report.ok, report.ports) == (False, [])
    assert report.reason is not None and "Failed to bind to the SA" in report.reason


def test_saquery_registered() -> None:
    assert PARSERS["saquery"] is parse_saquery


@pytest.mark.parametrize("text", ["", "sminfo: sm lid 1 sm guid 0x1\n"])
def test_saquery_other_text_raises_parse_error(text: str) -> None:
    with pytest.raises(ParseError):
        parse_saquery(text)


def test_saquery_record_without_lid_raises_parse_error() -> None:
    text = read("saquery__ibsim_smmodes__1.txt").replace("EndPortLid..............13\n", "")
    with pytest.raises(ParseError, match="EndPortLid"):
        parse_saquery(text)


@pytest.mark.parametrize(
    ("n", "expected"),
    [
        (1, ("Switch", 64, "0x0002c90301000000", "0x0002c90301000000")),
        (3, ("Channel Adapter", 1, "0x0002c90302000024", "0x0002c90302000025")),
    ],
)
def test_nodeinfo(n: int, expected: tuple[object, ...]) -> None:
    report = parse(read(f"smpquery__ibsim_smmodes__{n}.txt"))
    assert isinstance(report, NodeInfoReport) and report.ok
    assert (report.node_type, report.ports, report.node_guid, report.port_guid) == expected
    assert report.where == f"Lid {1 if n == 1 else 13}"


@pytest.mark.parametrize(("n", "desc"), [(2, "leaf01"), (4, "sm2 mlx5_0")])
def test_nodedesc(n: int, desc: str) -> None:
    report = parse(read(f"smpquery__ibsim_smmodes__{n}.txt"))
    assert isinstance(report, NodeDescReport) and (report.ok, report.description) == (True, desc)


@pytest.mark.parametrize(("n", "kind"), [(5, NodeDescReport), (6, NodeInfoReport)])
def test_failed_node_query_is_a_typed_failure_of_its_kind(n: int, kind: type) -> None:
    report = parse(read(f"smpquery__ibsim_smmodes__{n}.txt"))
    assert isinstance(report, kind) and not report.ok
    assert report.reason is not None and "node info query failed" in report.reason


def test_nodeinfo_cut_short_is_named() -> None:
    text = read("smpquery__ibsim_smmodes__3.txt").split("PortGuid")[0]
    report = parse(text)
    assert isinstance(report, NodeInfoReport)
    assert report.reason == (
        "smpquery: no PortGuid line (NodeInfo always has one): the output was cut short"
    )


def test_portinfo_still_parses_as_portinfo() -> None:
    assert isinstance(parse(read("smpquery__ibsim_lab__2.txt")), PortInfoReport)


def test_saquery_whose_sa_did_not_answer_is_a_failed_report_not_unreadable() -> None:
    text = (FIXTURES / "saquery__ibsim_satimeout__1.txt").read_text()
    report = parse_saquery(text)
    assert not report.ok
    assert report.reason == "Query SA failed: Connection timed out"
    assert report.sm_lids == []
