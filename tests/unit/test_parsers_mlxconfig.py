"""mlxconfig parser, on every mlxconfig fixture."""

import pytest

from fabric.parsers import ParseError
from fabric.parsers.mlxconfig import diff, parse, value_matches
from fabric.state import REPO_ROOT

FIXTURES = REPO_ROOT / "tests" / "fixtures"


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


#: ``query -e`` in mlxconfig's layout (mstflint mlxcfg_ui.cpp's printf formats): ``*``/``RO``
#: row marks and the footer. Written for this test; no captured ``-e`` sample is in fixtures.
QUERY_E = """
Device #1:
----------

Device type:        ConnectX6
Device:             b1:00.0

Configurations:                                          Default         Current         Next Boot
         MEMIC_BAR_SIZE                                  0               0               0
*        SRIOV_EN                                        False(0)        False(0)        True(1)
*RO     NUM_OF_PF                                        1               2               2
The '*' shows parameters with next value different from default/current value.

The 'RO' shows parameters which are for read only and cannot be changed
"""


def test_query_e_marks_and_footer() -> None:
    report = parse(QUERY_E)
    assert report.columns == ["Default", "Current", "Next Boot"]
    marks = {s.name: (s.modified, s.read_only) for s in report.settings}
    assert marks == {
        "MEMIC_BAR_SIZE": (False, False),
        "SRIOV_EN": (True, False),
        "NUM_OF_PF": (True, True),
    }
    assert report.params("Current") == {
        "MEMIC_BAR_SIZE": "0",
        "SRIOV_EN": "False(0)",
        "NUM_OF_PF": "2",
    }
    assert report.reboot_pending() == ["SRIOV_EN"]
    assert report.reboot_pending(["NUM_OF_PF"]) == []


def test_params_and_reboot_pending_on_captured_output() -> None:
    grepped = parse(read("mlxconfig__magnate3__2.txt"))
    assert grepped.params()["LINK_TYPE_P1"] == "IB(1)"  # no header: each row's last cell
    set_table = parse(read("mlxconfig__magnate3__1.txt"))
    assert set_table.params("New") == {"SRIOV_EN": "True(1)", "NUM_OF_VFS": "2"}
    assert set_table.reboot_pending() == []  # no Current column: nothing can be said


def test_a_second_device_is_a_parse_error() -> None:
    text = read("mlxconfig__magnate3__1.txt")
    with pytest.raises(ParseError, match="one device"):
        parse(text + "\n" + text.replace("Device #1:", "Device #2:"))


@pytest.mark.parametrize(
    ("current", "wanted", "matches"),
    [
        ("IB(1)", "ib", True),
        ("IB(1)", 1, True),
        ("IB(1)", "ETH(2)", False),
        ("True(1)", True, True),
        ("False(0)", "on", False),
        ("16", "0x10", True),
        (None, "IB", False),
    ],
)
def test_value_matches(current: str | None, wanted: object, matches: bool) -> None:
    assert value_matches(current, wanted) is matches


def test_diff_keeps_unheld_and_unreported_settings() -> None:
    current = {"LINK_TYPE_P1": "IB(1)", "NUM_OF_VFS": "16"}
    assert diff(current, {"LINK_TYPE_P1": "IB", "NUM_OF_VFS": 8, "SRIOV_EN": True}) == {
        "NUM_OF_VFS": 8,
        "SRIOV_EN": True,
    }
