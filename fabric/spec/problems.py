"""What is wrong with a spec: :class:`Problem` (a path and a message) and :class:`SpecError`.

Every check of the spec package reports problems: pydantic field errors turned readable
(fabric.spec.load), the cross-field rules (fabric.spec.rules), the target rules
(fabric.spec.targets, each target's fabric/targets/<name>/rules.py). A path reads like the YAML: ``nodes[0].hcas[1].rate_gbps``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from fabric.redact import redact


@dataclass(frozen=True)
class Problem:
    """One problem of a spec: where it is and what to do about it.

    Unpacks like the ``(path, message)`` pair it replaces: ``path, message = problem``.
    Both go through the secret filter (fabric.redact): whatever field a secret landed in,
    no problem quotes it.
    """

    path: str
    message: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "path", redact(self.path))
        object.__setattr__(self, "message", redact(self.message))

    def __iter__(self) -> Iterator[str]:
        return iter((self.path, self.message))

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


class SpecError(ValueError):
    """A spec that cannot be used, with every problem found.

    Raised by loading (fabric.spec.load), by ClusterSpec's validator when a cross-field
    rule breaks (pydantic wraps it in a ValidationError), and by the Pulumi components.
    ``source`` names the file the spec came from, when known.
    """

    def __init__(
        self, problems: Iterable[Problem | tuple[str, str]], source: str | None = None
    ) -> None:
        found = [p if isinstance(p, Problem) else Problem(*p) for p in problems]
        super().__init__(found)
        self.problems: list[Problem] = found
        self.source = source

    def __str__(self) -> str:
        return "\n".join(map(str, self.problems))
