"""perfquery parser, on every perfquery fixture."""

import pytest

from fabric.parsers import ParseError
from fabric.parsers.perfquery import parse
from fabric.state import REPO_ROOT

FIXTURES = REPO_ROOT / "tests" / "fixtures"


def read(name: str) -> str:
    return (FIXTURES / name).read_text()


@pytest.mark.parametrize(
    ("name", "header"),
    [
        ("perfquery__ibdiags16__1.txt", (True, 10, 1, "0x5300", "0x0000002")),
        ("perfquery__ibsimparse__1.txt", (False, 1, 1, "0x1200", None)),
        ("perfquery__ibsimparse__2.txt", (False, 2, 4, "0x1300", None)),
        ("perfquery__ibsimparse__3.txt", (True, 2, 4, "0x1300", "0x0000000")),
        ("perfquery__ibsimparse__4.txt", (False, 2, 255, "0x1300", None)),
    ],
)
def test_block_header(name: str, header: tuple[object, ...]) -> None:
    block = parse(read(name)).blocks[0]
    assert (block.extended, block.lid, block.port, block.cap_mask, block.cap_mask2) == header


@pytest.mark.parametrize(
    ("name", "field", "value"),
    [
        ("perfquery__ibdiags16__1.txt", "port_xmit_wait", 0),
        ("perfquery__ibdiags16__1.txt", "qp1_dropped", 0),
        ("perfquery__ibsimparse__1.txt", "port_xmit_data", 9360),
        ("perfquery__ibsimparse__1.txt", "port_rcv_pkts", 127),
        ("perfquery__ibsimparse__2.txt", "symbol_errors", 37),
        ("perfquery__ibsimparse__2.txt", "link_downed", 2),
        ("perfquery__ibsimparse__2.txt", "port_rcv_errors", 5),
        ("perfquery__ibsimparse__3.txt", "port_xmit_data", 576),
        ("perfquery__ibsimparse__3.txt", "symbol_errors", None),
        ("perfquery__ibsimparse__4.txt", "port_rcv_data", 26424),
    ],
)
def test_counter_fields(name: str, field: str, value: int | None) -> None:
    assert getattr(parse(read(name)).blocks[0], field) == value


@pytest.mark.parametrize(
    ("name", "counter", "value"),
    [
        ("perfquery__ibdiags16__1.txt", "PortUnicastXmitPkts", 0),
        ("perfquery__ibsimparse__3.txt", "PortMulticastRcvPkts", 0),
        ("perfquery__ibsimparse__1.txt", "CounterSelect2", 0),
    ],
)
def test_every_counter_in_dict(name: str, counter: str, value: int) -> None:
    assert parse(read(name)).blocks[0].counters[counter] == value


def test_unreachable_lid_is_a_failed_result() -> None:
    report = parse(read("perfquery__ibsimparse__5.txt"))
    assert (report.ok, report.reason) == (False, "perfquery: iberror: failed: classportinfo query")


@pytest.mark.parametrize("text", [read("ibstat__gpud__1.txt"), read("sysfs__gpud__2.txt"), ""])
def test_not_perfquery_raises_parse_error(text: str) -> None:
    with pytest.raises(ParseError, match="^perfquery: "):
        parse(text)
