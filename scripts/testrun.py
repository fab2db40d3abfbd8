"""``make test``'s runner: every step a command with a log of its own, steps side by side.

The steps (see :func:`plan`): the one-time builds (the Pulumi CLI, the lab's node image, the IMDS mock), the
four linters, the unit tests (``pytest -n 2``: everything under ``tests`` and ``roles`` but the
integration modules), one step per role's molecule scenario and one per integration module.
A step starts once the steps it needs have passed (the one-time builds first, then the longest:
the times of the last run in this checkout, else :data:`EXPECTED`), while the run's slots allow
(``--jobs``; a step takes :attr:`Step.cost` slots). Each integration module brings up a lab of its
own on subnets and ports of its own, and each molecule scenario has its own containers and
network (``tests/unit/test_test_isolation.py`` keeps it so), so they run beside each other.

Every step runs to the end even when another fails; the run then prints the tail of each failed
step's log, names each with the lines that say why (pytest's short summary, Ansible's errors)
last, and exits 1. Logs: ``artifacts/test-run/<step>.log``. Ctrl-C (or SIGTERM)
sends SIGINT to every running step's process group, as a terminal's Ctrl-C does: pytest runs
its teardown and molecule stops; a molecule scenario cut off this way is destroyed (``molecule
destroy``); the run waits up to ``GRACE_S`` for them and exits 130. A second Ctrl-C kills what is left. Exit codes: 0 every step passed, 1 a step failed,
2 bad usage, 130 interrupted.

Run: ``python scripts/testrun.py [--jobs N] [--only PATTERN ...] [--list]`` (``scripts/run-tests.sh``
runs it with the Makefile's environment).
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: Seconds a step is expected to take until a run in this checkout has timed it
#: (``times.json``); only the order steps start in depends on it (the longest first, so the
#: run does not end on a long step started late). Measured: each step's time in the full run
#: of 2026-11-28 at 366c9b8 on a fresh machine (4 slots, load 7-11; ``docs/testing.md``). A step
#: not named here: :data:`DEFAULT_EXPECTED`.
EXPECTED: dict[str, float] = {
    "integration:test_health_lab": 520.0,
    "integration:test_lab_recovery": 500.0,
    "integration:test_baremetal_lab": 340.0,
    "integration:test_handoff_lab": 290.0,
    "integration:test_qos_change_roce": 290.0,
    "unit": 270.0,
    "integration:test_kubernetes_lab": 240.0,
    "integration:test_sm_modes_lab": 240.0,
    "molecule:subnet_manager": 190.0,
    "integration:test_existing_adoption": 180.0,
    "integration:test_cloud_lab": 180.0,
    "molecule:gcp_gpudirect": 170.0,
    "integration:test_watch_prometheus": 170.0,
    "integration:test_three_level": 160.0,
    "integration:test_roce_switch": 150.0,
    "molecule:slurm": 150.0,
    "integration:test_lab": 140.0,
    "molecule:efa": 120.0,
    "lint:ansible-lint": 110.0,
    "integration:test_sm_switch_lab": 110.0,
    "molecule:storage": 110.0,
    "integration:test_faults": 100.0,
    "molecule:roce_qos": 90.0,
    "molecule:cluster_hosts": 80.0,
    "molecule:nccl_tests": 80.0,
    "molecule:rdma_stack": 80.0,
    "integration:test_baremetal_redfish": 80.0,
    "molecule:node_health": 80.0,
    "molecule:fabric_watch": 80.0,
    "molecule:preflight": 70.0,
    "molecule:gpu_node": 60.0,
    "molecule:hca": 60.0,
    "integration:test_lab_bmc_auth": 60.0,
    "integration:test_fault_mtu": 50.0,
    "molecule:switch_qos": 30.0,
    "integration:test_counters_ibsim": 10.0,
    "integration:test_slurm_topology": 10.0,
    "lint:yamllint": 10.0,
    "integration:test_sweep_ibsim": 10.0,
    "integration:test_routing_ibsim": 10.0,
    "integration:test_imds_mock": 10.0,
    "integration:test_ibsim_net": 10.0,
    "lint:ruff-format": 10.0,
    "lint:ruff": 10.0,
}
DEFAULT_EXPECTED = 300.0
#: Integration modules that need other one-time builds than the node image and the Pulumi CLI
#: (what each uses: grep its imports): those that bring up no Pulumi stack start while the
#: Pulumi CLI still builds on a new machine, and those that start no node do not wait for the
#: image either.
MODULE_NEEDS: dict[str, tuple[str, ...]] = {
    "test_imds_mock": ("build:imds-mock",),
    "test_kubernetes_lab": ("build:image", "build:pulumi", "build:kube"),
    # nodes of their own (fabric.lab.node), no Pulumi stack
    "test_cloud_lab": ("build:image",),
    "test_roce_switch": ("build:image",),
    # ibsim, the Redfish emulator or the parsers on this machine only
    "test_baremetal_redfish": (),
    "test_counters_ibsim": (),
    "test_ibsim_net": (),
    "test_routing_ibsim": (),
    "test_slurm_topology": (),
    "test_sweep_ibsim": (),
}
#: Seconds one Ansible task may run in a step (``ANSIBLE_TASK_TIMEOUT``, unless the caller sets
#: it; ansible.cfg's own bound is an hour): the longest task of the full run of 2026-11-27 took
#: 25 s at load 10, so a task past this is hung, and Ansible fails it naming task and host long
#: before the step's own timeout (CI's run of 2026-11-27 lost 45 min to one hung hand-off).
TASK_TIMEOUT_S = 600


def step_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The steps' environment: the caller's, with Ansible's per-task bound."""
    return {"ANSIBLE_TASK_TIMEOUT": str(TASK_TIMEOUT_S), **environ}


