"""Declared vs discovered fabric: ``ibnetdiscover`` on an SM host, parsed, compared per cable.

One check per declared cable (missing, miscabled or wrong speed fails, naming both ends),
and one for cables found that were never declared.
"""

from __future__ import annotations

import pytest

from fabric.verify.discovery import Finding, findings_for
from fabric.verify.facts import Facts
from fabric.verify.plan import CheckPlan, DeclaredLink

pytestmark = pytest.mark.family("discovery")


def _findings(facts: Facts, plan: CheckPlan) -> dict[str, list[Finding]]:
    return facts._once(("findings",), lambda: findings_for(plan, facts.discovered()))


def test_declared_link_discovered(host, facts: Facts, plan: CheckPlan, declared_link: DeclaredLink) -> None:
    """The declared cable is up, between the declared ports, at the declared width and speed."""
    problems = _findings(facts, plan).get(declared_link.id, [])
    assert not problems, "; ".join(f.message for f in problems)


def test_no_undeclared_links(host, facts: Facts, plan: CheckPlan, observer: str) -> None:
    """ibnetdiscover finds no cable the spec does not declare."""
    extra = _findings(facts, plan).get("undeclared", [])
    assert not extra, "; ".join(f.message for f in extra)
