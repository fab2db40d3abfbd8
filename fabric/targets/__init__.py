"""The one registry of targets: each lives in its own folder, ``fabric/targets/<name>/``.

A target's parts are modules named by their role, found by that name (``part``), so adding
a target is a new folder and one line in :data:`TARGETS`:

- ``component.py`` (required): the :class:`fabric.components.target.TargetCluster` subclass
  named in :data:`TARGETS` (targets layer; Pulumi and the cloud SDK load only here);
- ``rules.py`` (required): ``RULES``, the target's spec rules, run by ``validate`` and again
  before a component creates anything (spec layer: imports ``fabric.spec``, base and its
  own ``catalog`` only);
- ``catalog.py``: the target's machine-type facts (spec layer);
- ``model.py``: facts the later steps compute from the spec for this target (model layer);
- ``hostkeys.py``: where the target's host keys come from (inventory layer);
- ``handoff.py``: its roles' variables and the job environment it needs (handoff layer);
- ``checks.py``: the target's own check families and their parameters (verify layer).

This module imports nothing of the project: the layers find a target's part through
:func:`part` (``tests/unit/test_import_graph.py`` counts each ``part(..., "<role>")`` call as
an import of every target's ``<role>`` module, so the layering still holds).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import ModuleType


@dataclass(frozen=True)
class Target:
    """A registered target: its component class (in ``component.py``) and the optional
    parts its folder has besides ``component`` and ``rules``."""

    component: str
    parts: frozenset[str] = frozenset()


#: Every target, one line each; the folder ``fabric/targets/<name>/`` holds its parts.
TARGETS: dict[str, Target] = {
    "lab": Target("LabCluster"),
    "baremetal": Target("BaremetalCluster"),
    "existing": Target("ExistingCluster"),
    "aws": Target("AwsCluster", frozenset({"catalog", "hostkeys", "handoff", "checks"})),
    "gcp": Target("GcpCluster", frozenset({"catalog", "model", "hostkeys", "handoff", "checks"})),
}

#: The parts every target has.
REQUIRED = ("component", "rules")
#: The roles a part may have, the layer each belongs to (docs/ARCHITECTURE.md).
ROLES = ("component", "rules", "catalog", "model", "hostkeys", "handoff", "checks")


def has_part(target: str, role: str) -> bool:
    """Whether ``target`` is registered and has a ``role`` module."""
    entry = TARGETS.get(target)
    return entry is not None and (role in REQUIRED or role in entry.parts)


def part(target: str, role: str) -> ModuleType:
    """The module ``fabric.targets.<target>.<role>``; KeyError when it has none."""
    if role not in ROLES:
        raise ValueError(f"{role!r} is no target part; parts are {', '.join(ROLES)}")
    if not has_part(target, role):
        raise KeyError(f"target {target!r} has no {role} part")
    return importlib.import_module(f"{__name__}.{target}.{role}")


def parts(role: str) -> list[tuple[str, ModuleType]]:
    """Each registered target that has a ``role`` module, with that module, in table order."""
    return [(name, part(name, role)) for name in TARGETS if has_part(name, role)]
