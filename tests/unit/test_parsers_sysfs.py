"""sysfs parser, on every sysfs fixture."""

import pytest

from fabric.parsers import ParseError
from fabric.parsers.sysfs import parse
from fabric.state import REPO_ROOT

FIXTURES = REPO_ROOT / "tests" / "fixtures"


def read(name: str) -> str:
    return (FIXTURES / name).read_text()


@pytest.mark.parametrize(
    ("device", "expected"),
    [
        (
            "mlx5_0",
            {
                "state": "Active",
                "physical_state": "LinkUp",
                "rate_gbps": 400,
                "width": "4X",
                "speed": "NDR",
                "link_layer": "InfiniBand",
            },
        ),
        (
            "mlx5_bond_0",
            {"rate_gbps": 200, "width": "2X", "speed": "NDR", "link_layer": "Ethernet"},
        ),
    ],
)
def test_port_state_files(device: str, expected: dict[str, object]) -> None:
    dev = next(d for d in parse(read("sysfs__gpud__1.txt")).devices if d.name == device)
    port = dev.ports[0].model_dump()
    assert {key: port[key] for key in expected} == expected


@pytest.mark.parametrize(
    ("device", "attribute", "value"),
    [
        ("mlx5_0", "fw_ver", "28.41.1000"),
        ("mlx5_bond_0", "hca_type", "MT41692"),
        ("mlx5_1", "board_id", "MT_0000000838"),
    ],
)
def test_device_attributes(device: str, attribute: str, value: str) -> None:
    dev = next(d for d in parse(read("sysfs__gpud__1.txt")).devices if d.name == device)
    assert dev.attributes[attribute] == value


def test_device_count() -> None:
    assert len(parse(read("sysfs__gpud__1.txt")).devices) == 9


@pytest.mark.parametrize(
    ("group", "counter", "value"),
    [
        ("counters", "port_rcv_data", 230539874932483),
        ("counters", "excessive_buffer_overrun_errors", 15),
        ("counters", "port_rcv_errors", 14),
        ("counters", "port_xmit_wait", 2489603687),
        ("hw_counters", "roce_adp_retrans", 3),
        ("hw_counters", "rx_write_requests", 3809045607),
    ],
)
def test_counters(group: str, counter: str, value: int) -> None:
    port = parse(read("sysfs__gpud__2.txt")).devices[0].ports[0]
    assert getattr(port, group)[counter] == value


@pytest.mark.parametrize(
    "text", [read("ibstat__gpud__1.txt"), read("perfquery__ibdiags16__1.txt"), ""]
)
def test_not_sysfs_raises_parse_error(text: str) -> None:
    with pytest.raises(ParseError, match="^sysfs: "):
        parse(text)
