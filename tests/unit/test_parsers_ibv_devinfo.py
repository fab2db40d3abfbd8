"""ibv_devinfo parser (plain and -v), on every ibv_devinfo fixture."""

import pytest

from fabric.parsers import ParseError
from fabric.parsers.ibv_devinfo import parse
from fabric.state import REPO_ROOT

FIXTURES = REPO_ROOT / "tests" / "fixtures"


def read(name: str) -> str:
    return (FIXTURES / name).read_text()


@pytest.mark.parametrize(
    ("name", "verbose", "devices"),
    [
        ("ibv_devinfo__chestergillon__1.txt", False, 1),
        ("ibv_devinfo__deepep38__1.txt", False, 1),
        ("ibv_devinfo__deepep55__1.txt", False, 1),
        ("ibv_devinfo__magnate3__1.txt", False, 8),
        ("ibv_devinfo_v__magnate3__1.txt", True, 3),
        ("ibv_devinfo_v__magnate3__2.txt", True, 1),
    ],
)
def test_verbose_detected_and_devices_counted(name: str, verbose: bool, devices: int) -> None:
    report = parse(read(name))
    assert (report.verbose, len(report.devices)) == (verbose, devices)


@pytest.mark.parametrize(
    ("name", "hca", "expected"),
    [
        (
            "ibv_devinfo__chestergillon__1.txt",
            "mlx4_0",
            {
                "fw_ver": "2.9.1200",
                "vendor_part_id": 26428,
                "node_guid": "0x0002c903004bfeee",
                "phys_port_cnt": 2,
            },
        ),
        (
            "ibv_devinfo__deepep38__1.txt",
            "mlx5_2",
            {"fw_ver": "28.42.1000", "board_id": "MT_0000000838", "vendor_part_id": 4129},
        ),
        (
            "ibv_devinfo__deepep55__1.txt",
            "mlx5_3",
            {"sys_image_guid": "0x946dae0300f00b6a", "vendor_part_id": 4126},
        ),
        (
            "ibv_devinfo__magnate3__1.txt",
            "mlx5_5",
            {"fw_ver": "20.30.1004", "vendor_part_id": 4123},
        ),
        ("ibv_devinfo_v__magnate3__1.txt", "mlx5_2", {"vendor_part_id": 4119, "hw_ver": "0x0"}),
        ("ibv_devinfo_v__magnate3__2.txt", "rxe0", {"vendor_id": "0x0000", "board_id": None}),
    ],
)
def test_device_fields(name: str, hca: str, expected: dict[str, object]) -> None:
    device = next(d for d in parse(read(name)).devices if d.hca_id == hca).model_dump()
    assert {key: device[key] for key in expected} == expected


@pytest.mark.parametrize(
    ("name", "hca", "port", "expected"),
    [
        (
            "ibv_devinfo__chestergillon__1.txt",
            "mlx4_0",
            2,
            {"state": "Active", "active_mtu": 4096, "link_layer": "Ethernet"},
        ),
        ("ibv_devinfo__deepep38__1.txt", "mlx5_2", 1, {"active_mtu": 4096, "sm_lid": 0}),
        (
            "ibv_devinfo__deepep55__1.txt",
            "mlx5_3",
            1,
            {"sm_lid": 1, "port_lid": 1690, "link_layer": "InfiniBand"},
        ),
        ("ibv_devinfo__magnate3__1.txt", "mlx5_6", 1, {"state": "Down", "active_mtu": 1024}),
        ("ibv_devinfo__magnate3__1.txt", "mlx5_5", 1, {"state": "Active", "port_lid": 18}),
        (
            "ibv_devinfo_v__magnate3__1.txt",
            "mlx5_0",
            1,
            {"physical_state": "Disabled", "active_width": "4X", "active_speed_gbps": 10.0},
        ),
        (
            "ibv_devinfo_v__magnate3__1.txt",
            "mlx5_2",
            1,
            {"physical_state": "LinkUp", "active_speed_gbps": 25.0},
        ),
        (
            "ibv_devinfo_v__magnate3__2.txt",
            "rxe0",
            1,
            {"active_width": "1X", "active_speed_gbps": 2.5, "physical_state": "LinkUp"},
        ),
    ],
)
def test_port_fields(name: str, hca: str, port: int, expected: dict[str, object]) -> None:
    device = next(d for d in parse(read(name)).devices if d.hca_id == hca)
    data = next(p for p in device.ports if p.port == port).model_dump()
    assert {key: data[key] for key in expected} == expected


@pytest.mark.parametrize(
    ("name", "hca", "index", "gid"),
    [
        ("ibv_devinfo_v__magnate3__1.txt", "mlx5_2", 3, "0000:0000:0000:0000:0000:ffff:ac11:f22f"),
        ("ibv_devinfo_v__magnate3__2.txt", "rxe0", 1, "0000:0000:0000:0000:0000:ffff:0a0b:0bfb"),
    ],
)
def test_verbose_gids(name: str, hca: str, index: int, gid: str) -> None:
    device = next(d for d in parse(read(name)).devices if d.hca_id == hca)
    assert device.ports[0].gids[index] == gid


def test_verbose_device_attributes_kept() -> None:
    device = parse(read("ibv_devinfo_v__magnate3__2.txt")).devices[0]
    assert device.attributes["max_qp"] == "65536"


@pytest.mark.parametrize("text", [read("ibstat__gpud__1.txt"), read("ibstatus__gpud__1.txt"), ""])
def test_not_ibv_devinfo_raises_parse_error(text: str) -> None:
    with pytest.raises(ParseError, match="^ibv_devinfo: "):
        parse(text)
