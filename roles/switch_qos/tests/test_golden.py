"""Checks of the switch_qos golden files, which the molecule scenario diffs the rendering against.

* SONiC: every module section validates against the installed dellemc.enterprise_sonic
  module's own argument spec (the same check the module makes before touching a switch).
* Cumulus: every line is an ``nv set`` command of the QoS / interface tree.

Run: ``pytest roles/switch_qos/tests``.
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest
import yaml

GOLDEN = Path(__file__).parent / "golden"
SONIC_FILES = sorted(GOLDEN.glob("*/sonic_qos.yml"))
NVUE_FILES = sorted(GOLDEN.glob("*/nvue_qos.commands"))
LINUX_FILES = sorted(GOLDEN.glob("*/linux_qos.json"))
ARGSPEC = "ansible_collections.dellemc.enterprise_sonic.plugins.module_utils.network.sonic.argspec"
MODULES = {
    "sonic_roce": ("roce.roce", "RoceArgs"),
    "sonic_qos_maps": ("qos_maps.qos_maps", "Qos_mapsArgs"),
    "sonic_qos_wred": ("qos_wred.qos_wred", "Qos_wredArgs"),
    "sonic_qos_scheduler": ("qos_scheduler.qos_scheduler", "Qos_schedulerArgs"),
    "sonic_interfaces": ("interfaces.interfaces", "InterfacesArgs"),
    "sonic_qos_interfaces": ("qos_interfaces.qos_interfaces", "Qos_interfacesArgs"),
}


def argument_spec(module: str) -> dict:
    path, cls = MODULES[module]
    return getattr(importlib.import_module(f"{ARGSPEC}.{path}"), cls).argument_spec


def test_golden_files_exist():
    assert len(SONIC_FILES) == 2
    assert len(NVUE_FILES) == 1
    assert len(LINUX_FILES) == 1


@pytest.mark.parametrize("path", SONIC_FILES, ids=lambda p: p.parent.name)
def test_sonic_sections_are_the_applied_modules(path):
    data = yaml.safe_load(path.read_text())
    assert list(data) == list(MODULES)


@pytest.mark.parametrize("path", SONIC_FILES, ids=lambda p: p.parent.name)
@pytest.mark.parametrize("module", list(MODULES))
def test_sonic_section_validates_against_module_argspec(path, module):
    validation = pytest.importorskip("ansible.module_utils.common.arg_spec")
    data = yaml.safe_load(path.read_text())
    validator = validation.ArgumentSpecValidator(argument_spec(module))
    result = validator.validate({"config": data[module], "state": "merged"})
    assert not result.error_messages, result.error_messages


@pytest.mark.parametrize("path", SONIC_FILES, ids=lambda p: p.parent.name)
def test_sonic_lossless_priority_is_consistent(path):
    data = yaml.safe_load(path.read_text())
    prio = int(data["sonic_roce"]["pfc_priority"])
    maps = data["sonic_qos_maps"]
    assert maps["pfc_priority_queue_maps"][0]["entries"] == [{"dot1p": prio, "queue_index": prio}]
    assert maps["pfc_priority_pg_maps"][0]["entries"] == [{"dot1p": prio, "pg_index": prio}]
    for port in data["sonic_qos_interfaces"]:
        assert port["pfc"]["priorities"] == [{"dot1p": prio, "enable": True}]
        assert port["queues"][0]["id"] == prio


@pytest.mark.parametrize("path", SONIC_FILES, ids=lambda p: p.parent.name)
def test_sonic_ets_weights_sum_to_100(path):
    data = yaml.safe_load(path.read_text())
    weights = [s.get("weight", 0) for s in data["sonic_qos_scheduler"][0]["schedulers"]]
    assert sum(weights) == 100


@pytest.mark.parametrize("path", NVUE_FILES, ids=lambda p: p.parent.name)
def test_nvue_lines_are_set_commands(path):
    lines = [line for line in path.read_text().splitlines() if line and not line.startswith("#")]
    assert lines
    assert all(line.startswith(("nv set qos ", "nv set interface ")) for line in lines)


@pytest.mark.parametrize("path", NVUE_FILES, ids=lambda p: p.parent.name)
def test_nvue_rdma_dscp_reaches_the_lossless_priority(path):
    text = path.read_text()
    assert "nv set qos mapping default-global dscp 26 switch-priority 3" in text
    assert "nv set qos pfc default-global switch-priority 3" in text
    assert "nv set qos congestion-control default-global traffic-class 3 ecn enable" in text


@pytest.mark.parametrize("path", SONIC_FILES, ids=lambda p: p.parent.name)
def test_sonic_ports_carry_the_pfc_watchdog(path):
    data = yaml.safe_load(path.read_text())
    for port in data["sonic_qos_interfaces"]:
        pfc = port["pfc"]
        assert pfc["watchdog_action"] in ("drop", "forward", "alert")
        assert 100 <= pfc["watchdog_detect_time"] <= pfc["watchdog_restore_time"]


@pytest.mark.parametrize("path", NVUE_FILES, ids=lambda p: p.parent.name)
def test_nvue_has_watchdog_and_cable_length(path):
    lines = path.read_text().splitlines()
    assert any(line.startswith("nv set qos pfc-watchdog robustness ") for line in lines)
    assert any(line.endswith(" qos pfc-watchdog") for line in lines)
    assert any(" cable-length " in line for line in lines)


@pytest.mark.parametrize("path", LINUX_FILES, ids=lambda p: p.parent.name)
def test_linux_settings_are_what_the_script_reads(path):
    script = Path(__file__).parents[1] / "files" / "switch_qos_linux.py"
    data = json.loads(path.read_text())
    source = script.read_text()
    for key in data:
        assert f'"{key}"' in source, key
    assert data["ecn_min_threshold"] < data["ecn_max_threshold"]
    assert data["pfc_priority"] != data["cnp_priority"]
