"""roles/subnet_manager's opensm.conf, rendered from the spec: the congestion-control keys in
OpenSM's own names and value formats (``opensm --create-config`` and ``osm_subnet.c``), compared
with the golden file the molecule scenario diffs the converged host's file against."""

from __future__ import annotations

from typing import Any

import jinja2
import yaml

from fabric.handoff.vars import subnet_manager_vars
from fabric.spec import ClusterSpec
from fabric.state import REPO_ROOT

ROLE = REPO_ROOT / "roles" / "subnet_manager"
GOLDEN = ROLE / "tests" / "golden"
MANAGED = "Ansible managed"


def render(variables: dict[str, Any]) -> str:
    """opensm.conf.j2 as Ansible renders it (trim_blocks), over the role's defaults."""
    defaults = yaml.safe_load((ROLE / "defaults/main.yml").read_text())
    env = jinja2.Environment(
        trim_blocks=True, keep_trailing_newline=True, undefined=jinja2.StrictUndefined
    )
    template = env.from_string((ROLE / "templates/opensm.conf.j2").read_text())
    return template.render(defaults | variables | {"ansible_managed": MANAGED})


def _spec(congestion_control: dict[str, Any] | None = None) -> ClusterSpec:
    spec = yaml.safe_load((REPO_ROOT / "Pulumi.lab.yaml").read_text())["config"]["railyard:cluster"]
    if congestion_control is not None:
        spec["fabric"]["infiniband"]["congestion_control"] = congestion_control
    return ClusterSpec.model_validate(spec)


def test_the_spec_gives_the_golden_variables() -> None:
    golden = yaml.safe_load((GOLDEN / "congestion_control.yml").read_text())
    spec_cc = dict(golden["subnet_manager_congestion_control"])
    out = subnet_manager_vars(_spec(spec_cc))
    assert out["subnet_manager_congestion_control"] == golden["subnet_manager_congestion_control"]


def test_congestion_control_renders_as_the_golden_file() -> None:
    golden = yaml.safe_load((GOLDEN / "congestion_control.yml").read_text())
    assert render(golden) == (GOLDEN / "opensm-cc.conf").read_text()


def test_opensm_key_formats() -> None:
    """Each key in the format OpenSM writes it (``osm_subnet.c`` ``osm_subn_output_conf``)."""
    golden = yaml.safe_load((GOLDEN / "congestion_control.yml").read_text())
    lines = set(render(golden).splitlines())
    assert {
        "congestion_control TRUE",
        "cc_key 0x0000000000000000",
        "cc_max_outstanding_mads 500",
        "cc_sw_cong_setting_control_map 0x1F",
        "cc_sw_cong_setting_victim_mask 0x" + "0" * 64,
        "cc_sw_cong_setting_credit_mask 0x" + "0" * 62 + "FE",
        "cc_sw_cong_setting_threshold 0x0F",
        "cc_sw_cong_setting_credit_starvation_return_delay 1:2",
        "cc_ca_cong_setting_port_control 0x0000",
        "cc_ca_cong_setting_control_map 0x0009",  # SLs 0 and 3
        "cc_ca_cong_setting_ccti_timer 3 20",
        "cc_ca_cong_setting_ccti_min 3 1",
        "cc_cct 0:0,1:64,1:128,1:192,2:64,2:128",
    } <= lines


def test_off_by_default_writes_only_the_switch() -> None:
    out = subnet_manager_vars(_spec())
    text = render(out)
    assert "congestion_control FALSE\n" in text
    assert "cc_" not in text
