"""ibping parser, on every ibping fixture (captured from ibsim)."""

import pytest

from fabric.parsers import ParseError
from fabric.parsers.ibping import parse
from fabric.state import REPO_ROOT

FIXTURES = REPO_ROOT / "tests" / "fixtures"


def read(name: str) -> str:
    return (FIXTURES / name).read_text()


@pytest.mark.parametrize(
    ("name", "stats"),
    [
        ("ibping__ibsimparse__1.txt", ("vm.(none)", "Lid 5", 5, 5, 0, 0.016, 0.029, 0.050)),
        ("ibping__ibsimparse__2.txt", ("vm.(none)", "Lid 5", 3, 3, 0, 0.020, 0.126, 0.323)),
        ("ibping__ibsimparse__3.txt", (None, "Lid 4", 3, 0, 100, 0.0, 0.0, 0.0)),
        ("ibping__ibsim_lab__1.txt", ("gpu06.(none)", "Lid 10", 1, 1, 0, 0.033, 0.033, 0.033)),
        ("ibping__ibsim_lab__2.txt", (None, "Lid 10", 1, 0, 100, 0.0, 0.0, 0.0)),
    ],
)
def test_statistics(name: str, stats: tuple[object, ...]) -> None:
    r = parse(read(name))
    assert (
        r.host,
        r.destination,
        r.transmitted,
        r.received,
        r.loss_percent,
        r.rtt_min_ms,
        r.rtt_avg_ms,
        r.rtt_max_ms,
    ) == stats


@pytest.mark.parametrize(
    ("name", "times"),
    [
        ("ibping__ibsimparse__1.txt", [0.031, 0.016, 0.022, 0.050, 0.026]),
        ("ibping__ibsimparse__2.txt", [0.035, 0.323, 0.020]),
    ],
)
def test_pongs(name: str, times: list[float]) -> None:
    assert [p.time_ms for p in parse(read(name)).pongs] == times


def test_answered_ping_is_ok() -> None:
    assert parse(read("ibping__ibsimparse__1.txt")).ok


def test_flood_mode_prints_no_pongs_and_its_reply_counts() -> None:
    """``ibping -f -c 1`` (what the check runs: no 1 s pause after the echo)."""
    report = parse(read("ibping__ibsim_lab__1.txt"))
    assert (report.ok, report.pongs, report.answered) == (True, [], 1)
    assert parse(read("ibping__ibsimparse__1.txt")).answered == 5


def test_flood_mode_without_a_server_is_a_failed_result() -> None:
    report = parse(read("ibping__ibsim_lab__2.txt"))
    assert (report.ok, report.answered, report.reason) == (False, 0, "100% packet loss")


def test_no_reply_is_a_failed_result() -> None:
    report = parse(read("ibping__ibsimparse__3.txt"))
    assert (report.ok, report.reason, len(report.warnings)) == (False, "100% packet loss", 3)


@pytest.mark.parametrize(
    "text", [read("ibstat__gpud__1.txt"), read("ibtracert__ibsimparse__1.txt"), ""]
)
def test_not_ibping_raises_parse_error(text: str) -> None:
    with pytest.raises(ParseError, match="^ibping: "):
        parse(text)
