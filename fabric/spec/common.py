"""What the target rules share: where a group's role is read, per-host entries missing from
a section, GPU types against a machine catalog, stack config values that differ from the spec.

Imports nothing that runs rules, so each ``fabric/targets/<name>/rules.py`` may use it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fabric.spec.checker import Checker
from fabric.spec.problems import Problem

#: Where a node group's role is read.
ROLES_READ = "nodes[*].role"


#: More hosts than this missing a per-host value are one problem for the section, not one each.
MISSING_ONE_BY_ONE = 3


def missing_per_host(c: Checker, section: str, hosts: list[str], why: str, entry: str) -> None:
    """Report ``hosts`` lacking their entry in the mapping ``section``: one problem per host,
    or, when more than MISSING_ONE_BY_ONE lack it (a whole section's worth), one problem that
    names them as a host list and shows how to fill it (``entry``: one entry, ``{host}``)."""
    if len(hosts) <= MISSING_ONE_BY_ONE:
        for host in hosts:
            c.add(f"{section}.{host}", why)
        return
    from fabric.hostlist import compress

    first = entry.replace("{host}", hosts[0])
    c.add(
        section,
        f"{len(hosts)} nodes have no entry ({compress(hosts)}): {why}; add one per node, e.g. "
        f"{section.split('.')[-1]}: {{{first}, ...}}",
    )


def check_gpu_type(c: Checker, index: int, machine: str, gpu_type: str | None) -> None:
    """nodes[index].gpu_type names the GPUs the catalog lists for its machine type."""
    group = c.spec.nodes[index]
    if group.gpu_type is None or (gpu_type or "").lower() == group.gpu_type.lower():
        return
    fix = f"set gpu_type: {gpu_type}" if gpu_type else "remove gpu_type"
    has = f"{gpu_type} GPUs" if gpu_type else "no GPUs"
    c.add(
        f"nodes[{index}].gpu_type",
        f"{group.gpu_type!r}, but {machine} has {has}; {fix}, or change instance_type",
        reads=[f"nodes[{index}].instance_type"],
    )


def differing(config: Mapping[str, Any], wanted: list[tuple[str, str, Any]]) -> list[Problem]:
    """A problem for each ``(config key, spec field, value)`` the stack config sets otherwise."""
    return [
        Problem(
            f"config {key}",
            f"{str(config[key])!r} differs from {field} {value!r} in railyard:cluster;"
            " set them equal",
        )
        for key, field, value in wanted
        if key in config and str(config[key]) != value
    ]
