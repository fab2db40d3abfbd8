"""ibv_rc_pingpong parser, on every ibv_rc_pingpong fixture."""

import pytest

from fabric.parsers import ParseError
from fabric.parsers.ibv_rc_pingpong import parse
from fabric.state import REPO_ROOT

FIXTURES = REPO_ROOT / "tests" / "fixtures"


def read(name: str) -> str:
    return (FIXTURES / name).read_text()


@pytest.mark.parametrize(
    ("name", "mbit", "usec"),
    [
        ("ibv_rc_pingpong__magnate3__1.txt", 348.46, 188.07),
        ("ibv_rc_pingpong__magnate3__2.txt", 9668.93, 6.78),
    ],
)
def test_throughput_and_latency(name: str, mbit: float, usec: float) -> None:
    report = parse(read(name))
    assert (report.ok, report.bytes, report.mbit_per_sec, report.usec_per_iter) == (
        True,
        8192000,
        mbit,
        usec,
    )


@pytest.mark.parametrize(
    ("name", "side", "qpn", "gid"),
    [
        ("ibv_rc_pingpong__magnate3__1.txt", "remote", 0x11, "::ffff:10.11.11.251"),
        ("ibv_rc_pingpong__magnate3__2.txt", "local", 0x1AD, "::ffff:10.22.116.220"),
        ("ibv_rc_pingpong__magnate3__4.txt", "local", 0x22, "fe80::6efe:54ff:fe3d:8a39"),
        ("ibv_rc_pingpong__magnate3__5.txt", "local", 0x1AA, "fe80::c670:bdff:feaa:1f09"),
        ("ibv_rc_pingpong__magnate3__6.txt", "local", 0x28, "fe80::6efe:54ff:fe3d:ba88"),
    ],
)
def test_endpoint(name: str, side: str, qpn: int, gid: str) -> None:
    endpoint = getattr(parse(read(name)), side)
    assert (endpoint.qpn, endpoint.gid) == (qpn, gid)


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        (
            "ibv_rc_pingpong__magnate3__4.txt",
            "Failed to modify QP to RTR; Couldn't connect to remote QP",
        ),
        ("ibv_rc_pingpong__magnate3__5.txt", "Couldn't connect to 10.22.116.221:7777"),
        (
            "ibv_rc_pingpong__magnate3__6.txt",
            "client read: No space left on device; Couldn't read remote address",
        ),
    ],
)
def test_tool_failure_is_a_failed_result(name: str, reason: str) -> None:
    report = parse(read(name))
    assert (report.ok, report.reason, report.mbit_per_sec) == (False, reason, None)


@pytest.mark.parametrize(
    "text", [read("ibstat__gpud__1.txt"), read("perftest__deepops__1.txt"), ""]
)
def test_not_rc_pingpong_raises_parse_error(text: str) -> None:
    with pytest.raises(ParseError, match="^ibv_rc_pingpong: "):
        parse(text)