#: Lines of a failed step's log printed at the end.
TAIL_LINES = 40
#: Seconds an interrupted step gets to tear down (a lab's ``pulumi destroy``) before it is killed.
GRACE_S = 600.0


@dataclass
class Step:
    """One command of the run."""

    name: str
    argv: list[str]
    cwd: Path = ROOT
    cost: int = 1  #: slots it takes while it runs
    needs: tuple[str, ...] = ()  #: steps that must pass before it starts
    timeout: float = 3600.0  #: seconds before it is stopped and failed
    cleanup: list[str] | None = None  #: run in ``cwd`` when the step was cut off

    @property
    def log_name(self) -> str:
        return self.name.replace(":", "_").replace("/", "_") + ".log"


@dataclass
class Outcome:
    """How a step ended."""

    status: str  #: passed, failed, timed out, interrupted, not run
    seconds: float = 0.0
    rc: int | None = None
    detail: str = ""


@dataclass
class Running:
    step: Step
    proc: subprocess.Popen[bytes]
    started: float
    log: Path
    stopping: float | None = None  #: when SIGINT was sent (timeout or interrupt)
    timed_out: bool = False


@dataclass
class Run:
    """The scheduler's state."""

    steps: dict[str, Step]
    jobs: int
    log_dir: Path
    env: dict[str, str]
    expected: dict[str, float]
    outcomes: dict[str, Outcome] = field(default_factory=dict)
    running: dict[str, Running] = field(default_factory=dict)
    interrupted: int = 0  #: how many interrupts arrived

    def pending(self) -> list[Step]:
        return [
            s for n, s in self.steps.items() if n not in self.outcomes and n not in self.running
        ]

    def ready(self) -> list[Step]:
        """Pending steps whose needs passed: those other steps need first, then the longest."""
        out = []
        for step in self.pending():
            failed = [
                n for n in step.needs if n in self.outcomes and self.outcomes[n].status != "passed"
            ]
            if failed:
                self.outcomes[step.name] = Outcome("not run", detail=f"needs {', '.join(failed)}")
                continue
            if all(n in self.outcomes for n in step.needs):
                out.append(step)
        needed = {n for s in self.steps.values() for n in s.needs}
        return sorted(out, key=lambda s: (s.name not in needed, -self.seconds(s.name)))

    def seconds(self, name: str) -> float:
        """How long ``name`` is expected to take: its last run here, else ``EXPECTED``."""
        return self.expected.get(name, EXPECTED.get(name, DEFAULT_EXPECTED))

    def used(self) -> int:
        return sum(min(r.step.cost, self.jobs) for r in self.running.values())


