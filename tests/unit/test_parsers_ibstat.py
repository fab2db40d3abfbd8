"""ibstat parser, on every ibstat fixture."""

import pytest

from fabric.parsers import ParseError
from fabric.parsers.ibstat import parse
from fabric.state import REPO_ROOT

FIXTURES = REPO_ROOT / "tests" / "fixtures"


def read(name: str) -> str:
    return (FIXTURES / name).read_text()


@pytest.mark.parametrize(
    ("name", "count"),
    [
        ("ibstat__gpud__1.txt", 9),
        ("ibstat__gpud__3.txt", 9),
        ("ibstat__gpud__4.txt", 12),
        ("ibstat__gpud__5.txt", 12),
        ("ibstat__magnate3__1.txt", 1),
        ("ibstat__magnate3__2.txt", 1),
        ("ibstat__magnate3__4.txt", 1),
        ("ibstat__microview__1.txt", 1),
        ("ibstat__ibsimparse__1.txt", 1),
        ("ibstat__ibsimparse__2.txt", 1),
        ("ibstat__ibsimparse__3.txt", 1),
        ("ibstat__ibsimparse__4.txt", 1),
    ],
)
def test_device_count(name: str, count: int) -> None:
    assert len(parse(read(name)).devices) == count


@pytest.mark.parametrize(
    ("name", "device", "expected"),
    [
        (
            "ibstat__gpud__1.txt",
            "mlx5_0",
            {
                "state": "Active",
                "physical_state": "LinkUp",
                "rate_gbps": 400,
                "link_layer": "InfiniBand",
                "base_lid": 128,
                "sm_lid": 1,
            },
        ),
        (
            "ibstat__gpud__1.txt",
            "mlx5_bond_0",
            {"rate_gbps": 200, "link_layer": "Ethernet", "port_guid": "0x201d97fffe0056cf"},
        ),
        ("ibstat__gpud__3.txt", "mlx5_1", {"rate_gbps": 200, "base_lid": 1369, "sm_lid": 83}),
        (
            "ibstat__gpud__4.txt",
            "mlx5_11",
            {"state": "Down", "physical_state": "Disabled", "rate_gbps": 40},
        ),
        ("ibstat__gpud__5.txt", "mlx5_11", {"state": "Down", "physical_state": "Polling"}),
        (
            "ibstat__magnate3__1.txt",
            "mlx5_5",
            {"state": "Initializing", "base_lid": 65535, "sm_lid": 0},
        ),
        (
            "ibstat__magnate3__2.txt",
            "mlx5_6",
            {"state": "Down", "physical_state": "LinkUp", "port_guid": "0x1122334477667791"},
        ),
        (
            "ibstat__magnate3__4.txt",
            "mlx5_5",
            {"state": "Active", "base_lid": 12, "sm_lid": 4, "capability_mask": "0x2651e848"},
        ),
        (
            "ibstat__microview__1.txt",
            "mlx5_0",
            {"state": "Down", "physical_state": "Disabled", "link_layer": "Ethernet"},
        ),
        (
            "ibstat__ibsimparse__1.txt",
            "ibsim0",
            {"state": "Active", "rate_gbps": 104, "base_lid": 1, "link_layer": "InfiniBand"},
        ),
        ("ibstat__ibsimparse__2.txt", "ibsim0", {"rate_gbps": 26, "base_lid": 6}),
        ("ibstat__ibsimparse__3.txt", "ibsim0", {"state": "Down", "physical_state": "Polling"}),
        ("ibstat__ibsimparse__4.txt", "ibsim0", {"state": "Initializing", "sm_lid": 0}),
    ],
)
def test_port_fields(name: str, device: str, expected: dict[str, object]) -> None:
    dev = next(d for d in parse(read(name)).devices if d.name == device)
    port = dev.ports[0].model_dump()
    assert {key: port[key] for key in expected} == expected


@pytest.mark.parametrize(
    ("name", "device", "field", "value"),
    [
        ("ibstat__gpud__1.txt", "mlx5_0", "firmware", "28.41.1000"),
        ("ibstat__gpud__1.txt", "mlx5_bond_0", "type", "MT41692"),
        ("ibstat__gpud__3.txt", "mlx5_0", "system_image_guid", "0xb83fd20300b6eb16"),
        ("ibstat__gpud__4.txt", "mlx5_1", "type", "MT4125"),
        ("ibstat__magnate3__2.txt", "mlx5_6", "node_guid", "0x1122334477667790"),
        ("ibstat__microview__1.txt", "mlx5_0", "firmware", "28.42.1000"),
        ("ibstat__ibsimparse__1.txt", "ibsim0", "node_guid", "0x0000000000100000"),
    ],
)
def test_device_fields(name: str, device: str, field: str, value: str) -> None:
    dev = next(d for d in parse(read(name)).devices if d.name == device)
    assert getattr(dev, field) == value


def test_json_shape_is_stable() -> None:
    data = parse(read("ibstat__magnate3__4.txt")).model_dump(mode="json")
    device = data["devices"][0]
    assert (list(data)[0], list(device)[:4], list(device["ports"][0])[:7]) == (
        "devices",
        ["name", "type", "firmware", "ports"],
        ["port", "state", "physical_state", "rate_gbps", "link_layer", "base_lid", "sm_lid"],
    )


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("ibstat__magnate3__3.txt", "'ib1' IB device can't be found"),
        ("ibstat__ibsimparse__5.txt", "'mlx5_9' IB device can't be found"),
    ],
)
def test_ibpanic_is_a_failed_result(name: str, reason: str) -> None:
    report = parse(read(name))
    assert (report.ok, reason in (report.reason or ""), report.devices) == (False, True, [])


def test_healthy_output_is_ok() -> None:
    assert parse(read("ibstat__gpud__1.txt")).ok


@pytest.mark.parametrize(
    ("text", "line"),
    [
        (read("show_gids__magnate3__1.txt"), 1),
        (read("ibstatus__gpud__1.txt"), 1),
        ("", 0),
    ],
)
def test_not_ibstat_raises_parse_error(text: str, line: int) -> None:
    with pytest.raises(ParseError) as err:
        parse(text)
    assert (err.value.tool, err.value.line) == ("ibstat", line)


def test_output_cut_mid_port_raises_parse_error() -> None:
    head = "".join(read("ibstat__magnate3__4.txt").splitlines(keepends=True)[:10])
    with pytest.raises(ParseError, match="^ibstat: end of input: expected complete"):
        parse(head)
