"""Check results read back from pytest's JUnit XML (with each check's recorded subject)."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

Outcome = Literal["passed", "failed", "error", "skipped"]


class CheckResult(BaseModel):
    """One check item: name, parameter id, outcome, message, subject (port:/pair:/link:/host:)."""

    name: str
    param: str
    outcome: Outcome
    message: str = ""
    subjects: list[str] = []
    seconds: float = 0.0

    @property
    def failed(self) -> bool:
        """True for failures and errors."""
        return self.outcome in ("failed", "error")


_NAME = re.compile(r"^(?P<name>[^\[]+)(?:\[(?P<param>.*)\])?$")


def _message(case: ET.Element) -> tuple[Outcome, str]:
    for tag, outcome in (("failure", "failed"), ("error", "error"), ("skipped", "skipped")):
        node = case.find(tag)
        if node is not None:
            text = node.get("message") or (node.text or "")
            return outcome, _first_assertion(text)  # type: ignore[return-value]
    return "passed", ""


def _first_assertion(text: str) -> str:
    """The assertion message without pytest's ``assert ...`` introspection tail."""
    text = text.removeprefix("AssertionError: ").removeprefix("Failed: ")
    return text.split("\nassert ")[0].split("\n  assert ")[0].strip()


def read_junit(path: Path) -> list[CheckResult]:
    """Parse a pytest JUnit XML file into results."""
    root = ET.parse(path).getroot()
    results = []
    for case in root.iter("testcase"):
        match = _NAME.match(case.get("name", ""))
        name, param = (match["name"], match["param"] or "") if match else (case.get("name", ""), "")
        outcome, message = _message(case)
        subjects = [p.get("value", "") for p in case.iter("property") if p.get("name") == "subject"]
        results.append(
            CheckResult(
                name=name,
                param=param,
                outcome=outcome,
                message=message,
                subjects=subjects,
                seconds=float(case.get("time") or 0),
            )
        )
    return results


def summary(results: list[CheckResult], causes: list | None = None) -> str:
    """Root causes first, then failures no cause explains, then checks that could not run
    (harness or tool errors, never counted as fabric failures); for Pulumi and the CLI.

    ``causes``: ``fabric.verify.causes.Cause`` list found with the declared graph; found here
    from the results alone when not given.
    """
    from fabric.verify.causes import diagnose, explained, key

    failed = [r for r in results if r.outcome == "failed"]
    errors = [r for r in results if r.outcome == "error"]
    if not failed and not errors:
        return f"all {len(results)} checks passed"
    found = explained(results, causes) if causes is not None else diagnose(results)
    by_key = {key(r): r for r in results}
    head = f"{len(failed)} of {len(results)} checks failed"
    lines = [head + (f", {len(errors)} could not run (harness or tool error)" if errors else "")]
    if found.causes:
        lines.append("root causes:")
        lines += [f"  {line}" for line in found.headlines()]
        lines.append("failed checks, by cause:")
        for cause in found.causes:
            lines.append(f"  {cause.what}: {cause.subject}")
            lines += [f"    {k}: {_first_line(by_key[k])}" for k in cause.checks if k in by_key]
    if found.unexplained:
        indent = "    " if found.causes else "  "
        lines.append("  no cause found:" if found.causes else "failed checks:")
        lines += [f"{indent}{key(r)}: {_first_line(r)}" for r in found.unexplained]
    if found.errors:
        lines.append("could not run (harness or tool error, not a fabric failure):")
        lines += [f"  {key(r)}: {_first_line(r)}" for r in found.errors]
    return "\n".join(lines)


def _first_line(r: CheckResult) -> str:
    return r.message.splitlines()[0] if r.message else r.outcome
