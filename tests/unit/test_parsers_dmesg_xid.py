"""``dmesg_xid``: XID lines of real kernel logs (dmesg, ``dmesg -T``, syslog, ``journalctl``
excerpts from GitHub threads, tests/fixtures/SOURCES.md) and the XID-free H200 capture."""

from __future__ import annotations

import pytest

from fabric.parsers import ParseError, parse
from fabric.parsers.dmesg_xid import Xid, xids
from fabric.state import REPO_ROOT

FIXTURES = REPO_ROOT / "tests" / "fixtures"


def text(name: str) -> str:
    return (FIXTURES / name).read_text()


def test_fallen_off_the_bus_from_dmesg_t() -> None:
    """XID 79 among the driver's other NVRM lines and its continuation lines."""
    assert xids(text("dmesg_xid__akash209__1.txt")) == [
        Xid(3, "0000:a1:00", 79, "'<unknown>'", "<unknown>", "GPU has fallen off the bus.")
    ]


def test_double_bit_error_in_syslog_lines() -> None:
    found = xids(text("dmesg_xid__gpuoperator1146__1.txt"))
    assert [(x.line, x.code, x.pci) for x in found] == [
        (4, 48, "0000:07:00"),
        (5, 64, "0000:07:00"),
    ]
    assert found[0].text.startswith("An uncorrectable double bit error (DBE) has been detected")


def test_pid_without_name_and_neither() -> None:
    """Older drivers: ``pid=`` alone (XID 63), or no process at all (XIDs 31/32)."""
    (remap,) = xids(text("dmesg_xid__mlengineering__1.txt"))
    assert (remap.code, remap.pid, remap.name) == (63, "1896", None)
    assert remap.text == "Row Remapper: New row marked for remapping, reset gpu to activate."
    old = xids(text("dmesg_xid__bumblebee677__1.txt"))
    assert [(x.code, x.pid, x.text) for x in old][-1] == (
        31,
        None,
        "Ch 00000003, engmask 00000101, intr 10000000",
    )


def test_every_xid_in_order_across_gpus_and_formats() -> None:
    contained = xids(text("dmesg_xid__akash244__1.txt"))
    assert [(x.code, x.pci) for x in contained] == [
        (43, "0000:00:05"),
        (43, "0000:00:05"),
        (31, "0000:00:07"),
        (94, "0000:00:08"),
    ]
    assert contained[-1].text == "Contained: SM (0x1). RST: No, D-RST: No"
    chia = xids(text("dmesg_xid__chiagigahorse301__1.txt"))
    assert [x.code for x in chia] == [31, 62, *[45] * 8]
    assert 6 not in [x.line for x in chia]  # "sched: RT throttling activated"
    nvlink = xids(text("dmesg_xid__ogkm1150__1.txt"))
    assert {x.pci for x in nvlink} == {"0000:dc:00", "0000:ed:00", "0000:ba:00", "0000:97:00"}
    assert nvlink[0].text == "Ch 00000001 caused by previous Xid 149"


@pytest.mark.parametrize("name", ["dmesg__h200vm__1.txt", "dmesg__h200vm__2.txt"])
def test_the_h200_kernel_log_has_no_xid(name: str) -> None:
    """The whole log since boot, and its NVRM lines: none of them an XID."""
    log = (FIXTURES / "device" / name).read_text()
    assert "NVRM" in log
    assert xids(log) == []
    assert parse("dmesg_xid", log).model_dump() == {"ok": True, "reason": None, "xids": []}


def test_registry_result_and_empty_input() -> None:
    result = parse("dmesg_xid", text("dmesg_xid__akash209__1.txt"))
    assert result.model_dump(mode="json")["xids"][0]["code"] == 79
    with pytest.raises(ParseError, match="^dmesg_xid: "):
        parse("dmesg_xid", "\n")
