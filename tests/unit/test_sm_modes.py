"""Subnet managers in every mode: the spec (managed, external, switch), what railyard runs
(only managed SMs reach the inventory's subnet_managers group), the check plan, and the SM
checks' judging (``fabric.verify.sm``) on real output captured from ibsim with a switch's SM
as MASTER and sm2's OpenSM as STANDBY (tests/fixtures/SOURCES.md)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from fabric.inventory import build_inventory
from fabric.parsers.sminfo import parse as parse_sminfo
from fabric.parsers.smpquery import parse as parse_smpquery
from fabric.spec import ClusterSpec, SpecError, spec_from_mapping
from fabric.spec.sm import expected_master
from fabric.state import REPO_ROOT
from fabric.verify.plan import FAMILIES, CheckPlan, SubnetManagerExpect, describe
from fabric.verify.sm import (
    SeenSm,
    judge_answers,
    judge_master,
    judge_priority,
    judge_single_master,
    judge_standbys,
    judge_undeclared,
    seen_sm,
    undeclared,
)

FIXTURES = REPO_ROOT / "tests" / "fixtures"
LAB = yaml.safe_load((REPO_ROOT / "Pulumi.lab.yaml").read_text())["config"]["railyard:cluster"]
SWITCH_SM = {"mode": "switch", "switch": "leaf01", "priority": 14}
UFM = {"mode": "external", "node_description": "ufm01 mlx5_0", "priority": 15}


def lab_with(*sms: dict[str, Any]) -> ClusterSpec:
    data = copy.deepcopy(LAB)
    data["fabric"]["infiniband"]["subnet_managers"] = list(sms)
    return spec_from_mapping(data)


def read(name: str) -> str:
    return (FIXTURES / name).read_text()


# --- the spec ------------------------------------------------------------------------------


def test_managed_is_the_default_mode() -> None:
    spec = ClusterSpec.model_validate(LAB)
    assert [s.mode for s in spec.fabric.infiniband.subnet_managers] == ["managed", "managed"]


def test_external_and_switch_sms_validate_with_no_managed_one() -> None:
    spec = lab_with(SWITCH_SM, {**UFM, "priority": 10, "guid": "0x0002c90302000025"})
    sms = spec.fabric.infiniband.subnet_managers
    assert [s.id for s in sms] == ["switch:leaf01", "external:ufm01 mlx5_0"]
    assert expected_master(sms) == 0


def test_role_master_names_the_master_among_equals() -> None:
    sms = lab_with({**SWITCH_SM, "role": "master"}, {"host": "sm1", "priority": 14})
    assert expected_master(sms.fabric.infiniband.subnet_managers) == 0


def test_every_problem_of_the_sm_entries_at_once() -> None:
    data = copy.deepcopy(LAB)
    data["fabric"]["infiniband"]["subnet_managers"] = [
        {"mode": "external", "priority": 3},
        {"mode": "switch", "switch": "leaf07", "host": "sm1", "priority": 3},
    ]
    with pytest.raises(SpecError) as err:
        spec_from_mapping(data)
    paths = {p.path for p in err.value.problems}
    assert {
        "fabric.infiniband.subnet_managers[0].node_description",
        "fabric.infiniband.subnet_managers[1].switch",
        "fabric.infiniband.subnet_managers[1].host",
        "fabric.infiniband.subnet_managers[1].priority",
    } <= paths


# --- what railyard runs --------------------------------------------------------------------


def _inventory(spec: ClusterSpec) -> dict[str, Any]:
    addresses = {h: f"198.18.0.{10 + i}" for i, h in enumerate(spec.hosts)}
    return build_inventory(
        spec, addresses, ssh_user="root", private_key_file="/s/id", known_hosts_file="/s/kh"
    )


def test_only_managed_sms_are_run_by_railyard() -> None:
    spec = lab_with(UFM, {"host": "sm2", "priority": 10})
    groups = _inventory(spec)["all"]["children"]
    assert groups["subnet_managers"]["hosts"] == {"sm2": {"subnet_manager_priority": 10}}


def test_no_managed_sm_leaves_the_group_empty() -> None:
    groups = _inventory(lab_with(SWITCH_SM))["all"]["children"]
    assert groups["subnet_managers"]["hosts"] == {}


# --- the check plan ------------------------------------------------------------------------


def test_plan_checks_every_mode_and_forbids_opensm_elsewhere() -> None:
    spec = lab_with(UFM, {"host": "sm2", "priority": 10})
    plan = CheckPlan(spec=spec, hosts=list(spec.hosts))
    assert [(s.id, s.master) for s in plan.subnet_managers] == [
        ("external:ufm01 mlx5_0", True),
        ("sm2", False),
    ]
    assert plan.sm_hosts == {"sm2"}
    assert "sm1" in plan.sm_free_hosts and "sm2" not in plan.sm_free_hosts
    assert plan.discovery_host == "sm2"


def test_plan_without_a_managed_sm_discovers_from_the_observer() -> None:
    spec = lab_with(SWITCH_SM)
    plan = CheckPlan(spec=spec, hosts=list(spec.hosts))
    assert plan.discovery_host == plan.observer == "gpu01"
    sm = describe(plan)["sm"]
    assert sm["checks"] == list(FAMILIES["sm"][0])
    assert sm["parameters"][0]["mode"] == "switch"


# --- judging, on real captures -------------------------------------------------------------

#: The switch SM (leaf01, LID 1, MASTER, priority 14) and sm2's OpenSM (LID 13, STANDBY, 10).
SWITCH_MASTER = seen_sm(
    1,
    parse_sminfo(read("sminfo__ibsim_smmodes__1.txt")),
    parse_smpquery(read("smpquery__ibsim_smmodes__1.txt")),  # type: ignore[arg-type]
    parse_smpquery(read("smpquery__ibsim_smmodes__2.txt")),  # type: ignore[arg-type]
)
SM2_STANDBY = seen_sm(
    13,
    parse_sminfo(read("sminfo__ibsim_smmodes__2.txt")),
    parse_smpquery(read("smpquery__ibsim_smmodes__3.txt")),  # type: ignore[arg-type]
    parse_smpquery(read("smpquery__ibsim_smmodes__4.txt")),  # type: ignore[arg-type]
)
SEEN = [SWITCH_MASTER, SM2_STANDBY]
SM2_GUID = {"sm2": "0x0002c90302000025"}


def expect(**kw: Any) -> SubnetManagerExpect:
    return SubnetManagerExpect(**{"priority": 0, **kw})


SWITCH = expect(mode="switch", switch="leaf01", priority=14, master=True)
SM2 = expect(host="sm2", priority=10)


def test_seen_sm_reads_identity_from_the_captures() -> None:
    assert (SWITCH_MASTER.state, SWITCH_MASTER.priority, SWITCH_MASTER.node_type) == (
        "MASTER",
        14,
        "Switch",
    )
    assert (SM2_STANDBY.description, SM2_STANDBY.port_guid) == ("sm2 mlx5_0", SM2_GUID["sm2"])
    assert SWITCH_MASTER.name == "lid 1 'leaf01' (Switch, port GUID 0x0002c90301000000)"


def test_declared_switch_master_and_managed_standby_pass() -> None:
    expects = [SWITCH, SM2]
    assert judge_single_master(SEEN) is None
    assert judge_master(expects, SWITCH_MASTER, SM2_GUID) is None
    assert judge_standbys(expects, SEEN, SM2_GUID) == []
    assert undeclared(expects, SEEN, SM2_GUID) == []
    assert judge_answers(SM2, SM2_STANDBY) is None
    assert judge_priority(SWITCH, SWITCH_MASTER) is None


def test_managed_sm_recognised_by_description_when_its_guid_is_unknown() -> None:
    assert judge_standbys([SWITCH, SM2], SEEN, {}) == []


def test_an_undeclared_sm_is_named() -> None:
    found = undeclared([SWITCH], SEEN, {})
    assert found == [SM2_STANDBY]
    assert judge_undeclared(found) == (
        "1 subnet manager(s) nobody declared: lid 13 'sm2 mlx5_0' (Channel Adapter, port GUID "
        "0x0002c90302000025) state STANDBY; declare each in fabric.infiniband.subnet_managers "
        "(mode external or switch) or stop it"
    )


def test_an_undeclared_master_is_named() -> None:
    ufm = expect(mode="external", node_description="ufm01 mlx5_0", priority=15, master=True)
    problem = judge_master([ufm, SM2], SWITCH_MASTER, SM2_GUID)
    assert problem == (
        "the master SM is lid 1 'leaf01' (Switch, port GUID 0x0002c90301000000), which no "
        "subnet_managers entry declares; expected master external:ufm01 mlx5_0 (external SM "
        "with node description 'ufm01 mlx5_0')"
    )


def test_a_declared_standby_that_is_master_is_named() -> None:
    sm2_master = expect(host="sm2", priority=10, master=True)
    switch_standby = expect(mode="switch", switch="leaf01", priority=14)
    problem = judge_master([sm2_master, switch_standby], SWITCH_MASTER, SM2_GUID)
    assert problem is not None and problem.startswith("the master SM is switch:leaf01")
    problems = judge_standbys([sm2_master, switch_standby], SEEN, SM2_GUID)
    assert problems == [
        "declared standby switch:leaf01 at lid 1 'leaf01' (Switch, port GUID "
        "0x0002c90301000000): state MASTER",
        "lid 13 'sm2 mlx5_0' (Channel Adapter, port GUID 0x0002c90302000025) is STANDBY but is "
        "the declared master sm2",
    ]


def test_external_by_guid_must_match_the_port_or_node_guid() -> None:
    by_node = expect(mode="external", guid="0x0002c90302000024", priority=10)
    other = expect(mode="external", guid="0x0002c90302000099", priority=10)
    assert undeclared([SWITCH, by_node], SEEN, {}) == []
    assert undeclared([SWITCH, other], SEEN, {}) == [SM2_STANDBY]


def test_a_switch_sm_is_a_switch_node() -> None:
    sm2_as_switch = expect(mode="switch", switch="x", node_description="sm2 mlx5_0")
    assert undeclared([SWITCH, sm2_as_switch], SEEN, {}) == [SM2_STANDBY]


def test_wrong_priority_and_missing_sm_are_named() -> None:
    assert judge_priority(expect(host="sm2", priority=7), SM2_STANDBY) == (
        "SM on sm2: priority 10, declared 7"
    )
    assert judge_answers(expect(host="sm1"), None) == (
        "SM on sm1: no port with the IsSM bit is this SM (OpenSM on sm1's HCA port)"
    )


def test_two_masters_are_named() -> None:
    other = seen_sm(
        13,
        parse_sminfo(read("sminfo__ibsimparse__1.txt")),
        parse_smpquery(read("smpquery__ibsim_smmodes__3.txt")),  # type: ignore[arg-type]
        parse_smpquery(read("smpquery__ibsim_smmodes__4.txt")),  # type: ignore[arg-type]
    )
    problem = judge_single_master([SWITCH_MASTER, other])
    assert problem is not None and problem.startswith("2 MASTER SMs, expected exactly one")


def test_lab_ping_server_is_not_an_sm_only_in_the_lab() -> None:
    silent = seen_sm(
        13,
        parse_sminfo(read("sminfo__ibsimparse__3.txt")),  # no SMInfo answer
        parse_smpquery(read("smpquery__ibsim_smmodes__3.txt")),  # type: ignore[arg-type]
        parse_smpquery(read("smpquery__ibsim_smmodes__4.txt")),  # type: ignore[arg-type]
    )
    assert silent.state is None and silent.reason is not None
    assert undeclared([SWITCH], [SWITCH_MASTER, silent], {}, lab_hosts=["sm2"]) == []
    assert undeclared([SWITCH], [SWITCH_MASTER, silent], {}) == [silent]
    assert isinstance(silent, SeenSm)
