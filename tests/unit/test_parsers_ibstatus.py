"""ibstatus parser, on every ibstatus fixture."""

import pytest

from fabric.parsers import ParseError
from fabric.parsers.ibstatus import parse
from fabric.state import REPO_ROOT

FIXTURES = REPO_ROOT / "tests" / "fixtures"


def read(name: str) -> str:
    return (FIXTURES / name).read_text()


@pytest.mark.parametrize(
    ("name", "index", "expected"),
    [
        (
            "ibstatus__gpud__1.txt",
            0,
            {
                "device": "mlx5_0",
                "base_lid": 0x33BF,
                "sm_lid": 1,
                "rate_gbps": 200,
                "width": "4X",
                "speed": "HDR",
            },
        ),
        (
            "ibstatus__gpud__1.txt",
            8,
            {"device": "mlx5_8", "default_gid": None, "link_layer": "Ethernet", "speed": "QDR"},
        ),
        (
            "ibstatus__magnate3__1.txt",
            0,
            {"state": "Down", "physical_state": "Disabled", "rate_gbps": 40},
        ),
        ("ibstatus__magnate3__1.txt", 1, {"state": "Active", "rate_gbps": 100, "speed": "EDR"}),
        (
            "ibstatus__chestergillon__1.txt",
            1,
            {
                "port": 2,
                "width": "1X",
                "rate_gbps": 10,
                "default_gid": "fe80:0000:0000:0000:0202:c9ff:fe50:4175",
            },
        ),
    ],
)
def test_port_fields(name: str, index: int, expected: dict[str, object]) -> None:
    port = parse(read(name)).ports[index].model_dump()
    assert {key: port[key] for key in expected} == expected


@pytest.mark.parametrize(
    ("name", "count"),
    [
        ("ibstatus__gpud__1.txt", 9),
        ("ibstatus__magnate3__1.txt", 2),
        ("ibstatus__chestergillon__1.txt", 2),
    ],
)
def test_port_count(name: str, count: int) -> None:
    assert len(parse(read(name)).ports) == count


@pytest.mark.parametrize(
    "text", [read("ibstat__gpud__1.txt"), read("show_gids__microview__1.txt"), ""]
)
def test_not_ibstatus_raises_parse_error(text: str) -> None:
    with pytest.raises(ParseError, match="^ibstatus: "):
        parse(text)
