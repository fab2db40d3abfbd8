"""The RoCE roles' interfaces agree (defaults = argument_specs = README table), and every
variable the hand-off derives from fabric.roce is one the roles declare."""

from __future__ import annotations

import pytest
import yaml

from fabric.handoff.vars import roce_qos_vars, switch_qos_vars
from fabric.spec import spec_from_mapping
from fabric.state import REPO_ROOT
from tests.unit.test_role_interfaces import _readme_variables
from tests.unit.test_spec import base

ROLES = REPO_ROOT / "roles"


@pytest.mark.parametrize("role", ["roce_qos", "switch_qos"])
def test_role_interface_agrees(role: str) -> None:
    defaults = yaml.safe_load((ROLES / role / "defaults/main.yml").read_text())
    spec = yaml.safe_load((ROLES / role / "meta/argument_specs.yml").read_text())
    options = spec["argument_specs"]["main"]["options"]
    assert set(defaults) == set(options), set(defaults) ^ set(options)
    assert set(defaults) == _readme_variables(role), set(defaults) ^ _readme_variables(role)
    for name, value in defaults.items():
        if (isinstance(value, str) and "{{" in value) or options[name].get("required"):
            continue  # computed from other variables, or required: no default to agree on
        assert options[name].get("default") == value, name


def test_handoff_vars_are_declared_role_variables() -> None:
    spec = spec_from_mapping(base("roce"))
    declared = {
        name
        for role in ("roce_qos", "switch_qos")
        for name in yaml.safe_load((ROLES / role / "defaults/main.yml").read_text())
    }
    given = set(roce_qos_vars(spec)) | set(switch_qos_vars(spec))
    assert given <= declared, given - declared


def test_switch_vars_carry_the_spec_values() -> None:
    data = base("roce")
    data["fabric"]["roce"] |= {
        "ecn_queues": [{"priority": 3, "min_bytes": 100000, "max_bytes": 900000}],
        "pfc_watchdog": {"detection_ms": 300, "restore_ms": 600, "action": "alert"},
    }
    out = switch_qos_vars(spec_from_mapping(data))
    assert (out["switch_qos_ecn_min_threshold"], out["switch_qos_ecn_max_threshold"]) == (
        100000,
        900000,
    )
    assert out["switch_qos_pfc_watchdog_detection_ms"] == 300
    assert out["switch_qos_pfc_watchdog_action"] == "alert"
    assert out["switch_qos_mtu"] == 9000


def test_host_vars_carry_dcqcn_and_watchdog() -> None:
    data = base("roce")
    data["fabric"]["roce"] |= {"dcqcn": {"rp": {"rpg_ai_rate": 10}}}
    out = roce_qos_vars(spec_from_mapping(data))
    assert out["roce_qos_dcqcn_rp"]["rpg_ai_rate"] == 10
    assert out["roce_qos_dcqcn_rp"]["dce_tcp_g"] == 1019
    assert out["roce_qos_pfc_watchdog_ms"] == 200
    assert out["roce_qos_cable_length_m"] == 5
