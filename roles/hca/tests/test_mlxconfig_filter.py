"""Unit tests of the hca role's mlxconfig filters, on real captured mlxconfig output.

The fixtures are the project's (``tests/fixtures/``, attribution in its SOURCES.md).
Run: ``pytest roles/hca/tests``.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

HERE = Path(__file__).parent
FIXTURES = HERE.parents[2] / "tests" / "fixtures"

_spec = importlib.util.spec_from_file_location(
    "hca_mlxconfig_filter", HERE.parent / "filter_plugins" / "mlxconfig.py"
)
mlx = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(mlx)


def read(name: str) -> str:
    return (FIXTURES / name).read_text()


# --- full query: ConnectX-3 Pro, single "Next Boot" column -------------------------------------


def test_full_query_reads_every_row():
    params = mlx.mlxconfig_params(read("mlxconfig__skyao__1.txt"))
    assert len(params) == 28
    assert params["LINK_TYPE_P1"] == "ETH(2)"
    assert params["NUM_OF_VFS"] == "16"
    assert params["XFI_MODE_P1"] == "_10G(0)"


def test_full_query_last_row_without_trailing_spaces():
    params = mlx.mlxconfig_params(read("mlxconfig__skyao__1.txt"))
    assert params["STEER_FORCE_VLAN"] == "False(0)"


# --- set confirmation: "Next Boot" and "New" columns ------------------------------------------


def test_set_table_params_by_column():
    text = read("mlxconfig__magnate3__1.txt")
    assert mlx.mlxconfig_params(text) == {"SRIOV_EN": "False(0)", "NUM_OF_VFS": "0"}
    assert mlx.mlxconfig_params(text, column="New") == {"SRIOV_EN": "True(1)", "NUM_OF_VFS": "2"}


# --- grep-filtered query: rows only --------------------------------------------------------------


def test_filtered_query_rows_only():
    params = mlx.mlxconfig_params(read("mlxconfig__magnate3__2.txt"))
    assert params["LINK_TYPE_P1"] == "IB(1)"
    assert params["KEEP_ETH_LINK_UP_P1"] == "True(1)"
    assert len(params) == 7


# --- comparison ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("current", "wanted", "matches"),
    [
        ("IB(1)", "IB", True),
        ("IB(1)", "ib", True),
        ("IB(1)", 1, True),
        ("IB(1)", "IB(1)", True),
        ("IB(1)", "ETH", False),
        ("IB(1)", 2, False),
        ("True(1)", "True", True),
        ("True(1)", True, True),
        ("True(1)", "yes", True),
        ("False(0)", False, True),
        ("False(0)", "True", False),
        ("16", 16, True),
        ("16", "0x10", True),
        ("16", 8, False),
        ("_10G(0)", "_10G", True),
        (None, "IB", False),
    ],
)
def test_value_matches(current, wanted, matches):
    assert mlx.FilterModule().filters()["mlxconfig_value_matches"](current, wanted) is matches


def test_diff_on_connectx6_filtered_query():
    current = mlx.mlxconfig_params(read("mlxconfig__magnate3__2.txt"))
    wanted = {"LINK_TYPE_P1": "IB", "KEEP_ETH_LINK_UP_P1": "True", "KEEP_IB_LINK_UP_P1": True}
    assert mlx.mlxconfig_diff(current, wanted) == {"KEEP_IB_LINK_UP_P1": True}


def test_diff_on_connectx3_query_wants_ib_and_fewer_vfs():
    current = mlx.mlxconfig_params(read("mlxconfig__skyao__1.txt"))
    wanted = {"LINK_TYPE_P1": "IB", "SRIOV_EN": "True", "NUM_OF_VFS": 8}
    assert mlx.mlxconfig_diff(current, wanted) == {"LINK_TYPE_P1": "IB", "NUM_OF_VFS": 8}


def test_diff_reports_parameter_the_device_lacks():
    current = mlx.mlxconfig_params(read("mlxconfig__skyao__1.txt"))
    assert mlx.mlxconfig_diff(current, {"ADVANCED_PCI_SETTINGS": "True"}) == {
        "ADVANCED_PCI_SETTINGS": "True"
    }


def test_diff_after_set_is_empty_on_new_column():
    new = mlx.mlxconfig_params(read("mlxconfig__magnate3__1.txt"), column="New")
    assert mlx.mlxconfig_diff(new, {"SRIOV_EN": "True", "NUM_OF_VFS": 2}) == {}


def test_set_args():
    assert mlx.mlxconfig_set_args({"SRIOV_EN": True, "NUM_OF_VFS": 8, "LINK_TYPE_P1": "IB"}) == [
        "SRIOV_EN=True",
        "NUM_OF_VFS=8",
        "LINK_TYPE_P1=IB",
    ]


def test_empty_or_failed_output():
    assert mlx.mlxconfig_params("") == {}
    assert mlx.mlxconfig_params("-E- Failed to open device: b1:00.0\n") == {}
    assert mlx.mlxconfig_reboot_pending("") == []


def test_filter_module_exports_what_the_tasks_use():
    names = set(mlx.FilterModule().filters())
    assert {
        "mlxconfig_params",
        "mlxconfig_diff",
        "mlxconfig_reboot_pending",
        "mlxconfig_set_args",
    } <= names


#: ``query -e`` (the role's query) in mlxconfig's layout: ``*`` marks rows whose next-boot value
#: differs from default/current, a footer explains it. Written for this test from the format
#: mstflint's mlxcfg_ui.cpp prints (no captured sample of ``-e`` output is in tests/fixtures).
QUERY_E = """
Device #1:
----------

Device type:        ConnectX6
Name:               MCX654105A-HCA_Ax
Description:        ConnectX-6 VPI adapter card
Device:             b1:00.0

Configurations:                                          Default         Current         Next Boot
         MEMIC_BAR_SIZE                                  0               0               0
*        SRIOV_EN                                        False(0)        False(0)        True(1)
*        NUM_OF_VFS                                      0               8               8
         LINK_TYPE_P1                                    IB(1)           IB(1)           IB(1)
The '*' shows parameters with next value different from default/current value.
"""


def test_query_e_marked_rows_are_read():
    params = mlx.mlxconfig_params(QUERY_E)
    assert params == {
        "MEMIC_BAR_SIZE": "0",
        "SRIOV_EN": "True(1)",
        "NUM_OF_VFS": "8",
        "LINK_TYPE_P1": "IB(1)",
    }
    assert mlx.mlxconfig_params(QUERY_E, column="Current")["SRIOV_EN"] == "False(0)"


def test_query_e_reboot_pending():
    assert mlx.mlxconfig_reboot_pending(QUERY_E) == ["SRIOV_EN"]
    assert mlx.mlxconfig_reboot_pending(QUERY_E, ["LINK_TYPE_P1", "NUM_OF_VFS"]) == []


def test_query_e_diff_and_set_args_as_the_device_task_chains_them():
    changes = mlx.mlxconfig_diff(
        mlx.mlxconfig_params(QUERY_E), {"SRIOV_EN": True, "NUM_OF_VFS": 16}
    )
    assert changes == {"NUM_OF_VFS": 16}
    assert mlx.mlxconfig_set_args(changes) == ["NUM_OF_VFS=16"]


def test_reboot_pending_needs_current_column():
    # Neither sample has a "Current" column (no ``-e``): nothing can be said, so nothing pending.
    assert mlx.mlxconfig_reboot_pending(read("mlxconfig__skyao__1.txt")) == []
    assert mlx.mlxconfig_reboot_pending(read("mlxconfig__magnate3__1.txt"), ["SRIOV_EN"]) == []
