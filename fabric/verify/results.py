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
