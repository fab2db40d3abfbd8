"""Declared vs discovered fabric: ``ibnetdiscover`` on an SM host, parsed, diffed
(``fabric.topology.diff``) against the declared graph (``simulated(declared)`` in the lab).

One check per declared cable: missing, miscabled, wrong speed or wrong width fails with the
diff's message naming switch, port, host and HCA; one check for cables found but never declared.
"""

from __future__ import annotations

import pytest

from fabric.topology.diff import Discrepancy
from fabric.verify.discovery import EXTRA, describe, findings_for
from fabric.verify.facts import Facts
from fabric.verify.plan import CheckPlan, DeclaredLink

pytestmark = pytest.mark.family("discovery")


def _findings(facts: Facts, plan: CheckPlan) -> dict[str, list[Discrepancy]]:
    return facts._once(("findings",), lambda: findings_for(plan, facts.discovered()))


def test_declared_link_discovered(
    host, facts: Facts, plan: CheckPlan, declared_link: DeclaredLink
) -> None:
    """The declared cable is up, between the declared ports, at the declared width and speed."""
    problems = _findings(facts, plan).get(declared_link.id, [])
    assert not problems, describe(problems)


def test_no_undeclared_links(host, facts: Facts, plan: CheckPlan, observer: str) -> None:
    """ibnetdiscover finds no cable the spec does not declare."""
    extra = _findings(facts, plan).get(EXTRA, [])
    assert not extra, describe(extra)
