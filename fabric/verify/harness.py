"""Harness errors: a check that could not look is reported as an error, not a fabric failure.

A check raises :class:`HarnessError` when its tool failed or printed something unreadable. The
hook below (imported by the check suite's conftest) turns that call-phase exception into an
error report, as a failing fixture is: JUnit ``<error>``, ``ERROR`` on the terminal, "error" in
``fabric.verify.results``, never a failed fabric check.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import pytest


class HarnessError(RuntimeError):
    """The check could not look (a tool failed or printed something unreadable): the harness's
    problem, never reported as the fabric's."""


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, Any, None]:
    """Report a HarnessError raised by a check as an error of the harness."""
    outcome = yield
    report = outcome.get_result()
    if (
        call.when == "call"
        and call.excinfo is not None
        and call.excinfo.errisinstance(HarnessError)
    ):
        report.when = "setup"  # pytest and its JUnit writer report setup failures as errors
