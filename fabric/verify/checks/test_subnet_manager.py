"""Subnet managers: each declared OpenSM answers as MASTER or STANDBY with its priority;
exactly one MASTER; every fabric host sees that MASTER."""

from __future__ import annotations

import pytest

from fabric.verify.facts import Facts
from fabric.verify.plan import CheckPlan, SubnetManagerExpect

pytestmark = pytest.mark.family("sm")


def _sm_info(facts: Facts, plan: CheckPlan, sm: SubnetManagerExpect):  # type: ignore[no-untyped-def]
    lid = facts.lid(sm.host)
    assert lid, f"SM host {sm.host}: its HCA port has no LID (ibstat)"
    info = facts.sminfo_at(plan.observer or sm.host, lid)
    assert info.ok and info.state, f"SM on {sm.host} (lid {lid}): no SMInfo answer: {info.reason}"
    return info


def test_sm_answers(host, facts: Facts, plan: CheckPlan, sm: SubnetManagerExpect) -> None:
    """The OpenSM on this host answers SMInfo as MASTER or STANDBY."""
    info = _sm_info(facts, plan, sm)
    assert info.state in ("MASTER", "STANDBY"), (
        f"SM on {sm.host}: state {info.state}, expected MASTER or STANDBY"
    )


def test_sm_priority(host, facts: Facts, plan: CheckPlan, sm: SubnetManagerExpect) -> None:
    """The OpenSM runs with the declared priority."""
    info = _sm_info(facts, plan, sm)
    assert info.priority == sm.priority, (
        f"SM on {sm.host}: priority {info.priority}, declared {sm.priority}"
    )


def _states(facts: Facts, plan: CheckPlan) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for sm in plan.subnet_managers:
        lid = facts.lid(sm.host)
        out[sm.host] = facts.sminfo_at(plan.observer or sm.host, lid).state if lid else None
    return out


def test_single_master(host, facts: Facts, plan: CheckPlan, observer: str) -> None:
    """Exactly one declared SM is MASTER."""
    states = _states(facts, plan)
    masters = [h for h, s in states.items() if s == "MASTER"]
    assert len(masters) == 1, f"seen from {observer}: {len(masters)} MASTER SMs; states {states}"


def test_host_sees_master(host, facts: Facts, plan: CheckPlan, fabric_host: str) -> None:
    """``sminfo`` on the host reaches a MASTER SM running on a declared SM host."""
    info = facts.sminfo(fabric_host)
    assert info.ok and info.state == "MASTER", f"{fabric_host}: sminfo: {info.reason or info.state}"
    sm_lids = {facts.lid(sm.host): sm.host for sm in plan.subnet_managers}
    assert info.sm_lid in sm_lids, (
        f"{fabric_host}: master SM at lid {info.sm_lid} is not a declared SM host ({sm_lids})"
    )
