"""Unit tests of the roce_qos role's mlnx_qos filter on real captured output: the project's
``tests/fixtures/`` (attribution in its SOURCES.md).

Run: ``pytest roles/roce_qos/tests``.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

HERE = Path(__file__).parent
FIXTURES = HERE.parents[2] / "tests" / "fixtures"
_spec = importlib.util.spec_from_file_location(
    "roce_qos_mlnx_qos_filter", HERE.parent / "filter_plugins" / "mlnx_qos.py"
)
mq = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(mq)


def parse(name: str) -> dict:
    return mq.mlnx_qos_parse((FIXTURES / name).read_text())


def test_trust_dscp_with_pfc_on_priority_3():
    qos = parse("mlnx_qos__netarbiter__1.txt")
    assert qos["dcbx_mode"] == "OS controlled"
    assert qos["trust"] == "dscp"
    assert qos["ok"] is True
    assert qos["pfc_enabled"] == [3]


def test_dscp2prio_maps_rdma_and_cnp_dscp():
    qos = parse("mlnx_qos__netarbiter__1.txt")
    assert len(qos["dscp2prio"]) == 64
    assert qos["dscp2prio"][26] == 3
    assert qos["dscp2prio"][48] == 6
    assert qos["dscp2prio"][0] == 0


def test_tc_mapping_older_format():
    qos = parse("mlnx_qos__netarbiter__1.txt")
    assert qos["tcs"][0] == {
        "tc": 0,
        "ratelimit_gbps": None,
        "tsa": "vendor",
        "bw_percent": None,
        "priorities": [1],
    }
    assert qos["tcs"][1]["priorities"] == [0]
    assert sorted(qos["tcs"]) == list(range(8))


def test_trust_pcp_default_state():
    qos = parse("mlnx_qos__magnate3__1.txt")
    assert qos["trust"] == "pcp"
    assert qos["dscp2prio"] == {}
    assert qos["pfc_enabled"] == []


def test_rate_limits():
    qos = parse("mlnx_qos__magnate3__3.txt")
    assert qos["trust"] == "pcp"
    assert qos["tcs"][0]["ratelimit_gbps"] == 25.0
    assert qos["tcs"][1]["ratelimit_gbps"] == 5.0
    assert qos["tcs"][3]["priorities"] == [3]


def test_empty_or_not_mlnx_qos_is_not_ok_and_shows_drift():
    for text in ("", "bash: mlnx_qos: command not found\n"):
        qos = mq.mlnx_qos_parse(text)
        assert qos["ok"] is False and qos["reason"]
        assert qos["trust"] is None and qos["pfc_enabled"] == []
