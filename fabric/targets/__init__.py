"""The one registry of targets: each lives in its own folder, ``fabric/targets/<name>/``.

A target's parts are modules named by their role, found by that name (``part``), so adding
a target is a new folder and one line in :data:`TARGETS`:

- ``component.py`` (required): the :class:`fabric.components.target.TargetCluster` subclass
  named in :data:`TARGETS` (targets layer; Pulumi and the cloud SDK load only here);
- ``rules.py`` (required): ``RULES``, the target's spec rules, run by ``validate`` and again
  before a component creates anything (spec layer: imports ``fabric.spec``, base and its
  own ``catalog`` only);
- ``section.py``: ``MODEL``, the pydantic model of the spec's section named as the target
  (``aws:``), which ``fabric.spec.models`` adds to ClusterSpec (spec layer: imports
  ``fabric.spec.blocks`` only);
- ``catalog.py``: the target's machine-type facts (spec layer);
- ``model.py``: facts the later steps compute from the spec for this target (model layer);
- ``hostkeys.py``: where the target's host keys come from (inventory layer);
- ``handoff.py``: its roles' variables and the job environment it needs (handoff layer);
- ``checks.py``: the target's own check families and their parameters (verify layer);
- ``placement.py``: ``graph(readings, region, run)``, where the provider placed the nodes
  from what each printed for the model's ``PLACEMENT_COMMAND`` (verify layer).

This module imports nothing of the project: the layers find a target's part through
:func:`part` (``tests/unit/test_import_graph.py`` counts each ``part(..., "<role>")`` call as
an import of every target's ``<role>`` module, so the layering still holds).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import ModuleType
from typing import Any


@dataclass(frozen=True)
class Target:
    """A registered target: its component class (in ``component.py``) and the optional
    parts its folder has besides ``component`` and ``rules``."""

    component: str
    parts: frozenset[str] = frozenset()
    #: Its nodes are this machine's containers on ibsim, built by the lab itself: lab
    #: addresses only, no ConnectX to configure, as many hosts as the lab's subnet holds.
    one_machine: bool = False
    #: A ``lab:`` block marks its nodes as a lab's simulated hardware (a bare-metal stack over
    #: a lab datacenter, an existing stack adopting lab nodes).
    lab_block: bool = False
    #: It adopts nodes that already run: nothing is provisioned, and a fabric declared without
    #: a topology or cables expects no cable.
    adopts: bool = False
    #: Its component writes ``state/<stack>/inventory.yml`` itself and removes it on its own
    #: delete, so the hand-off's delete leaves it (the lab's ``LabFile``).
    keeps_inventory: bool = False


#: Every target, one line each; the folder ``fabric/targets/<name>/`` holds its parts.
TARGETS: dict[str, Target] = {
    "lab": Target("LabCluster", one_machine=True, keeps_inventory=True),
    "baremetal": Target("BaremetalCluster", lab_block=True),
    "existing": Target("ExistingCluster", lab_block=True, adopts=True),
    "aws": Target(
        "AwsCluster",
        frozenset({"section", "catalog", "model", "hostkeys", "handoff", "checks", "placement"}),
    ),
    "gcp": Target(
        "GcpCluster",
        frozenset({"section", "catalog", "model", "hostkeys", "handoff", "checks", "placement"}),
    ),
    "azure": Target(
        "AzureCluster",
        frozenset({"section", "catalog", "model", "handoff", "checks", "placement"}),
    ),
}

#: The parts every target has.
REQUIRED = ("component", "rules")
#: The roles a part may have, the layer each belongs to (docs/ARCHITECTURE.md).
ROLES = (
    "component",
    "rules",
    "section",
    "catalog",
    "model",
    "hostkeys",
    "handoff",
    "checks",
    "placement",
)


def line_of(target: str) -> Target:
    """The registry line of ``target`` (a line of no parts and no flags when it is none: the
    spec checker reports an unknown target, later steps never see one)."""
    return TARGETS.get(target, _UNKNOWN)


_UNKNOWN = Target("")


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


def hook(target: str, role: str, name: str, default: Any = None) -> Any:
    """What ``target``'s ``role`` part says under ``name`` (a function or a value), or
    ``default`` when the target is not registered, has no such part, or its part does not
    define ``name``. Shared code asks a target everything through here, never by its name."""
    if not has_part(target, role):
        return default
    return getattr(part(target, role), name, default)


def hooks(role: str, name: str) -> list[tuple[str, Any]]:
    """(target, what it says under ``name``) for each registered target whose ``role`` part
    defines ``name``, in table order."""
    return [(t, getattr(m, name)) for t, m in parts(role) if hasattr(m, name)]


def parts(role: str) -> list[tuple[str, ModuleType]]:
    """Each registered target that has a ``role`` module, with that module, in table order."""
    return [(name, part(name, role)) for name in TARGETS if has_part(name, role)]
