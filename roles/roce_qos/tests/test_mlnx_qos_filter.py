"""Unit tests of the roce_qos role's mlnx_qos filter on real captured output (fixtures/SOURCES.md).

Run: ``pytest roles/roce_qos/tests``.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

HERE = Path(__file__).parent
_spec = importlib.util.spec_from_file_location(
    "roce_qos_mlnx_qos_filter", HERE.parent / "filter_plugins" / "mlnx_qos.py"
)
mq = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(mq)


def parse(name: str) -> dict:
    return mq.mlnx_qos_parse((HERE / "fixtures" / name).read_text())


def test_trust_dscp_with_pfc_on_priority_3():
    qos = parse("mlnx_qos__netarbiter__1.txt")
    assert qos["dcbx_mode"] == "OS controlled"
    assert qos["trust"] == "dscp"
    assert qos["pfc_enabled"] == [3]
    assert "buffer" not in qos["pfc"]


def test_dscp2prio_maps_rdma_and_cnp_dscp():
    qos = parse("mlnx_qos__netarbiter__1.txt")
    assert len(qos["dscp2prio"]) == 64
    assert qos["dscp2prio"][26] == 3
    assert qos["dscp2prio"][48] == 6
    assert qos["dscp2prio"][0] == 0


def test_tc_mapping_older_format():
    qos = parse("mlnx_qos__netarbiter__1.txt")
    assert qos["tcs"][0] == {"ratelimit": "unlimited", "tsa": "vendor", "priorities": [1]}
    assert qos["tcs"][1]["priorities"] == [0]
    assert sorted(qos["tcs"]) == list(range(8))


def test_trust_pcp_default_state():
    qos = parse("mlnx_qos__magnate3__1.txt")
    assert qos["trust"] == "pcp"
    assert qos["dscp2prio"] == {}
    assert qos["pfc_enabled"] == []
    assert qos["pfc"]["buffer"] == [0] * 8


def test_rate_limits_and_buffer_row():
    qos = parse("mlnx_qos__magnate3__3.txt")
    assert qos["trust"] == "pcp"
    assert qos["pfc"]["buffer"] == [1] * 8
    assert qos["tcs"][0]["ratelimit"] == "25.0 Gbps"
    assert qos["tcs"][1]["ratelimit"] == "5.0 Gbps"
    assert qos["tcs"][3]["priorities"] == [3]


def test_empty():
    assert mq.mlnx_qos_parse("")["trust"] is None
