"""The ping checks' housekeeping never fails a check: dropping stale ibsim clients is best
effort (issue 18: "ibsim gave no prompt after 'Attached' within 5s" at setup and teardown)."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from fabric.topology.ibsim_console import IbsimConsole
from fabric.verify import harness

ATTACHED = (
    'Client 0: pid 35402 connected at "gpu01:mlx5_0" port 0x0002c90302000000, lid 1, qp 0 SM\n'
    'Client 1: pid 41000 connected at "gpu02:mlx5_0" port 0x0002c90302000004, lid 2, qp 0 SM\n'
)


@pytest.fixture
def console(tmp_path: Path) -> tuple[IbsimConsole, Path, int]:
    fifo, log = tmp_path / "ibsim.console", tmp_path / "ibsim.log"
    os.mkfifo(fifo, 0o600)
    log.write_text("sim> ")
    reader = os.open(fifo, os.O_RDWR)  # as ibsim holds its console
    return IbsimConsole(fifo, log), log, reader


def _answer(log: Path, reader: int, replies: list[str]) -> threading.Thread:
    """Play ibsim: read each command from the FIFO, append its reply and a prompt to the log."""

    def run() -> None:
        for reply in replies:
            os.read(reader, 4096)
            with log.open("a") as fh:
                fh.write(reply + "sim> ")

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_a_console_that_does_not_answer_fails_nothing(
    console: tuple[IbsimConsole, Path, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    con, _, reader = console
    monkeypatch.setattr(harness, "CONSOLE_TIMEOUT", 0.3)
    start = time.monotonic()
    harness.reap_quietly(con, "gpu02", lambda host, ports: set())
    assert 0.3 <= time.monotonic() - start < 5
    os.close(reader)


def test_a_console_without_ibsim_fails_nothing(tmp_path: Path) -> None:
    fifo, log = tmp_path / "ibsim.console", tmp_path / "ibsim.log"
    os.mkfifo(fifo, 0o600)  # nobody reads it: ibsim is gone
    log.write_text("")
    harness.reap_quietly(IbsimConsole(fifo, log), "gpu02", lambda host, ports: set())


def test_dead_clients_of_the_host_are_dropped(console: tuple[IbsimConsole, Path, int]) -> None:
    con, log, reader = console
    thread = _answer(log, reader, [ATTACHED, ""])
    harness.reap_quietly(con, "gpu02", lambda host, ports: set())
    thread.join(timeout=5)
    assert not thread.is_alive()  # both commands were sent: Attached, then X 1
    assert log.read_text().count("sim> ") == 3
    os.close(reader)
