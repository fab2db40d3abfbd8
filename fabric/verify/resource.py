"""``Verification``: the checks' Pulumi dynamic resource, which runs the check suite as the last step of
``pulumi up`` and fails the update with a short summary (failed checks by name).

Make it depend on the hand-off (``opts=ResourceOptions(depends_on=[handoff])``). It runs on
create and whenever an input changes (the spec, the inventory, the hand-off's recap, or the
check suite's content hash), like the hand-off does (:class:`fabric.components.rerun.RerunProvider`).

Stacks made before this module moved here store its provider as
``fabric.components.verify.VerificationProvider``: that alias module stays until they are gone.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pulumi

from fabric.components import rerun
from fabric.state import REPO_ROOT, StateLayout

RERUN_ON = ("stack", "spec_json", "inventory", "after", "content_hash", "limit")
OUTPUTS = ("passed", "failed", "report_dir", "summary")


def content_hash(root: Path = REPO_ROOT) -> str:
    """sha256 of the check suite and the verify package (a change re-runs the checks); this
    module, the Pulumi resource, is left out: it decides nothing about what is checked."""
    return rerun.content_hash(
        root, ("fabric/verify",), pattern="*.py", ignored_parts=frozenset({"resource.py"})
    )


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
        raise RuntimeError(
            f"verification failed: {outcome.summary()}\nreports: {outcome.report_dir}"
        )
    return {
        "passed": sum(1 for r in outcome.results if r.outcome == "passed"),
        "failed": 0,
        "report_dir": outcome.report_dir,
        "summary": outcome.summary(),
    }


class VerificationProvider(rerun.RerunProvider):
    """The dynamic provider behind :class:`Verification`."""

    RERUN_ON = RERUN_ON
    ID_PREFIX = "verify"

    def run(self, props: dict[str, Any]) -> dict[str, Any]:
        return run(props)

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        """Verification only reads the hosts; remove its reports (when they are the default ones)."""
        import shutil

        reports = StateLayout(props["stack"]).reports
        if props.get("report_dir") in (None, str(reports.resolve())):
            shutil.rmtree(reports, ignore_errors=True)


class Verification(rerun.RerunResource):
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
        }
        super().__init__(VerificationProvider(), name, props, OUTPUTS, opts)
