"""The ``sm`` family: every declared subnet manager answers with its priority and state, one
master, no undeclared SM, and every fabric host sees the master."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fabric.verify.families.base import Family, Fixture, Source, host_list_fixture
from fabric.verify.families.params import SubnetManagerExpect

if TYPE_CHECKING:
    from fabric.verify.plan import CheckPlan

#: Where ``check --plan`` lists this family.
ORDER = 40


def _subnet_managers(plan: CheckPlan) -> list[SubnetManagerExpect]:
    """The declared subnet managers each checked on its own: external and switch SMs,
    and managed ones on selected hosts."""
    return [s for s in plan.declared_sms if s.mode != "managed" or s.host in plan.hosts]


def _sm_free_hosts(plan: CheckPlan) -> list[str]:
    """Selected fabric hosts railyard runs no OpenSM on: none may run one."""
    return [h for h in plan.fabric_hosts if h not in plan.sm_hosts]


def _why(plan: CheckPlan) -> str | None:
    if not plan.subnet_managers:
        return "no subnet manager declared (or none on the selected hosts)"
    if plan.observer is None:
        return "no fabric host selected to query the subnet managers from"
    return None


SOURCES: dict[str, Source] = {
    "subnet_managers": _subnet_managers,
    "sm_free_hosts": _sm_free_hosts,
}
FAMILIES = (
    Family(
        "sm",
        (
            "test_sm_answers",
            "test_sm_priority",
            "test_single_master",
            "test_master_is_declared",
            "test_standbys_declared",
            "test_no_undeclared_sm",
            "test_no_unmanaged_opensm",
            "test_host_sees_master",
        ),
        "subnet_managers",
        _why,
        fixtures=(
            Fixture(
                "sm",
                lambda plan: plan.subnet_managers,
                ident=lambda s: s.id,
                on=lambda plan, s: s.host if s.mode == "managed" else plan.observer,
                subject=lambda _, s: f"host:{s.host}" if s.mode == "managed" else f"sm:{s.id}",
            ),
            host_list_fixture("sm_free_host", "sm_free_hosts"),
            host_list_fixture("fabric_host", "fabric_hosts"),
            Fixture(
                "observer",
                lambda plan: [plan.observer] if plan.observer else [],
                subject=lambda _, __: "fabric",
            ),
        ),
    ),
)
