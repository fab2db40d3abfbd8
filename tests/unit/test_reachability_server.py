"""The ping checks' server start (``fabric.verify.harness.server_started``): when a lab server
that may wait for an ibsim client slot counts as started. The SSH side is a recorder of
the commands run; the real path runs in every lab check suite (tests/integration)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from fabric.verify import harness


@dataclass
class _Result:
    rc: int


@dataclass
class _Remote:
    """``kill -0`` answers from ``alive`` in turn (the last one repeats); every command kept."""

    alive: list[bool]
    ran: list[str] = field(default_factory=list)

    def run(self, command: str) -> _Result:
        self.ran.append(command)
        if command.startswith("kill -0"):
            answer = self.alive.pop(0) if len(self.alive) > 1 else self.alive[0]
            return _Result(0 if answer else 1)
        return _Result(0)


@pytest.fixture(autouse=True)
def _no_sleep(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(harness.time, "sleep", lambda _s: None)


def _started(remote: _Remote, ready: object, wait: float = 0.05) -> bool:
    return harness.server_started(remote, "42", 0.0, wait, ready)  # type: ignore[arg-type]


def test_a_server_is_ready_once_ibsim_lists_it() -> None:
    answers = iter([False, False, True])
    remote = _Remote([True])
    assert _started(remote, lambda: next(answers), wait=60)
    assert remote.ran.count("kill -0 42") == 4  # three looks, and alive after the settle


def test_a_server_that_exits_while_waiting_is_not_started() -> None:
    remote = _Remote([True, False])
    assert not _started(remote, lambda: False)
    assert not any(c.startswith("kill 42") for c in remote.ran)


def test_a_server_never_listed_is_stopped_and_not_started() -> None:
    remote = _Remote([True])
    assert not _started(remote, lambda: False)
    assert remote.ran[-1] == "kill 42 2>/dev/null; true"


def test_without_readiness_a_server_alive_after_the_settle_is_started() -> None:
    assert _started(_Remote([True]), None)
    assert not _started(_Remote([False]), None)


def test_a_server_gone_before_the_check_ended_is_a_harness_error(tmp_path) -> None:
    """``Served.gone`` on a real local process, through testinfra's local backend."""
    import subprocess

    import testinfra

    from fabric.verify.harness import HarnessError, Served

    log = tmp_path / "server.log"
    log.write_text("ibwarn: [123] main: server exiting\n")
    proc = subprocess.Popen(["sleep", "30"])
    try:
        served = Served(
            testinfra.get_host("local://"), "gpu18", "ibping -S", str(proc.pid), str(log), 120
        )
        assert served.gone() is None
    finally:
        proc.kill()
        proc.wait(timeout=10)
    err = served.gone()
    assert isinstance(err, HarnessError)
    assert str(err) == (
        "gpu18: the 'ibping -S' server had exited before the check ended (its 120 s bound, "
        "or it failed): ibwarn: [123] main: server exiting"
    )
