"""``Verification``: a Pulumi dynamic resource that runs the check suite as the last step of
``pulumi up`` and fails the update with a short summary (failed checks by name).

Make it depend on the hand-off (``opts=ResourceOptions(depends_on=[handoff])``). It runs on
create and whenever an input changes (the spec, the inventory, the hand-off's recap, or the
check suite's content hash), like the hand-off does.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pulumi
from pulumi.dynamic import CreateResult, DiffResult, ResourceProvider, UpdateResult

REPO_ROOT = Path(__file__).resolve().parents[2]
RERUN_ON = ("stack", "spec_json", "inventory", "after", "content_hash", "limit")
OUTPUTS = ("passed", "failed", "report_dir", "summary")


def content_hash(root: Path = REPO_ROOT) -> str:
    """sha256 of the check suite and the verify package (a change re-runs the checks)."""
    digest = hashlib.sha256()
    for base in (root / "fabric" / "verify",):
        for path in sorted(p for p in base.rglob("*.py") if p.is_file()):
            digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def run(props: dict[str, Any]) -> dict[str, Any]:
    """Run the checks against the spec this update declares (``spec_json``, as the hand-off
    does; not the stack file, which ``pulumi up --config-file`` bypasses); raise with the
    summary when any fails."""
    import tempfile

    from fabric.verify.runner import run_checks

    with tempfile.TemporaryDirectory(prefix="railyard-verify-") as tmp:
        spec_file = Path(tmp) / "spec.json"
        spec_file.write_text(props["spec_json"])
        outcome = run_checks(props["stack"], limit=props.get("limit"), quiet=True, spec=spec_file)
    if not outcome.ok:
        raise RuntimeError(f"verification failed: {outcome.summary()}\nreports: {outcome.report_dir}")
    return {
        "passed": sum(1 for r in outcome.results if r.outcome == "passed"),
        "failed": 0,
        "report_dir": outcome.report_dir,
        "summary": outcome.summary(),
    }


class VerificationProvider(ResourceProvider):
    """The dynamic provider behind :class:`Verification`."""

    def create(self, props: dict[str, Any]) -> CreateResult:
        return CreateResult(id_=f"verify-{props['stack']}", outs={**props, **run(props)})

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        return DiffResult(changes=any(olds.get(k) != news.get(k) for k in RERUN_ON), replaces=[])

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        return UpdateResult(outs={**news, **run(news)})

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        """Verification only reads the hosts; remove its reports (when they are the default ones)."""
        import shutil

        from fabric.verify import context

        reports = context.state_dir(props["stack"]) / "reports"
        if props.get("report_dir") in (None, str(reports.resolve())):
            shutil.rmtree(reports, ignore_errors=True)


class Verification(pulumi.dynamic.Resource):
    """Run ``python -m fabric check`` for ``stack`` after the hand-off (``after``: its recap)."""

    passed: pulumi.Output[int]
    failed: pulumi.Output[int]
    report_dir: pulumi.Output[str]
    summary: pulumi.Output[str]

    def __init__(
        self,
        name: str,
        *,
        stack: str,
        spec_json: pulumi.Input[str],
        inventory: pulumi.Input[str],
        after: pulumi.Input[str] | None = None,
        limit: str | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        props: dict[str, Any] = {
            "stack": stack,
            "spec_json": spec_json,
            "inventory": inventory,
            "after": after,
            "limit": limit,
            "content_hash": content_hash(),
            **{k: None for k in OUTPUTS},
        }
        super().__init__(VerificationProvider(), name, props, opts)
