"""What the target rules share: where a group's role is read, per-host entries missing from
a section, the walk over compute groups' catalogued machine types and their GPU counts and
types, stack config values that differ from the spec.

Imports nothing that runs rules, so each ``fabric/targets/<name>/rules.py`` may use it."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Protocol, TypeVar

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


class CatalogMachine(Protocol):
    """What a target's machine catalog says of a machine type (its ``catalog.py``)."""

    @property
    def name(self) -> str: ...

    @property
    def gpus(self) -> int: ...

    @property
    def gpu_type(self) -> str | None: ...


_Machine = TypeVar("_Machine", bound=CatalogMachine)


def catalogued_compute(
    c: Checker,
    lookup: Callable[[str], _Machine | None],
    missing: str,
    unknown: str | None,
    unknown_reads: Sequence[str] = (),
) -> Iterator[tuple[int, _Machine]]:
    """Each compute group whose machine type (``instance_type``) ``lookup`` finds in the
    catalog: its index and the catalog's entry, in declaration order.

    A compute group with no type gets the problem ``missing``; one the catalog lacks gets
    ``'<type>' <unknown>`` (reading ``unknown_reads``), or none when ``unknown`` is None. Lazy:
    each problem is recorded as the walk reaches its group, so the caller's own problems for a
    group stay in declaration order with these."""
    for index, group in enumerate(c.spec.nodes):
        path = f"nodes[{index}]"
        if group.role != "compute" or not c.known(f"{path}.role"):
            continue
        if group.instance_type is None:
            c.add(f"{path}.instance_type", missing)
            continue
        known = lookup(group.instance_type)
        if known is None:
            if unknown is not None:
                c.add(
                    f"{path}.instance_type",
                    f"{group.instance_type!r} {unknown}",
                    reads=unknown_reads,
                )
            continue
        yield index, known


def check_machine(c: Checker, index: int, known: CatalogMachine) -> None:
    """nodes[index] declares the GPU count and GPU type its catalogued machine type has."""
    group = c.spec.nodes[index]
    if group.gpus and group.gpus != known.gpus:
        c.add(
            f"nodes[{index}].gpus",
            f"{group.gpus} GPUs, but {known.name} has {known.gpus}",
            reads=[f"nodes[{index}].instance_type"],
        )
    check_gpu_type(c, index, known.name, known.gpu_type)


def check_head_node(c: Checker, example: str, reach: str = "public address") -> None:
    """A cloud cluster declares a node that is not a compute node: the compute nodes get no
    ``reach``, so the controller reaches them through it; ``example`` is the entry suggested."""
    if not any(group.role != "compute" for group in c.spec.nodes) and c.known(ROLES_READ):
        c.add("nodes", f"declare a head node, e.g. - {example}; the compute nodes have no {reach}")
