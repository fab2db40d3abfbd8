"""``scripts/testrun.py``, make test's runner, with real processes: a failed step fails the run and
is named with its log's tail, steps needing it do not run, slots bound how many run at once,
and an interrupt or a timeout reaches each step as SIGINT (so pytest tears its labs down), runs
the step's cleanup, and the run exits 130."""

from __future__ import annotations

import importlib.util
import os
import signal
import sys
import threading
import time
from pathlib import Path
from types import ModuleType

import pytest

from fabric.state import REPO_ROOT


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("testrun", REPO_ROOT / "scripts" / "testrun.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["testrun"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


testrun = _load()


def sh(name: str, script: str, **kw: object) -> object:
    return testrun.Step(name, ["sh", "-c", script], **kw)


def make_run(tmp_path: Path, steps: list[object], jobs: int = 4) -> object:
    return testrun.Run(
        {s.name: s for s in steps},
        jobs,
        tmp_path,
        dict(os.environ),
        {},  # type: ignore[attr-defined]
    )


def test_a_failed_step_fails_the_run_and_is_named_with_its_log(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = make_run(
        tmp_path,
        [
            sh("lint:ok", "echo fine"),
            sh("molecule:bad", "for i in $(seq 1 100); do echo line$i; done; exit 3"),
            sh("after-bad", "echo never", needs=("molecule:bad",)),
            sh("after-ok", "echo ran", needs=("lint:ok",)),
        ],
    )
    assert testrun.execute(run) == 1
    out = capsys.readouterr().out
    assert {n: o.status for n, o in run.outcomes.items()} == {
        "lint:ok": "passed",
        "molecule:bad": "failed",
        "after-bad": "not run",
        "after-ok": "passed",
    }
    assert "===== molecule:bad: failed (exit 3)" in out
    assert "line100" in out and "line60\n" not in out  # the tail only
    assert "not run     after-bad (needs molecule:bad)" in out
    assert (tmp_path / "after-ok.log").read_text().endswith("ran\n")


def test_every_step_passed_exits_0(tmp_path: Path) -> None:
    run = make_run(tmp_path, [sh("a", "true"), sh("b", "true", needs=("a",))])
    assert testrun.execute(run) == 0
    assert run.expected.keys() == {"a", "b"}  # their times order the next run


def test_slots_bound_how_many_run_at_once(tmp_path: Path) -> None:
    stamp = "echo $(date +%s.%N) >> {}/{}"
    steps = [
        sh(
            f"s{i}",
            f"{stamp.format(tmp_path, f's{i}')}; sleep 0.6; {stamp.format(tmp_path, f's{i}')}",
        )
        for i in range(3)
    ]
    run = make_run(tmp_path, steps, jobs=2)
    run.expected.update({"s0": 1.0, "s1": 3.0, "s2": 2.0})
    assert testrun.execute(run) == 0
    spans = {s.name: [float(x) for x in (tmp_path / s.name).read_text().split()] for s in steps}
    # the two longest expected start first; the third waits for a free slot
    assert max(spans["s1"][0], spans["s2"][0]) < spans["s0"][0]
    assert spans["s0"][0] >= min(spans["s1"][1], spans["s2"][1])


def test_a_step_waiting_for_two_slots_is_not_passed_by_smaller_ones(tmp_path: Path) -> None:
    stamp = "echo $(date +%s.%N) >> {}/{}"

    def timed(name: str, **kw: object) -> object:
        mark = stamp.format(tmp_path, name)
        return sh(name, f"{mark}; sleep 0.4; {mark}", **kw)

    run = make_run(tmp_path, [timed("a"), timed("big", cost=2), timed("c")], jobs=2)
    run.expected.update({"a": 9.0, "big": 5.0, "c": 1.0})
    assert testrun.execute(run) == 0
    span = {n: [float(x) for x in (tmp_path / n).read_text().split()] for n in ("a", "big", "c")}
    assert span["a"][1] <= span["big"][0] <= span["big"][1] <= span["c"][0]


def teardown_step(name: str, tmp_path: Path, **kw: object) -> object:
    """A step that, on SIGINT, writes ``<name>.down`` and exits 2 (as pytest tears down); it
    writes ``<name>.ready`` once its trap is set."""
    down, ready = tmp_path / f"{name}.down", tmp_path / f"{name}.ready"
    script = (
        f"trap 'echo torn down > {down}; exit 2' INT; touch {ready}; while :; do sleep 0.2; done"
    )
    return sh(name, script, **kw)


def _interrupt_when_ready(paths: list[Path]) -> None:
    deadline = time.monotonic() + 60
    while not all(p.exists() for p in paths) and time.monotonic() < deadline:
        time.sleep(0.05)
    os.kill(os.getpid(), signal.SIGINT)


def test_an_interrupt_reaches_each_step_as_sigint_and_runs_its_cleanup(tmp_path: Path) -> None:
    steps = [
        teardown_step(f"r{i}", tmp_path, cleanup=["sh", "-c", f"echo destroyed > {tmp_path}/c{i}"])
        for i in range(2)
    ] + [sh("later", "true", needs=("r0",))]
    run = make_run(tmp_path, steps)
    ready = [tmp_path / f"r{i}.ready" for i in range(2)]
    waiter = threading.Thread(target=_interrupt_when_ready, args=(ready,), daemon=True)
    waiter.start()
    started = time.monotonic()
    assert testrun.execute(run) == 130
    waiter.join()
    assert time.monotonic() - started < 60
    for i in range(2):
        assert (tmp_path / f"r{i}.down").read_text() == "torn down\n"
        assert (tmp_path / f"c{i}").read_text() == "destroyed\n"
        assert run.outcomes[f"r{i}"].status == "interrupted"
    assert run.outcomes["later"].status == "not run"


def test_a_step_past_its_timeout_is_stopped_and_failed(tmp_path: Path) -> None:
    run = make_run(tmp_path, [teardown_step("slow", tmp_path, timeout=2.0)])
    assert testrun.execute(run) == 1
    assert run.outcomes["slow"].status == "timed out"
    assert (tmp_path / "slow.down").read_text() == "torn down\n"


def test_the_plan_has_every_scenario_and_integration_module() -> None:
    steps = {s.name: s for s in testrun.plan(REPO_ROOT, sys.executable)}
    roles = {p.parts[-4] for p in REPO_ROOT.glob("roles/*/molecule/default/molecule.yml")}
    modules = {p.stem for p in (REPO_ROOT / "tests" / "integration").glob("test_*.py")}
    assert {n.split(":", 1)[1] for n in steps if n.startswith("molecule:")} == roles
    assert {n.split(":", 1)[1] for n in steps if n.startswith("integration:")} == modules
    assert "--ignore=tests/integration" in steps["unit"].argv
    for name, step in steps.items():
        assert all(n in steps for n in step.needs), name
    assert set(testrun.EXPECTED) <= set(steps), "EXPECTED names a step that no longer exists"


#: What a module's source uses of each one-time build: a Pulumi stack (labkit's own_lab or the
#: Automation API) needs the CLI; lab nodes need the image.
USES = {
    "build:pulumi": ("own_lab", "automation", "PULUMI_BIN"),
    "build:image": ("own_lab", "create_node", "LATEST", "RAILYARD_NODE_IMAGE"),
}


@pytest.mark.parametrize("module", sorted(testrun.MODULE_NEEDS))
def test_a_module_that_skips_a_build_uses_nothing_of_it(module: str) -> None:
    source = (REPO_ROOT / "tests" / "integration" / f"{module}.py").read_text()
    for build, words in USES.items():
        if build not in testrun.MODULE_NEEDS[module]:
            assert not [w for w in words if w in source], f"{module} uses {build}"


def test_steps_bound_each_ansible_task_unless_the_caller_does() -> None:
    assert testrun.step_env({"PATH": "/bin"}) == {
        "PATH": "/bin",
        "ANSIBLE_TASK_TIMEOUT": str(testrun.TASK_TIMEOUT_S),
    }
    assert testrun.step_env({"ANSIBLE_TASK_TIMEOUT": "60"})["ANSIBLE_TASK_TIMEOUT"] == "60"


def test_the_run_ends_with_why_each_step_failed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # a real pytest run: its short summary lines close the run's output, after 100 lines more
    module = tmp_path / "test_bad.py"
    module.write_text(
        "import pytest\n\n@pytest.fixture\ndef lab():\n    raise RuntimeError('lab not up')\n\n"
        "def test_uses_lab(lab):\n    pass\n\n"
        "def test_counts():\n    print('\\n'.join(map(str, range(100))))\n    assert 1 == 2\n"
    )
    pytest_step = testrun.Step(
        "integration:test_bad",
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(module)],
        cwd=tmp_path,
    )
    run = make_run(tmp_path, [pytest_step, sh("lint:ok", "echo fine")])
    assert testrun.execute(run) == 1
    out = capsys.readouterr().out
    end = out[out.index("  failed      integration:test_bad") :].splitlines()
    assert end[1].strip().startswith("FAILED test_bad.py::test_counts - assert 1 == 2"), end
    assert end[2].strip().startswith("ERROR test_bad.py::test_uses_lab - RuntimeError: lab not"), (
        end
    )
    assert end[3].startswith("longest: "), end
