"""ethtool parser, on every ethtool fixture."""

import pytest

from fabric.parsers import ParseError
from fabric.parsers.ethtool import parse
from fabric.state import REPO_ROOT

FIXTURES = REPO_ROOT / "tests" / "fixtures"


def read(name: str) -> str:
    return (FIXTURES / name).read_text()


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("interface", "enp1s0np0"),
        ("speed_mbps", 100000),
        ("duplex", "Full"),
        ("lanes", None),
        ("port", "Direct Attach Copper"),
        ("auto_negotiation", True),
        ("link_detected", True),
        ("supported_fec_modes", ["None", "RS", "BASER"]),
        ("advertised_fec_modes", ["RS"]),
    ],
)
def test_settings(field: str, value: object) -> None:
    assert getattr(parse(read("ethtool__terrencemiao__1.txt")), field) == value


def test_link_modes_span_continuation_lines() -> None:
    modes = parse(read("ethtool__terrencemiao__1.txt")).supported_link_modes
    assert (len(modes), modes[0], modes[-1]) == (16, "1000baseKX/Full", "100000baseLR4_ER4/Full")


@pytest.mark.parametrize(
    "text", [read("ibstat__gpud__1.txt"), read("mlnx_qos__magnate3__1.txt"), ""]
)
def test_not_ethtool_raises_parse_error(text: str) -> None:
    with pytest.raises(ParseError, match="^ethtool: "):
        parse(text)