def say(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", flush=True)


def start(run: Run, step: Step) -> None:
    log = run.log_dir / step.log_name
    out = open(log, "wb")
    out.write(f"$ (cd {step.cwd} && {' '.join(step.argv)})\n".encode())
    out.flush()
    try:
        proc = subprocess.Popen(
            step.argv,
            cwd=step.cwd,
            env=run.env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            process_group=0,  # its own group: Ctrl-C reaches it only through stop()
        )
    except OSError as exc:
        out.write(f"cannot start: {exc}\n".encode())
        out.close()
        run.outcomes[step.name] = Outcome("failed", detail=f"cannot start: {exc}")
        say(f"FAILED {step.name}: cannot start: {exc}")
        return
    out.close()
    run.running[step.name] = Running(step, proc, time.monotonic(), log)
    say(f"start  {step.name}")


def signal_group(proc: subprocess.Popen[bytes], sig: int) -> None:
    try:
        os.killpg(proc.pid, sig)
    except ProcessLookupError:
        pass


def stop(running: Running, sig: int = signal.SIGINT) -> None:
    """Ask a step to stop as Ctrl-C would (pytest tears its fixtures down), or kill it."""
    if running.stopping is None:
        running.stopping = time.monotonic()
    signal_group(running.proc, sig)


def reap(run: Run) -> None:
    """Collect finished steps; stop those past their timeout or their grace."""
    now = time.monotonic()
    for name, r in list(run.running.items()):
        rc = r.proc.poll()
        if rc is None:
            if r.stopping is None and now - r.started > r.step.timeout:
                r.timed_out = True
                say(f"TIMEOUT {name} after {r.step.timeout:.0f} s: stopping it")
                stop(r)
            elif r.stopping is not None and now - r.stopping > GRACE_S:
                say(f"KILL   {name}: no exit {GRACE_S:.0f} s after SIGINT")
                signal_group(r.proc, signal.SIGKILL)
            continue
        del run.running[name]
        seconds = now - r.started
        if r.timed_out:
            status = "timed out"
        elif run.interrupted and rc != 0:
            status = "interrupted"
        else:
            status = "passed" if rc == 0 else "failed"
        run.outcomes[name] = Outcome(status, seconds, rc)
        if status == "passed":
            run.expected[name] = seconds
        say(
            f"{'ok    ' if status == 'passed' else status.upper() + ' '}{name} ({seconds:.0f} s){'' if status == 'passed' else f', exit {rc}, log {r.log}'}"
        )
        if status in ("interrupted", "timed out") and r.step.cleanup:
            cleanup(r.step, run)


def cleanup(step: Step, run: Run) -> None:
    assert step.cleanup is not None
    say(f"clean  {step.name}: {' '.join(step.cleanup)}")
    with open(run.log_dir / step.log_name, "ab") as out:
        try:
            subprocess.run(
                step.cleanup,
                cwd=step.cwd,
                env=run.env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                timeout=600,
                check=False,
                process_group=0,
            )
        except subprocess.TimeoutExpired:
            say(f"clean  {step.name}: did not finish in 600 s")


def tail(path: Path, lines: int = TAIL_LINES) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError as exc:
        return f"(cannot read {path}: {exc})"
    return "\n".join(text.rstrip().splitlines()[-lines:])


def execute(run: Run) -> int:
    """Run every step; return the exit code."""

    def on_signal(signum: int, _frame: object) -> None:
        run.interrupted += 1
        if run.interrupted == 1:
            say(
                f"{signal.Signals(signum).name}: stopping {len(run.running)} running step(s), starting no more "
                "(again to kill them)"
            )
            for r in run.running.values():
                stop(r)
        else:
            say("killing every running step")
            for r in run.running.values():
                stop(r, signal.SIGKILL)

    old = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        while True:
            reap(run)
            if not run.interrupted:
                for step in run.ready():
                    if run.used() + min(step.cost, run.jobs) > run.jobs:
                        break  # the next in line waits for its slots; none jumps ahead of it
                    start(run, step)
            if not run.running and (run.interrupted or not run.ready()):
                break
            time.sleep(0.5)
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)
    for step in run.pending():
        run.outcomes[step.name] = Outcome(
            "not run", detail="interrupted" if run.interrupted else ""
        )
    return report(run)


#: How a log says why it failed: pytest's short summary, Ansible's and molecule's errors.
WHY_PREFIXES = ("FAILED ", "ERROR ", "fatal: ", "CRITICAL ")
#: At most this many such lines per failed step, each cut to ``WHY_CHARS``.
WHY_LINES = 3
WHY_CHARS = 300


def why(path: Path) -> list[str]:
    """The first lines of ``path`` that say why its step failed, short: they close the run's
    output, where a CI report that keeps only its end still shows them."""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return []
    found = [line for line in text.splitlines() if line.startswith(WHY_PREFIXES)]
    return [line[:WHY_CHARS] for line in found[:WHY_LINES]]


def report(run: Run) -> int:
    bad = {n: o for n, o in run.outcomes.items() if o.status != "passed"}
    passed = len(run.outcomes) - len(bad)
    for name, o in bad.items():
        if o.status in ("failed", "timed out"):
            log = run.log_dir / run.steps[name].log_name
            print(
                f"\n===== {name}: {o.status} (exit {o.rc}), last lines of {log}:\n{tail(log)}",
                flush=True,
            )
    print(flush=True)
    for name, o in bad.items():
        print(f"  {o.status:11} {name}{f' ({o.detail})' if o.detail else ''}", flush=True)
        if o.status in ("failed", "timed out"):
            for line in why(run.log_dir / run.steps[name].log_name):
                print(f"              {line}", flush=True)
    ran = sorted(((o.seconds, n) for n, o in run.outcomes.items() if o.seconds), reverse=True)
    print("longest: " + ", ".join(f"{n} {s:.0f} s" for s, n in ran[:6]), flush=True)
    print(f"{passed} of {len(run.outcomes)} steps passed; logs in {run.log_dir}", flush=True)
    if run.interrupted:
        return 130
    return 1 if bad else 0


