"""No false failures from a tool the harness failed: ``Facts.judged`` runs a MAD tool again
when it did not run to its end (a crash, its timeout) or when its answer is not yet the one
wanted (a MAD timeout under load), at most ``TOOL_ATTEMPTS`` times; a tool that never ran to
its end is a ``HarnessError``, one that answered is returned for the check to judge.

The tool runs for real here, through testinfra's local backend: a shell that replays real
captured output (tests/fixtures, SOURCES.md) once per run, in order.
"""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
import testinfra

from fabric.spec import load_spec
from fabric.state import REPO_ROOT
from fabric.verify import facts as facts_module
from fabric.verify.facts import Facts, harness_trouble
from fabric.verify.harness import HarnessError
from fabric.verify.plan import CheckPlan

FIXTURES = REPO_ROOT / "tests" / "fixtures"
CRASH = FIXTURES / "perfquery_crash__bench32__1.txt"  # bash's SIGSEGV report, exit 139
ANSWER = FIXTURES / "perfquery__ibsimparse__1.txt"
NO_SM = FIXTURES / "sminfo__ibsimparse__3.txt"  # ibwarn + "sminfo: iberror: failed: query"
MASTER = FIXTURES / "sminfo__ibsimparse__1.txt"


@pytest.fixture(autouse=True)
def _no_pause(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(facts_module, "TOOL_PAUSE_S", 0.0)


def _replay(tmp_path: Path, runs: list[tuple[Path, int]]) -> str:
    """A command that prints the n-th capture and exits with its status on its n-th run."""
    for n, (capture, rc) in enumerate(runs):
        script = tmp_path / f"run{n}.sh"
        script.write_text(f"cat {shlex.quote(str(capture))}\nexit {rc}\n")
    counter = tmp_path / "runs"
    counter.write_text("0")
    last = len(runs) - 1
    tool = tmp_path / "tool.sh"
    tool.write_text(
        f"n=$(cat {counter}); echo $((n+1)) > {counter}\n"
        f"[ $n -gt {last} ] && n={last}\nexec sh {tmp_path}/run$n.sh\n"
    )
    return f"sh {tool}"


def _facts() -> Facts:
    spec = load_spec(REPO_ROOT / "Pulumi.lab.yaml")
    local = testinfra.get_host("local://")
    return Facts(plan=CheckPlan(spec=spec, hosts=list(spec.hosts)), connect=lambda _: local)


def _runs(tmp_path: Path) -> int:
    return int((tmp_path / "runs").read_text())


def test_a_crashed_tool_is_run_again_and_its_answer_judged(tmp_path: Path) -> None:
    command = _replay(tmp_path, [(CRASH, 139), (ANSWER, 0)])
    report = _facts().judged("gpu01", "perfquery", command)
    assert report.ok and _runs(tmp_path) == 2


def test_a_tool_that_keeps_crashing_is_a_harness_error(tmp_path: Path) -> None:
    command = _replay(tmp_path, [(CRASH, 139)])
    with pytest.raises(HarnessError, match=r"gpu01: sh failed 3 times .* exit 139"):
        _facts().judged("gpu01", "perfquery", command)
    assert _runs(tmp_path) == facts_module.TOOL_ATTEMPTS


def test_an_answer_that_is_not_yet_wanted_is_asked_again(tmp_path: Path) -> None:
    """A MAD timeout under load (sminfo found no SM once) is asked again; the SM answers."""
    command = _replay(tmp_path, [(NO_SM, 254), (MASTER, 0)])
    report = _facts().judged("gpu01", "sminfo", command)
    assert report.ok and report.state == "MASTER" and _runs(tmp_path) == 2


def test_an_answer_that_stays_unwanted_is_the_checks_to_judge(tmp_path: Path) -> None:
    """No SM answered in any of the runs: that is the fabric's state, returned (not an error)."""
    command = _replay(tmp_path, [(NO_SM, 254)])
    report = _facts().judged("gpu01", "sminfo", command)
    assert not report.ok and "failed: query" in (report.reason or "")
    assert _runs(tmp_path) == facts_module.TOOL_ATTEMPTS


def test_what_the_harness_causes_and_what_it_does_not() -> None:
    assert harness_trouble(124, "") == "exit 124 (stopped or could not run): no output"
    # the simulator's own failure, as the lab's perfquery printed it (issue 29)
    said = "ERR: Empty fd_data or fd_data_enqueue failed for FD -1"
    assert harness_trouble(0, f"{said}\n") == said
    assert harness_trouble(254, NO_SM.read_text()) is None  # a MAD answer: the fabric's
