"""Harness errors: a check that could not look is reported as an error, not a fabric failure.

A check raises :class:`HarnessError` when its tool failed or printed something unreadable. The
hook below (imported by the check suite's conftest) turns that call-phase exception into an
error report, as a failing fixture is: JUnit ``<error>``, ``ERROR`` on the terminal, "error" in
``fabric.verify.results``, never a failed fabric check.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from fabric.topology.ibsim_clients import dead_clients, parse_attached
from fabric.topology.ibsim_console import FaultError, IbsimConsole
from fabric.verify.harness_error import HarnessError

#: Seconds the lab's ibsim console gets to answer ``Attached`` when a check drops stale
#: clients: ibsim answers its console between MADs, and a faulted fabric keeps it busy (5 s
#: was too short: issue 18's ping checks failed at setup and teardown).
CONSOLE_TIMEOUT = 20.0


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


def reap_quietly(
    console: IbsimConsole, host: str, alive: Callable[[str, list[int]], set[int]]
) -> None:
    """Drop ``host``'s dead ibsim clients (``Attached``, then ``X <id>``) as far as the console
    answers.

    A check's own housekeeping: a console that does not answer in time (ibsim busy while the
    fabric has a fault) or at all (ibsim gone: the FIFO has no reader) must not fail the check.
    A stale registration that really is in the way shows as a server that exits at once, which
    the check retries and then reports as an error of its setup.
    """
    try:
        reply = console.send("Attached", timeout=CONSOLE_TIMEOUT)
        for client in dead_clients(parse_attached(reply), host, alive):
            console.disconnect_client(client.id, missing_ok=True)
    except (FaultError, OSError):
        pass


def sm_clients_quietly(console: IbsimConsole, host: str) -> set[tuple[int, int]] | None:
    """(client id, pid) of ``host``'s SM-class ibsim clients, or None when the console did not
    answer (housekeeping, as :func:`reap_quietly`)."""
    try:
        reply = console.send("Attached", timeout=CONSOLE_TIMEOUT)
    except (FaultError, OSError):
        return None
    return {(c.id, c.pid) for c in parse_attached(reply) if c.host == host and c.sm}


#: Seconds between two looks at whether a server a check started is ready (an SSH command
#: on a shared connection and, in the lab, one ibsim console command: milliseconds each).
READY_POLL_S = 0.1


def server_started(
    remote: Any, pid: str, settle: float, wait: float, ready: Callable[[], bool] | None
) -> bool:
    """Whether a server a check started (``pid`` on ``remote``, a testinfra host) runs and can
    be used. Without ``ready``: alive after ``settle`` seconds. With it: alive until ``ready()``
    says so (within ``wait`` seconds, polled every :data:`READY_POLL_S`), then ``settle``; a
    server still not ready then is stopped."""
    if ready is None:
        time.sleep(settle)
        return remote.run(f"kill -0 {pid}").rc == 0
    deadline = time.monotonic() + wait + settle
    while time.monotonic() < deadline:
        if remote.run(f"kill -0 {pid}").rc != 0:
            return False
        if ready():
            time.sleep(settle)
            return remote.run(f"kill -0 {pid}").rc == 0
        time.sleep(READY_POLL_S)
    remote.run(f"kill {pid} 2>/dev/null; true")
    return False


@dataclass(frozen=True)
class Served:
    """A server a check runs on ``target``: whether it still runs, and what it said."""

    remote: Any
    target: str
    command: str
    pid: str
    log: str
    #: the server's own bound (s), named when it ended early
    bound: int

    def running(self) -> bool:
        return self.remote.run(f"kill -0 {self.pid}").rc == 0

    def said(self) -> str:
        return self.remote.run(f"tail -c 300 {self.log}").stdout.strip() or "no output"

    def gone(self) -> HarnessError | None:
        """A harness error when the server ended before the check did (then the check's tool
        had nobody to answer it: no finding about the fabric)."""
        if self.running():
            return None
        return HarnessError(
            f"{self.target}: the {self.command!r} server had exited before the check ended "
            f"(its {self.bound} s bound, or it failed): {self.said()}"
        )


def run_dir(tmp_path_factory: Any, config: pytest.Config) -> Path:
    """The check run's temporary directory (a ``pytest.TempPathFactory``'s), the same for
    every xdist worker: the one above each worker's own. A worker is known by its config
    (``workerinput``), not by ``PYTEST_XDIST_WORKER``, which a suite started from inside
    another xdist run inherits."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if hasattr(config, "workerinput") else base


def xdist_worker(config: pytest.Config) -> str | None:
    """This process's xdist worker id (``gw0`` ...), None when it is no worker."""
    workerinput = getattr(config, "workerinput", None)
    return workerinput.get("workerid") if workerinput else None
