"""Fault injection against a running lab stack: each fault makes the named check fail, and
restoring it makes the check pass again.

Needs ``RAILYARD_FAULT_STACK`` (a lab stack that is up: state/<stack>/inventory.yml) and, for
link faults, an ibsim console FIFO (``state/<stack>/ibsim.console``; see fabric.verify.faults).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from fabric.verify import context
from fabric.verify.faults import IbsimConsole, start_sm, stop_sm
from fabric.verify.plan import CheckPlan
from fabric.verify.runner import run_checks

pytestmark = pytest.mark.integration

STACK = os.environ.get("RAILYARD_FAULT_STACK")
SPEC = os.environ.get("RAILYARD_FAULT_SPEC")


@pytest.fixture(scope="module")
def plan() -> CheckPlan:
    if not STACK:
        pytest.skip("set RAILYARD_FAULT_STACK to a running lab stack")
    inventory = context.inventory_path(STACK)
    spec = context.load_cluster_spec(Path(SPEC) if SPEC else context.spec_path_for(inventory))
    return CheckPlan(spec=spec, hosts=context.inventory_hosts(context.load_inventory(inventory)))


def _failed(limit: str | None = None) -> dict[str, str]:
    outcome = run_checks(STACK, limit=limit, spec=Path(SPEC) if SPEC else None, quiet=True)  # type: ignore[arg-type]
    return {f"{r.name}[{r.param}]": r.message for r in outcome.results if r.failed}


def _testinfra(name: str):  # type: ignore[no-untyped-def]
    import testinfra

    return testinfra.get_host(f"ansible://{name}", ansible_inventory=str(context.inventory_path(STACK)))  # type: ignore[arg-type]


def test_unlinked_port_names_node_hca_switch_and_port(plan: CheckPlan) -> None:
    console = IbsimConsole(context.state_dir(STACK) / "ibsim.console", context.state_dir(STACK) / "logs" / "ibsim.log")  # type: ignore[arg-type]
    if not console.available():
        pytest.skip("the lab's ibsim has no console FIFO yet (see fabric.verify.faults)")
    port = plan.ib_ports[0]
    console.unlink(port.host, port.device, port.port)
    try:
        time.sleep(2)
        failed = _failed(limit=port.host)
        key = f"test_port_state_active[{port.id}]"
        assert key in failed
        assert all(s in failed[key] for s in (port.host, port.device, str(port.switch), f"port {port.switch_port}"))
    finally:
        console.link(port.host, port.device, port.port, str(port.switch), int(port.switch_port or 0))
    time.sleep(15)  # an OpenSM sweep brings the port back to Active
    assert not _failed(limit=port.host)


def test_stopped_master_sm_fails_then_standby_takes_over(plan: CheckPlan) -> None:
    master = max(plan.subnet_managers, key=lambda s: s.priority)
    sm_host = _testinfra(master.host)
    stop_sm(sm_host)
    try:
        failed = _failed()
        assert any(k.startswith(f"test_sm_answers[{master.host}]") for k in failed)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if not any(k.startswith("test_single_master") or k.startswith("test_host_sees_master") for k in _failed()):
                break
            time.sleep(10)
        else:
            pytest.fail("no standby took over within 120 s")
    finally:
        start_sm(sm_host)
    time.sleep(30)
    assert not any("test_sm_" in k or "master" in k for k in _failed())
