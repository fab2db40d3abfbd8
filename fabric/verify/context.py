"""Where a stack's verification inputs live: inventory, known_hosts, spec; host selection."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from fabric.spec import ClusterSpec
from fabric.state import REPO_ROOT, StateLayout, stack_file


class ContextError(ValueError):
    """The inventory or spec of a stack cannot be found or read."""


def inventory_path(stack: str) -> Path:
    """Return the inventory the stack wrote (``StateLayout(stack).inventory``)."""
    return StateLayout(stack).inventory


def stack_of_inventory(inventory: Path) -> str:
    """Return the stack name of ``state/<stack>/inventory.yml``."""
    return inventory.resolve().parent.name


def spec_path_for(inventory: Path, root: Path = REPO_ROOT) -> Path:
    """Return ``Pulumi.<stack>.yaml`` for an inventory under ``state/<stack>/``."""
    return stack_file(stack_of_inventory(inventory), root)


def load_cluster_spec(path: Path) -> ClusterSpec:
    """Load the spec from a stack file or a plain spec file."""
    if not path.is_file():
        raise ContextError(
            f"spec file {path} not found; pass --spec FILE or use state/<stack>/inventory.yml"
        )
    from fabric.spec import load_spec

    return load_spec(path)


def load_inventory(path: Path) -> dict[str, Any]:
    """Read a YAML inventory written by ``fabric.inventory``."""
    if not path.is_file():
        raise ContextError(f"inventory {path} not found; bring the stack up first (make up)")
    data = yaml.safe_load(path.read_text())
    if not isinstance(data, dict) or "all" not in data:
        raise ContextError(f"{path}: not a YAML inventory with an 'all' group")
    return data


def inventory_hosts(inventory: dict[str, Any]) -> list[str]:
    """Every host of the inventory's ``all`` group, in file order."""
    return list((inventory["all"].get("hosts") or {}).keys())


def inventory_groups(inventory: dict[str, Any]) -> dict[str, list[str]]:
    """Group name -> hosts (one level of children, as ``fabric.inventory`` writes it)."""
    groups = {"all": inventory_hosts(inventory)}
    for name, group in (inventory["all"].get("children") or {}).items():
        groups[name] = list(((group or {}).get("hosts") or {}).keys())
    return groups


def select_hosts(patterns: str | None, inventory: dict[str, Any]) -> list[str]:
    """Resolve ``ansible://all``, ``ansible://gpu01,ansible://sm``, ``gpu01,sm1`` or a group name."""
    everyone = inventory_hosts(inventory)
    if not patterns:
        return everyone
    groups = inventory_groups(inventory)
    chosen: list[str] = []
    for raw in patterns.split(","):
        name = raw.strip().removeprefix("ansible://")
        if not name:
            continue
        members = groups.get(name, [name] if name in everyone else None)
        if members is None:
            raise ContextError(
                f"host or group {name!r} is not in the inventory; known: {', '.join(everyone)}"
            )
        chosen += [h for h in members if h not in chosen]
    return [h for h in everyone if h in chosen]
