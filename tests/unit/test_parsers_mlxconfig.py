"""mlxconfig parser, on every mlxconfig fixture."""

from pathlib import Path

import pytest

from fabric.parsers import ParseError
from fabric.parsers.mlxconfig import parse

FIXTURES = Path(__file__).parents[1] / "fixtures"


def read(name: str) -> str:
    return (FIXTURES / name).read_text()


@pytest.mark.parametrize(
    ("name", "device_type", "columns", "rows"),
    [
        ("mlxconfig__magnate3__1.txt", "ConnectX6", ["Next Boot", "New"], 2),
        ("mlxconfig__magnate3__2.txt", None, [], 7),
        ("mlxconfig__skyao__1.txt", "ConnectX3Pro", ["Next Boot"], 28),
    ],
)
def test_header_and_rows(name: str, device_type: str | None, columns: list[str], rows: int) -> None:
    report = parse(read(name))
    assert (report.device_type, report.columns, len(report.settings)) == (
        device_type,
        columns,
        rows,
    )


@pytest.mark.parametrize(
    ("name", "setting", "label", "code"),
    [
        ("mlxconfig__magnate3__1.txt", "SRIOV_EN", "True", 1),
        ("mlxconfig__magnate3__1.txt", "NUM_OF_VFS", None, 2),
        ("mlxconfig__magnate3__2.txt", "LINK_TYPE_P1", "IB", 1),
        ("mlxconfig__magnate3__2.txt", "KEEP_IB_LINK_UP_P1", "False", 0),
        ("mlxconfig__skyao__1.txt", "LINK_TYPE_P2", "ETH", 2),
        ("mlxconfig__skyao__1.txt", "XFI_MODE_P1", "_10G", 0),
        ("mlxconfig__skyao__1.txt", "STEER_FORCE_VLAN", "False", 0),
    ],
)
def test_last_column_value(name: str, setting: str, label: str | None, code: int) -> None:
    value = parse(read(name)).value(setting)
    assert value is not None and (value.label, value.code) == (label, code)


def test_set_table_keeps_next_boot_column() -> None:
    setting = parse(read("mlxconfig__magnate3__1.txt")).settings[0]
    assert [v.raw for v in setting.values] == ["False(0)", "True(1)"]


def test_device_description() -> None:
    report = parse(read("mlxconfig__magnate3__1.txt"))
    assert (report.name, report.device) == ("MCX654105A-HCA_Ax", "b1:00.0")


@pytest.mark.parametrize(
    "text", [read("ibstat__gpud__1.txt"), read("fi_info__perfstudy__1.txt"), ""]
)
def test_not_mlxconfig_raises_parse_error(text: str) -> None:
    with pytest.raises(ParseError, match="^mlxconfig: "):
        parse(text)
