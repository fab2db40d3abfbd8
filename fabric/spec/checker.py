"""The :class:`Checker` every spec rule reads a ClusterSpec through.

A rule records problems with :meth:`Checker.add`. A spec whose fields failed validation
can still be checked: fabric.spec.load builds a best-effort spec with placeholders for
the failed fields and passes their paths as ``unknown``. A finding is then dropped when
its path lies inside an unknown field (that field is already reported) or when it reads
one (it would describe a placeholder).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from fabric.hostlist import HostlistError, compress, expand
from fabric.spec.problems import Problem

if TYPE_CHECKING:  # the models run the rules in ClusterSpec's validator
    from fabric.spec.models import ClusterSpec, NodeGroup

#: Read paths: ``[*]`` stands for every index of a list.
HOST_NAMES = "nodes[*].names"


def path_parts(path: str) -> tuple[str, ...]:
    """``nodes[0].hcas[*].rail`` -> ``("nodes", "[0]", "hcas", "[*]", "rail")``."""
    return tuple(re.findall(r"\[[^\]]*\]|[^.\[\]]+", path))


def _prefix(short: tuple[str, ...], long: tuple[str, ...]) -> bool:
    """Whether ``short`` starts ``long``; ``[*]`` on either side matches any index."""
    if len(short) > len(long):
        return False
    return all(
        a == b or "[*]" in (a, b) and a[0] == b[0] == "[" for a, b in zip(short, long, strict=False)
    )


@dataclass
class Checker:
    """The spec under check, its declared hosts, and the problems found so far."""

    spec: ClusterSpec
    #: Paths whose values are placeholders for fields that failed validation.
    unknown: frozenset[tuple[str, ...]] = frozenset()
    hosts: dict[str, int] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    #: False when some node group's host list is unusable: references to hosts are then
    #: not reported as undeclared, as they may be in that group.
    all_hosts_known: bool = True

    def known(self, *paths: str) -> bool:
        """Whether no value in or around ``paths`` is a placeholder."""
        for path in map(path_parts, paths):
            if any(_prefix(u, path) or _prefix(path, u) for u in self.unknown):
                return False
        return True

    def add(self, path: str, message: str, reads: Iterable[str] = ()) -> None:
        """Record a problem at ``path`` unless it lies in, or reads, an unknown field."""
        parts = path_parts(path)
        if self.known(*reads) and not any(_prefix(u, parts) for u in self.unknown):
            self.problems.append(Problem(path, message))

    def host_groups(self) -> list[tuple[str, NodeGroup]]:
        """Each declared host with its node group, in declaration order."""
        return [(host, self.spec.nodes[index]) for host, index in self.hosts.items()]

    def declared(self) -> str:
        """The declared hosts as a compact host list, for messages."""
        return compress(self.hosts) or "(none)"

    def check_host(self, path: str, host: str) -> None:
        """Record a problem if ``host`` is not a declared node."""
        if host not in self.hosts and self.all_hosts_known:
            self.add(path, f"{host!r} is not a declared host; declared hosts: {self.declared()}")

    def check_host_list(self, path: str, expr: str) -> None:
        """Record a problem if host list ``expr`` is malformed or names undeclared hosts."""
        if expr == "ALL":
            return
        try:
            names = expand(expr)
        except HostlistError as error:
            self.add(path, f"{error}")
            return
        unknown = [name for name in names if name not in self.hosts]
        if not names:
            self.add(path, f"host list {expr!r} names no hosts; use ALL or e.g. gpu[01-04]")
        elif unknown and self.all_hosts_known:
            self.add(
                path,
                f"{compress(unknown)!r} in {expr!r} are not declared hosts;"
                f" declared hosts: {self.declared()}",
            )


def in_range(value: int, bounds: tuple[int, int]) -> bool:
    return bounds[0] <= value <= bounds[1]


Rule = Callable[[Checker], None]
