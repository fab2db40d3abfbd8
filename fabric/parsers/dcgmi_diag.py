"""``dcgmi diag -r 1 -j``: DCGM's diagnostic as JSON, each test's result per GPU.

The document is ``{"DCGM GPU Diagnostic": {"test_categories": [{"category": ..., "tests":
[{"name": ..., "results": [{"gpu_ids": ..., "status": ..., "warnings": [...]}]}]}],
"version": ...}}`` (DCGM's ``nvvs/include/JsonOutput.h``: a status is one of PASS, FAIL, WARN,
SKIPPED; DCGM 3.1 prints ``null`` between tests). Anything dcgmi prints before the first
``{`` (a warning line) is left out, as DCGM's own test of real output does
(``nvvs/src/tests/JsonResultTests.cpp``). Only this documented shape is read; DCGM 4's
top-level ``tests`` list is read the same way when present.
"""

from __future__ import annotations

import json
from typing import Any, NamedTuple

from fabric.parsers.errors import ParseError

TOOL = "dcgmi_diag"


class Result(NamedTuple):
    """One test's result on some GPUs: category, test, GPUs as printed, status (upper case),
    and DCGM's warning texts."""

    category: str
    test: str
    gpus: str
    status: str
    warnings: tuple[str, ...]


def _warnings(result: dict[str, Any]) -> tuple[str, ...]:
    out = []
    for warning in result.get("warnings") or []:
        out.append(
            warning.get("warning", str(warning)) if isinstance(warning, dict) else str(warning)
        )
    return tuple(out)


def _tests(category: str, tests: list[Any]) -> list[Result]:
    found = []
    for test in tests:
        if not isinstance(test, dict):
            continue  # DCGM 3.1's null between tests
        for result in test.get("results") or []:
            if isinstance(result, dict):
                found.append(
                    Result(
                        category,
                        str(test.get("name", "?")),
                        str(result.get("gpu_ids", result.get("entity_id", "?"))),
                        str(result.get("status", "?")).upper(),
                        _warnings(result),
                    )
                )
    return found


def results(text: str) -> list[Result]:
    """Every test result of the document; ParseError when there is no diagnostic JSON."""
    start = text.find("{")
    try:
        data = json.loads(text[start:]) if start >= 0 else None
    except json.JSONDecodeError as err:
        raise ParseError(TOOL, err.lineno, "dcgmi diag -j JSON", err.msg) from None
    root = data.get("DCGM GPU Diagnostic", data) if isinstance(data, dict) else None
    if not isinstance(root, dict):
        raise ParseError(TOOL, 0, 'a JSON object with "DCGM GPU Diagnostic"')
    found: list[Result] = []
    for category in root.get("test_categories") or []:
        if isinstance(category, dict):
            found += _tests(str(category.get("category", "?")), category.get("tests") or [])
    found += _tests("", root.get("tests") or [])
    if not found:
        raise ParseError(TOOL, 0, "at least one test result in the diagnostic")
    return found


def failures(found: list[Result]) -> list[str]:
    """Each failed test (``Hardware/Memory on GPU 3: FAIL (warning ...)``)."""
    return [
        f"{r.category + '/' if r.category else ''}{r.test} on GPU {r.gpus}: {r.status}"
        + (f" ({'; '.join(r.warnings)[:160]})" if r.warnings else "")
        for r in found
        if r.status in ("FAIL", "FAILED", "ERROR")
    ]
