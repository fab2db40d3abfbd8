"""The linux switch script's own logic (roles/switch_qos/files/switch_qos_linux.py): which u32
rules a settings file asks for, during and after a QoS change, and how ``verify`` names what
differs. Its tc/ip side is proven on a real bridge by tests/integration/test_roce_switch.py."""

from __future__ import annotations

import importlib.util
import json
from types import ModuleType
from typing import Any

from fabric.state import REPO_ROOT

ROLE = REPO_ROOT / "roles" / "switch_qos"


def script() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "switch_qos_linux", ROLE / "files" / "switch_qos_linux.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def settings(**changes: Any) -> dict[str, Any]:
    data = json.loads((ROLE / "tests/golden/leaf-linux/linux_qos.json").read_text())
    return data | changes


def test_rules_are_the_spec_dscps_with_fixed_handles() -> None:
    assert script().dscp_rules(settings()) == {
        "800::20": (26, "rdma", 3),
        "800::10": (48, "cnp", 6),
    }


def test_a_transition_adds_the_hosts_old_dscps_to_the_same_classes() -> None:
    rules = script().dscp_rules(
        settings(rdma_dscp=24, transition_rdma_dscp=[26], transition_cnp_dscp=[46])
    )
    assert rules == {
        "800::20": (24, "rdma", 3),
        "800::21": (26, "rdma", 3),
        "800::10": (48, "cnp", 6),
        "800::11": (46, "cnp", 6),
    }


def _state(mtu: int, dscp_map: dict[int, str], classes: list[str]) -> dict[str, Any]:
    return {
        "p-gpu1": {
            "mtu": mtu,
            "scheduler": "htb",
            "class_of": {"cnp": "1:10", "rdma": "1:20", "other": "1:30"},
            "classes": {c: {} for c in classes},
            "dscp_map": dscp_map,
        }
    }


def test_verify_names_port_and_both_values() -> None:
    s = settings(interfaces=["p-gpu1"])
    good = _state(9000, {26: "1:20", 48: "1:10"}, ["1:1", "1:10", "1:20", "1:30"])
    assert script().verify(s, good) == []
    bad = _state(1500, {26: "1:30", 48: "1:10"}, ["1:1", "1:10", "1:30"])
    assert script().verify(s, bad) == [
        "p-gpu1: MTU 1500, wanted 9000",
        "p-gpu1: DSCP 26 goes to class 1:30, wanted 1:20 (rdma)",
        "p-gpu1: no RDMA class 1:20",
    ]
