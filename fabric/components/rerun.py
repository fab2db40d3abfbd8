"""The base of railyard's run-on-change dynamic resources (the hand-off, the verification).

Such a resource does its work (:meth:`RerunProvider.run`) when it is created, and again only
when one of the inputs named in ``RERUN_ON`` changes; it never replaces itself, and its
outputs are its inputs plus what the run returned. ``content_hash`` folds the files that
decide what a run does (playbooks and roles, the check suite) into one input, so editing them
re-runs it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any, ClassVar

import pulumi
from pulumi.dynamic import CreateResult, DiffResult, ResourceProvider, UpdateResult


def content_hash(
    root: Path,
    dirs: Iterable[str],
    *,
    pattern: str = "*",
    ignored_parts: frozenset[str] = frozenset(),
    ignored_suffixes: frozenset[str] = frozenset(),
    end: bytes = b"",
) -> str:
    """sha256 over the relative path and the bytes of every file matching ``pattern`` under
    ``root/<dir>`` (sorted), skipping paths with a part in ``ignored_parts`` or a suffix in
    ``ignored_suffixes``; ``end`` closes each file's record."""
    digest = hashlib.sha256()
    for top in dirs:
        base = root / top
        if not base.is_dir():
            continue
        for path in sorted(p for p in base.rglob(pattern) if p.is_file()):
            rel = path.relative_to(root)
            if ignored_parts.intersection(rel.parts) or path.suffix in ignored_suffixes:
                continue
            digest.update(str(rel).encode() + b"\0" + path.read_bytes() + end)
    return digest.hexdigest()


class RerunProvider(ResourceProvider):
    """Create: run. Diff: a change when an input in ``RERUN_ON`` differs. Update: run again."""

    #: Inputs whose change re-runs the resource.
    RERUN_ON: ClassVar[tuple[str, ...]] = ()
    #: The resource id is ``<ID_PREFIX>-<stack>``.
    ID_PREFIX: ClassVar[str] = "rerun"

    def run(self, props: dict[str, Any]) -> dict[str, Any]:
        """Do the work for ``props``; return the outputs, or raise with a short summary."""
        raise NotImplementedError

    def changed_inputs(self, olds: dict[str, Any], news: dict[str, Any]) -> list[str]:
        """The inputs in ``RERUN_ON`` that differ between two property sets."""
        return [k for k in self.RERUN_ON if olds.get(k) != news.get(k)]

    def create(self, props: dict[str, Any]) -> CreateResult:
        return CreateResult(
            id_=f"{self.ID_PREFIX}-{props['stack']}", outs={**props, **self.run(props)}
        )

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        return DiffResult(changes=bool(self.changed_inputs(olds, news)), replaces=[])

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        return UpdateResult(outs={**news, **self.run(news)})


class RerunResource(pulumi.dynamic.Resource):
    """A resource of a :class:`RerunProvider`: ``inputs`` plus every name in ``outputs`` (unset)."""

    def __init__(
        self,
        provider: RerunProvider,
        name: str,
        inputs: dict[str, Any],
        outputs: Iterable[str],
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__(provider, name, {**inputs, **{k: None for k in outputs}}, opts)