def plan(root: Path, python: str) -> list[Step]:
    """The steps of ``make test``."""
    bin_dir = Path(python).parent
    pytest = [python, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    steps = [
        Step("build:pulumi", [str(root / "scripts" / "bootstrap.sh"), "pulumi"], cost=2),
        # Only test_imds_mock needs it: the labs do not wait for it (about 1 min on a new machine).
        Step("build:imds-mock", [str(root / "scripts" / "bootstrap.sh"), "imds"]),
        Step("build:image", [python, "-m", "fabric", "lab", "image"]),
        # Only test_kubernetes_lab needs it: kube-apiserver from Go modules (~9 CPU-min once).
        Step("build:kube", [str(root / "scripts" / "kube-apiserver.sh")]),
        Step("lint:ruff", [str(bin_dir / "ruff"), "check", "."]),
        Step("lint:ruff-format", [str(bin_dir / "ruff"), "format", "--check", "."]),
        Step("lint:yamllint", [str(bin_dir / "yamllint"), "-s", "."]),
        Step("lint:ansible-lint", [str(bin_dir / "ansible-lint"), "--profile", "production"]),
        # Everything but the integration modules, which run one step each below.
        Step(
            "unit",
            [*pytest, "-n", "2", "tests", "roles", "--ignore=tests/integration"],
            cost=2,
            needs=("build:pulumi",),
        ),
    ]
    for scenario in sorted(root.glob("roles/*/molecule/default/molecule.yml")):
        role_dir = scenario.parent.parent.parent
        steps.append(
            Step(
                f"molecule:{role_dir.name}",
                [str(bin_dir / "molecule"), "test"],
                cwd=role_dir,
                needs=("build:image",),
                cleanup=[str(bin_dir / "molecule"), "destroy"],
            )
        )
    for module in sorted((root / "tests" / "integration").rglob("test_*.py")):
        rel = module.relative_to(root)
        steps.append(
            Step(
                f"integration:{rel.stem}",
                # No integration module uses hypothesis; its plugin's end-of-run summary alone
                # imports all of it (about 1.7 s of CPU per process).
                [*pytest, "-p", "no:hypothesispytest", str(rel)],
                needs=MODULE_NEEDS.get(rel.stem, ("build:image", "build:pulumi")),
                timeout=2700.0,
            )
        )
    return steps


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="testrun", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--jobs",
        type=int,
        default=int(os.environ.get("RAILYARD_TEST_JOBS", "4")),
        help="slots: how many steps run at once (default $RAILYARD_TEST_JOBS or 4)",
    )
    parser.add_argument(
        "--only",
        action="append",
        default=[],
        metavar="PATTERN",
        help="run only the steps whose name matches (fnmatch; repeatable), and the steps they need",
    )
    parser.add_argument("--list", action="store_true", help="print the steps and exit")
    parser.add_argument("--python", default=str(ROOT / ".venv" / "bin" / "python"))
    parser.add_argument("--log-dir", type=Path, default=ROOT / "artifacts" / "test-run")
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error(f"--jobs {args.jobs}: give 1 or more")
    steps = {s.name: s for s in plan(ROOT, args.python)}
    if args.only:
        chosen = {n for n in steps if any(fnmatch.fnmatchcase(n, p) for p in args.only)}
        if not chosen:
            parser.error(f"--only {' '.join(args.only)}: no step matches; --list shows them")
        todo = list(chosen)
        while todo:
            for need in steps[todo.pop()].needs:
                if need not in chosen:
                    chosen.add(need)
                    todo.append(need)
        steps = {n: s for n, s in steps.items() if n in chosen}
    if args.list:
        for step in steps.values():
            print(f"{step.name:40} needs {', '.join(step.needs) or '-'}")
        return 0
    args.log_dir.mkdir(parents=True, exist_ok=True)
    for old in args.log_dir.glob("*.log"):
        old.unlink()
    times = args.log_dir / "times.json"  # each step's last time: the next run's order
    try:
        expected = json.loads(times.read_text())
    except (OSError, ValueError):
        expected = {}
    run = Run(steps, args.jobs, args.log_dir, step_env(os.environ), dict(expected))
    say(f"{len(steps)} steps, {args.jobs} slots; logs in {args.log_dir}")
    started = time.monotonic()
    code = execute(run)
    say(f"done in {time.monotonic() - started:.0f} s")
    times.write_text(json.dumps(run.expected, indent=1, sort_keys=True))
    return code


if __name__ == "__main__":
    sys.exit(main())
