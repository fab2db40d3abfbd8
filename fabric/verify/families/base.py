"""A check family as one unit: what it checks, over which parameters, why it is not generated,
and how the check suite parametrises its checks (its fixtures)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fabric.verify.plan import CheckPlan

#: A named value of a plan (a parameter source or a fact several families share), computed
#: once per plan from it: ``ib_pairs``, ``observer``.
Source = Callable[["CheckPlan"], Any]
#: Runs a command on a host and returns its standard output.
Run = Callable[[str], str]


@dataclass(frozen=True)
class Fixture:
    """A parameter fixture of the suite (``fabric/verify/checks/conftest.py``): its values
    from the plan, each value's test id, the host its check runs on, the report's subject
    (None where the check records its own), the xdist group when not the host's (a pair's
    server), and ``probe``: a look at the value's host that returns why the value does not
    apply (None: it does), run once before the checks (the RoCE QoS family's ConnectX)."""

    name: str
    values: Callable[[CheckPlan], list[Any]]
    ident: Callable[[Any], str] = str
    on: Callable[[CheckPlan, Any], str | None] = lambda _, value: value
    subject: Callable[[CheckPlan, Any], str | None] = lambda _, value: f"host:{value}"
    group: Callable[[Any], str] | None = None
    probe: Callable[[Run, Any], str | None] | None = None


@dataclass(frozen=True)
class Family:
    """A check family: its checks, the parameter source they run over (``source``, a name of
    the plan), the part of it they keep (``select``), why the family is not generated for a
    plan (``why_not``: None when it is), and the suite's fixtures its checks take."""

    name: str
    checks: tuple[str, ...]
    source: str
    why_not: Callable[[CheckPlan], str | None] = lambda _: None
    select: Callable[[Any], bool] | None = None
    fixtures: tuple[Fixture, ...] = ()
    params: Callable[[CheckPlan], list[Any]] | None = None

    def values(self, plan: CheckPlan) -> list[Any]:
        """The parameters the family runs over: ``params`` where given, else its source's,
        narrowed by ``select``."""
        if self.params is not None:
            return self.params(plan)
        values = plan.params(self.source)
        return [v for v in values if self.select(v)] if self.select else values


def host_fixture(name: str, family: str) -> Fixture:
    """A fixture over a family's parameters, each naming its ``host`` and ``id``: a target's
    per-instance families (``efa_host``)."""
    return Fixture(
        name,
        lambda plan: plan.family_params(family),
        ident=lambda value: value.id,
        on=lambda _, value: value.host,
        subject=lambda _, value: f"host:{value.host}",
    )


def port_fixture(name: str, source: str) -> Fixture:
    """A fixture over HCA ports (``fabric.model.ports.HcaPort``) of a plan's source."""
    return Fixture(
        name,
        lambda plan: plan.params(source),
        ident=lambda port: port.id,
        on=lambda _, port: port.host,
        subject=lambda _, port: f"port:{port.id}",
    )


def host_list_fixture(name: str, source: str, subject: str | None = None) -> Fixture:
    """A fixture over host names of a plan's source, each check on its host; the subject is
    the host, or ``subject`` for a fabric-wide check."""
    return Fixture(
        name,
        lambda plan: plan.params(source),
        subject=(lambda _, host: f"host:{host}") if subject is None else (lambda _, __: subject),
    )


def pair_fixture(name: str, values: Callable[[CheckPlan], list[Any]], served: bool) -> Fixture:
    """A fixture over host pairs (``source->target``), each check on its source; ``served``:
    the check starts a server on the target, so items are grouped by the target (one server
    per target at a time)."""
    return Fixture(
        name,
        values,
        ident=lambda pair: pair.id,
        on=lambda _, pair: pair.source,
        subject=lambda _, pair: f"pair:{pair.id}",
        group=(lambda pair: f"target-{pair.target}") if served else None,
    )
