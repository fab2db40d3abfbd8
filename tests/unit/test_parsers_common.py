"""Shared parser helpers."""

import pytest

from fabric.parsers.common import (
    ParseError,
    normalize_guid,
    normalize_link_layer,
    normalize_phys_state,
    normalize_state,
    parse_rate,
    speed_from_lane_gbps,
)


@pytest.mark.parametrize(
    ("text", "rate"),
    [
        ("400 Gb/sec (4X NDR)", (400, "4X", "NDR")),
        ("10 Gb/sec (1X QDR)", (10, "1X", "QDR")),
        ("200 Gb/sec (2X NDR)", (200, "2X", "NDR")),
        ("200", (200, None, None)),
    ],
)
def test_parse_rate(text: str, rate: tuple[object, ...]) -> None:
    parsed = parse_rate(text)
    assert parsed is not None and (parsed.rate_gbps, parsed.width, parsed.speed) == rate


@pytest.mark.parametrize(
    ("text", "state"),
    [
        ("4: ACTIVE", "Active"),
        ("1: DOWN", "Down"),
        ("PORT_ACTIVE (4)", "Active"),
        ("PORT_DOWN (1)", "Down"),
        ("Initializing", "Initializing"),
        ("Active", "Active"),
    ],
)
def test_normalize_state(text: str, state: str) -> None:
    assert normalize_state(text) == state


@pytest.mark.parametrize(
    ("text", "state"),
    [
        ("5: LinkUp", "LinkUp"),
        ("3: Disabled", "Disabled"),
        ("LINK_UP (5)", "LinkUp"),
        ("DISABLED (3)", "Disabled"),
        ("Polling", "Polling"),
    ],
)
def test_normalize_phys_state(text: str, state: str) -> None:
    assert normalize_phys_state(text) == state


@pytest.mark.parametrize(
    ("text", "layer"),
    [("IB", "InfiniBand"), ("InfiniBand", "InfiniBand"), ("Ethernet", "Ethernet")],
)
def test_normalize_link_layer(text: str, layer: str) -> None:
    assert normalize_link_layer(text) == layer


@pytest.mark.parametrize(
    ("text", "guid"),
    [
        ("0002:c903:004b:feee", "0x0002c903004bfeee"),
        ("0x100001", "0x0000000000100001"),
        ("0x58a2e10300a7820e", "0x58a2e10300a7820e"),
    ],
)
def test_normalize_guid(text: str, guid: str) -> None:
    assert normalize_guid(text) == guid


@pytest.mark.parametrize(
    ("lane", "speed"),
    [(2.5, "SDR"), (25.78125, "EDR"), (53.125, "HDR"), (106.25, "NDR"), (7.0, None)],
)
def test_speed_from_lane(lane: float, speed: str | None) -> None:
    assert speed_from_lane_gbps(lane) == speed


def test_parse_error_names_tool_line_and_expectation() -> None:
    err = ParseError("ibstat", 3, "'CA <name>'", "garbage")
    assert (str(err), isinstance(err, ValueError)) == (
        "ibstat: line 3: expected 'CA <name>', got 'garbage'",
        True,
    )
