"""show_gids parser, on every show_gids fixture."""

import pytest

from fabric.parsers import ParseError
from fabric.parsers.show_gids import parse
from fabric.state import REPO_ROOT

FIXTURES = REPO_ROOT / "tests" / "fixtures"


def read(name: str) -> str:
    return (FIXTURES / name).read_text()


@pytest.mark.parametrize(
    ("name", "rows", "found"),
    [("show_gids__magnate3__1.txt", 19, 19), ("show_gids__microview__1.txt", 16, None)],
)
def test_row_count_and_trailer(name: str, rows: int, found: int | None) -> None:
    report = parse(read(name))
    assert (len(report.gids), report.n_gids_found) == (rows, found)


@pytest.mark.parametrize(
    ("name", "device", "index", "expected"),
    [
        (
            "show_gids__magnate3__1.txt",
            "mlx5_3",
            3,
            {
                "gid": "0000:0000:0000:0000:0000:ffff:c0a8:f238",
                "ipv4": "192.168.242.56",
                "version": "v2",
                "netdev": "ens14f0",
            },
        ),
        (
            "show_gids__magnate3__1.txt",
            "mlx5_5",
            0,
            {
                "gid": "fe80:0000:0000:0000:08c0:eb03:00b6:a0b4",
                "ipv4": None,
                "version": "v1",
                "netdev": None,
            },
        ),
        (
            "show_gids__microview__1.txt",
            "mlx5_2",
            2,
            {"ipv4": "10.200.0.52", "version": "v1", "netdev": "ens2f0"},
        ),
        (
            "show_gids__microview__1.txt",
            "mlx5_5",
            1,
            {"gid": "fe80:0000:0000:0000:0ac0:ebff:fe15:3621", "netdev": "enp65s0f1np1"},
        ),
    ],
)
def test_row_fields(name: str, device: str, index: int, expected: dict[str, object]) -> None:
    row = next(g for g in parse(read(name)).gids if g.device == device and g.index == index)
    data = row.model_dump()
    assert {key: data[key] for key in expected} == expected


@pytest.mark.parametrize(
    "text", [read("ibstat__gpud__1.txt"), read("mlnx_qos__magnate3__1.txt"), ""]
)
def test_not_show_gids_raises_parse_error(text: str) -> None:
    with pytest.raises(ParseError, match="^show_gids: "):
        parse(text)
