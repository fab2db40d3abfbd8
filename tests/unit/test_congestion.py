"""Congestion-control judging (``fabric.verify.congestion``) on real ``ibccquery`` output
captured from ibsim. ibsim implements no congestion control: its answers carry zeros (it hands
class 0x21 to its SMP handlers), so these captures prove the format and the comparison, never a
fabric's settings."""

from __future__ import annotations

from fabric.parsers.ibccquery import parse
from fabric.spec.models import CongestionControl
from fabric.state import REPO_ROOT
from fabric.verify.congestion import judge, query_command

FIXTURES = REPO_ROOT / "tests" / "fixtures"


def _report():  # type: ignore[no-untyped-def]
    text = "".join((FIXTURES / f"ibccquery__ibsim_routing__{n}.txt").read_text() for n in (1, 2, 3))
    return parse(text)


def test_three_records_from_three_runs() -> None:
    report = _report()
    assert report.ok
    assert [(r.attribute, r.lid) for r in report.records] == [
        ("SwitchCongestionSetting", 2),
        ("CACongestionSetting", 1),
        ("CongestionControlTable", 1),
    ]
    ca = report.records[1]
    assert ca.fields == {"Port_Control": "0x0000", "Control_Map": "0x0000"}
    assert len(ca.groups) == 16 and ca.groups[3]["SL"] == "3"


def test_defaults_match_the_zeros_read() -> None:
    wrong, read = judge(CongestionControl(), _report(), {2: "leaf01", 1: "gpu01/mlx5_0"})
    assert wrong == []
    assert read == {
        ("SwitchCongestionSetting", 2),
        ("CACongestionSetting", 1),
        ("CongestionControlTable", 1),
    }


def test_each_declared_value_that_differs_is_named() -> None:
    cc = CongestionControl.model_validate(
        {
            "enabled": True,
            "switch": {"control_map": 31, "credit_mask": "0xfe", "threshold": 15},
            "ca": [{"sl": 3, "ccti_timer": 20}],
            "cct": ["0:0", "1:64"],
        }
    )
    wrong, _ = judge(cc, _report(), {2: "leaf01", 1: "gpu01/mlx5_0"})
    assert "leaf01: Control_Map 0x00000000, declared 0x1f" in wrong
    assert "leaf01: Credit_Mask " + "0" * 64 + ", declared 0xfe" in wrong
    assert "gpu01/mlx5_0: Control_Map 0x0000, declared 0x8" in wrong
    assert "gpu01/mlx5_0 SL 3: CCTI_Timer 0, declared 0x14" in wrong
    assert "gpu01/mlx5_0: CCTI_Limit 0, declared 0x1" in wrong
    assert len(wrong) == 6  # threshold too


def test_a_failed_query_is_not_ok() -> None:
    report = parse((FIXTURES / "ibccquery__ibsim_routing__4.txt").read_text())
    assert not report.ok
    assert report.reason == (
        "ibccquery: iberror: failed: operation CongestionInfo: congestion info query failed"
    )


def test_one_command_reads_every_lid() -> None:
    command = query_command([2, 3], [1, 8])
    assert command == (
        "for l in 2 3; do ibccquery -t 200 SwitchCongestionSetting $l; done; "
        "for l in 1 8; do ibccquery -t 200 CACongestionSetting $l; "
        "ibccquery -t 200 CongestionControlTable $l; done"
    )
