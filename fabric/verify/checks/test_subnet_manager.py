"""Subnet managers, checked the same way in every mode (managed OpenSM, an external SM such as
UFM, a switch's SM): each declared SM answers as MASTER or STANDBY with its priority; exactly
one MASTER, and it is the declared one (``sminfo``, then ``smpquery nodeinfo``/``nodedesc`` on
its LID); the standbys are the declared ones; no port nobody declared has the IsSM bit
(``saquery -s``); no OpenSM runs on a host railyard was not told to run one on; every fabric
host sees the MASTER. The judging is ``fabric.verify.sm``."""

from __future__ import annotations

from typing import Any

import pytest

from fabric.parsers import ParseError
from fabric.verify.facts import Facts
from fabric.verify.harness_error import HarnessError
from fabric.verify.plan import CheckPlan, SubnetManagerExpect
from fabric.verify.sm import (
    LAB_PING_SERVER,
    find,
    judge_answers,
    judge_master,
    judge_priority,
    judge_single_master,
    judge_standbys,
    judge_undeclared,
    undeclared,
)

pytestmark = pytest.mark.family("sm")


def _observer(plan: CheckPlan) -> str:
    if plan.observer is None:
        raise HarnessError("no fabric host selected to query the subnet managers from")
    return plan.observer


def _seen(facts: Facts, plan: CheckPlan) -> list[Any]:
    """Every IsSM port seen from the observer; an SA that does not answer fails the check
    (there is no master), a tool's unreadable output is the harness's."""
    try:
        return facts.seen_sms(_observer(plan))
    except ParseError as err:
        raise HarnessError(str(err)) from err
    except RuntimeError as err:
        pytest.fail(f"{err} (no subnet administrator answers: no master SM)")


def _guids(facts: Facts, plan: CheckPlan) -> dict[str, str | None]:
    return facts.host_guids(sorted(plan.sm_hosts))


def _lab_hosts(plan: CheckPlan) -> list[str]:
    return plan.fabric_hosts if plan.simulated else []


def _candidates(facts: Facts, plan: CheckPlan) -> list[Any]:
    """The ports a declared SM may answer on (``Facts.sm_candidates``): the SA's IsSM ports,
    the master, and each managed SM host's own port (the lab's SA has left a live standby out)."""
    try:
        return facts.sm_candidates(_observer(plan))
    except ParseError as err:
        raise HarnessError(str(err)) from err


def _found(facts: Facts, plan: CheckPlan, sm: SubnetManagerExpect) -> Any:
    found = find(sm, _candidates(facts, plan), _guids(facts, plan))
    problem = judge_answers(sm, found)
    assert problem is None, problem
    return found


def test_sm_answers(host, facts: Facts, plan: CheckPlan, sm: SubnetManagerExpect) -> None:
    """The declared SM answers SMInfo as MASTER or STANDBY (found among the IsSM ports, the
    master, and each managed SM host's own port)."""
    _found(facts, plan, sm)


def test_sm_priority(host, facts: Facts, plan: CheckPlan, sm: SubnetManagerExpect) -> None:
    """The SM runs with the declared priority."""
    problem = judge_priority(sm, _found(facts, plan, sm))
    assert problem is None, problem


def test_single_master(host, facts: Facts, plan: CheckPlan, observer: str) -> None:
    """Exactly one port answers SMInfo as MASTER."""
    problem = judge_single_master(_seen(facts, plan))
    assert problem is None, f"seen from {observer}: {problem}"


def test_master_is_declared(host, facts: Facts, plan: CheckPlan, observer: str) -> None:
    """The master ``sminfo`` names is the declared master: its node type, description and
    GUID (``smpquery nodeinfo``/``nodedesc`` on its LID)."""
    try:
        master = facts.seen_master(observer)
    except ParseError as err:
        raise HarnessError(str(err)) from err
    except RuntimeError as err:
        pytest.fail(str(err))
    problem = judge_master(plan.declared_sms, master, _guids(facts, plan))
    assert problem is None, f"seen from {observer}: {problem}"


def test_standbys_declared(host, facts: Facts, plan: CheckPlan, observer: str) -> None:
    """The standbys are the declared ones: each declared standby answers STANDBY, and no
    declared master is one."""
    problems = judge_standbys(plan.declared_sms, _candidates(facts, plan), _guids(facts, plan))
    assert not problems, f"seen from {observer}: " + "; ".join(problems)


def test_no_undeclared_sm(host, facts: Facts, plan: CheckPlan, observer: str) -> None:
    """No port nobody declared has the IsSM bit (``saquery -s``): a second SM on a production
    fabric is named. In the lab a lab host's IsSM port that answers no SMInfo is a ping
    server (``fabric.verify.sm.LAB_PING_SERVER``)."""
    found = undeclared(plan.declared_sms, _seen(facts, plan), _guids(facts, plan), _lab_hosts(plan))
    problem = judge_undeclared(found)
    note = f" ({LAB_PING_SERVER})" if plan.simulated else ""
    assert problem is None, f"seen from {observer}: {problem}{note}"


def test_no_unmanaged_opensm(host, sm_free_host: str) -> None:
    """No OpenSM runs on a host railyard was not told to run one on (an SM that is external
    or a switch's is not railyard's to start)."""
    result = host.run("pgrep -a -x opensm")
    if result.rc not in (0, 1):
        raise HarnessError(f"{sm_free_host}: pgrep exited {result.rc}: {result.stderr.strip()}")
    assert result.rc == 1, (
        f"{sm_free_host}: OpenSM runs ({result.stdout.strip()}), but no managed subnet manager "
        "is declared on this host; stop it, or declare it (mode managed) if railyard should run it"
    )


def test_host_sees_master(host, facts: Facts, plan: CheckPlan, fabric_host: str) -> None:
    """``sminfo`` on the host reaches the MASTER the observer sees."""
    info = facts.sminfo(fabric_host)
    assert info.ok and info.state == "MASTER", f"{fabric_host}: sminfo: {info.reason or info.state}"
    seen = facts.sminfo(_observer(plan))
    assert seen.ok, f"{plan.observer}: sminfo: {seen.reason}"
    assert (info.sm_lid, info.sm_guid) == (seen.sm_lid, seen.sm_guid), (
        f"{fabric_host}: master SM at lid {info.sm_lid} ({info.sm_guid}), but {plan.observer} "
        f"sees lid {seen.sm_lid} ({seen.sm_guid})"
    )
