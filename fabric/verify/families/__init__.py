"""The family table: every check family as one unit (:class:`base.Family`: its checks, the
parameters they run over, why it is not generated, the suite's fixtures).

The general families live in this package, one module per family or small group, each with
``FAMILIES`` (its units, in the order ``check --plan`` lists them), ``ORDER`` (where that
module's families are listed) and ``SOURCES`` (the named values of a plan it adds, read as
``plan.<name>``). A module here is found by itself, so adding a family touches its module and
its testinfra file in ``fabric/verify/checks/``. A target's own families are its ``checks``
part's (``fabric/targets/<name>/checks.py``: ``FAMILIES``, ``PARAMETERS``, ``SELECT``,
``not_generated``, ``FIXTURES``), found through the registry and listed at :data:`TARGETS_ORDER`.
The check plan (``fabric.verify.plan``) and the suite's fixtures read this table only.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from fabric.targets import parts
from fabric.verify.families.base import Family, Fixture, Source

#: Where the targets' own families are listed among the package's (``ORDER`` of each module).
TARGETS_ORDER = 500


@dataclass(frozen=True)
class Table:
    """Every family in listing order, every named value of a plan, every suite fixture."""

    families: tuple[Family, ...]
    sources: Mapping[str, Source]
    fixtures: Mapping[str, Fixture]


def _package_modules() -> list[ModuleType]:
    """This package's modules, each imported."""
    return [importlib.import_module(f"{__name__}.{m.name}") for m in pkgutil.iter_modules(__path__)]


def _target_families(checks: ModuleType) -> list[Family]:
    """A target's ``checks`` part as family units."""

    def why(family: str) -> Callable[[Any], str | None]:
        return lambda plan: checks.not_generated(plan.spec, plan.params).get(family)

    return [
        Family(name, tuple(names), source, why(name), checks.SELECT.get(name))
        for name, (names, source) in checks.FAMILIES.items()
    ]


def _target_source(compute: Callable[[Any, list[str]], list[Any]]) -> Source:
    return lambda plan: compute(plan.spec, plan.hosts)


def _merge(into: dict[str, Any], name: str, value: Any, what: str) -> None:
    """Add ``name``; the same name twice is a mistake unless it is the same object."""
    if into.setdefault(name, value) is not value:
        raise ValueError(f"two check {what} named {name!r}")


def table() -> Table:
    """The table from this package's modules and every target's ``checks`` part."""
    modules = _package_modules()
    ranked: list[tuple[int, list[Family]]] = [
        (m.ORDER, list(m.FAMILIES)) for m in modules if hasattr(m, "FAMILIES")
    ]
    sources: dict[str, Source] = {}
    fixtures: dict[str, Fixture] = {}
    for module in modules:
        for name, source in getattr(module, "SOURCES", {}).items():
            _merge(sources, name, source, "parameter sources")
    for _, checks in parts("checks"):
        ranked.append((TARGETS_ORDER, _target_families(checks)))
        for name, compute in checks.PARAMETERS.items():
            _merge(sources, name, _target_source(compute), "parameter sources")
        for fixture in checks.FIXTURES:
            _merge(fixtures, fixture.name, fixture, "fixtures")
    families: dict[str, Family] = {}
    for _, group in sorted(ranked, key=lambda entry: entry[0]):
        for family in group:
            _merge(families, family.name, family, "families")
            for fixture in family.fixtures:
                _merge(fixtures, fixture.name, fixture, "fixtures")
    return Table(tuple(families.values()), sources, fixtures)


def checks_part(family: str) -> ModuleType:
    """The ``checks`` part of the target that has ``family``: its judging, for the family's
    testinfra module, which so names no target."""
    for _, checks in parts("checks"):
        if family in checks.FAMILIES:
            return checks
    raise KeyError(f"no target's checks part has the family {family!r}")
