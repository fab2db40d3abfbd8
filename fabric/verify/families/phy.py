"""The ``phy`` family: ``ibdiagnet --get_phy_info`` from the discovery host."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fabric.verify.families.base import Family, Source, host_list_fixture

if TYPE_CHECKING:
    from fabric.verify.plan import CheckPlan

#: Where ``check --plan`` lists this family.
ORDER = 20


def _phy_hosts(plan: CheckPlan) -> list[str]:
    """Where ``ibdiagnet --get_phy_info`` scans the fabric from: the discovery host."""
    return [plan.discovery_host] if plan.discovery_host else []


def _why(plan: CheckPlan) -> str | None:
    if plan.simulated:
        return (
            "target lab: ibsim models no PHY registers or BER, so ibdiagnet --get_phy_info "
            "has nothing to read"
        )
    return None if plan.phy_hosts else "no subnet manager host selected to run ibdiagnet from"


SOURCES: dict[str, Source] = {"phy_hosts": _phy_hosts}
FAMILIES = (
    Family(
        "phy",
        ("test_ibdiagnet_phy",),
        "phy_hosts",
        _why,
        fixtures=(host_list_fixture("phy_host", "phy_hosts"),),
    ),
)
