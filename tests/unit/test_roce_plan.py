"""The verification plan of a RoCE fabric with a managed Linux switch: one hop per declared
switch port, the consistency family generated, ib_write_bw -R planned but not in the lab."""

from __future__ import annotations

from fabric.spec import spec_from_mapping
from fabric.verify.plan import FAMILIES, CheckPlan, describe
from tests.unit.test_roce_spec import LAB_ROCE
from tests.unit.test_switch_inventory import LEAF


def plan(*switches: dict, hosts: tuple[str, ...] = ("gpu1", "gpu2")) -> CheckPlan:
    data = dict(LAB_ROCE)
    data["fabric"] = dict(LAB_ROCE["fabric"], switches=list(switches))
    return CheckPlan(spec=spec_from_mapping(data), hosts=list(hosts))


def test_one_hop_per_switch_port_facing_a_selected_host() -> None:
    hops = plan(LEAF).roce_hops
    assert [h.id for h in hops] == ["gpu1/eth1-leaf1/p-gpu1", "gpu2/eth1-leaf1/p-gpu2"]
    assert hops[0].where == "switch leaf1 port p-gpu1 <-> host gpu1 eth1"
    assert [h.host for h in plan(LEAF, hosts=("gpu2",)).roce_hops] == ["gpu2"]


def test_families_are_generated_or_say_why() -> None:
    out = describe(plan(LEAF))
    assert out["roce_consistency"]["checks"] == list(FAMILIES["roce_consistency"][0])
    assert len(out["roce_consistency"]["parameters"]) == 2
    assert out["path_mtu"]["parameters"]
    assert "ib_write_bw -R cannot run" in out["roce_bandwidth"]["not_generated"]


def test_sonic_switch_is_read_back_by_the_role_not_the_checks() -> None:
    sonic = {"name": "leaf9", "os": "sonic", "manage": True, "address": "198.18.61.2"}
    reason = plan(sonic).not_generated()["roce_consistency"]
    assert reason.startswith("switches ['leaf9'] are SONiC/Cumulus")


def test_no_switch_ports_says_so() -> None:
    reason = plan().not_generated()["roce_consistency"]
    assert reason == (
        "no managed Linux switch declares ports facing the selected hosts (fabric.switches[].ports)"
    )
