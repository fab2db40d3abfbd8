"""mlnx_qos parser, on every mlnx_qos fixture."""

import pytest

from fabric.parsers import ParseError
from fabric.parsers.mlnx_qos import parse
from fabric.state import REPO_ROOT

FIXTURES = REPO_ROOT / "tests" / "fixtures"


def read(name: str) -> str:
    return (FIXTURES / name).read_text()


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        (
            "mlnx_qos__magnate3__1.txt",
            {
                "dcbx_mode": "OS controlled",
                "trust": "pcp",
                "cable_len": 7,
                "receive_buffer_bytes": [524160, 0, 0, 0, 0, 0, 0, 0],
            },
        ),
        (
            "mlnx_qos__magnate3__3.txt",
            {
                "trust": "pcp",
                "default_priority": None,
                "receive_buffer_bytes": [0, 156096, 0, 0, 0, 0, 0, 0],
            },
        ),
        ("mlnx_qos__netarbiter__1.txt", {"trust": "dscp", "receive_buffer_bytes": []}),
    ],
)
def test_status_fields(name: str, expected: dict[str, object]) -> None:
    data = parse(read(name)).model_dump()
    assert {key: data[key] for key in expected} == expected


@pytest.mark.parametrize(
    ("name", "enabled"),
    [
        ("mlnx_qos__magnate3__1.txt", []),
        ("mlnx_qos__magnate3__3.txt", []),
        ("mlnx_qos__netarbiter__1.txt", [3]),
    ],
)
def test_pfc_enabled_priorities(name: str, enabled: list[int]) -> None:
    report = parse(read(name))
    assert [p for p, on in report.pfc_enabled.items() if on] == enabled


@pytest.mark.parametrize(
    ("name", "buffers"),
    [
        ("mlnx_qos__magnate3__1.txt", [0] * 8),
        ("mlnx_qos__magnate3__3.txt", [1] * 8),
        ("mlnx_qos__netarbiter__1.txt", []),
    ],
)
def test_pfc_buffer_row(name: str, buffers: list[int]) -> None:
    assert list(parse(read(name)).pfc_buffer.values()) == buffers


def test_dscp_map_for_priority_3() -> None:
    report = parse(read("mlnx_qos__netarbiter__1.txt"))
    assert report.dscp2prio[3] == [31, 30, 29, 28, 27, 26, 25, 24]


@pytest.mark.parametrize(
    ("name", "tc", "limit", "priorities"),
    [
        ("mlnx_qos__magnate3__1.txt", 0, None, [1]),
        ("mlnx_qos__magnate3__3.txt", 1, 5.0, [1]),
        ("mlnx_qos__magnate3__3.txt", 7, 25.0, []),
        ("mlnx_qos__netarbiter__1.txt", 1, None, [0]),
    ],
)
def test_traffic_classes(name: str, tc: int, limit: float | None, priorities: list[int]) -> None:
    found = parse(read(name)).tcs[tc]
    assert (found.tc, found.ratelimit_gbps, found.tsa, found.priorities) == (
        tc,
        limit,
        "vendor",
        priorities,
    )


@pytest.mark.parametrize(
    "text", [read("ibstat__gpud__1.txt"), read("ethtool__terrencemiao__1.txt"), ""]
)
def test_not_mlnx_qos_raises_parse_error(text: str) -> None:
    with pytest.raises(ParseError, match="^mlnx_qos: "):
        parse(text)


def test_pfc_priorities_and_dscp_lookup() -> None:
    report = parse(read("mlnx_qos__netarbiter__1.txt"))
    assert report.pfc_priorities == [3]
    assert report.priority_of_dscp[26] == 3 and report.priority_of_dscp[48] == 6
    assert len(report.priority_of_dscp) == 64


def test_receive_buffer_with_max_buffer_size() -> None:
    """Newer MLNX_OFED ends the buffer list with ``max_buffer_size=N`` (line edited into a
    captured sample, not itself captured)."""
    text = read("mlnx_qos__magnate3__1.txt").replace(
        "Receive buffer size (bytes): 524160,0,0,0,0,0,0,0,",
        "Receive buffer size (bytes): 19872,220896,0,0,0,0,0,0,max_buffer_size=4151520",
    )
    report = parse(text)
    assert report.receive_buffer_bytes == [19872, 220896, 0, 0, 0, 0, 0, 0]
    assert report.max_buffer_bytes == 4151520
