"""One fabric sweep from one vantage point: every cable judged with MADs, no SSH per host.

From any host with a port on the fabric (the SM host, or any other), three runs of rdma-core's
own tools, parsed by railyard's parsers and judged by ``fabric.verify.sweep_judge``:

1. ``ibnetdiscover -o W -t T --cache FILE``: discovers the fabric through libibnetdisc's SMP
   engine, which keeps at most ``W`` SMPs outstanding (``max_smps``, the ``-o`` option, default
   2 in libibnetdisc) and gives each MAD ``T`` ms (``timeout_ms``; libibnetdisc retries each
   ``retries`` = 3 times, a value the tools do not expose), so a port that does not answer costs
   ``T`` x 4 ms, not the default 1 s x 4. The topology is parsed for the declared-vs-discovered
   diff (far end, width, speed); the node and port records go to the cache file.
2. ``iblinkinfo --load-cache FILE``: every port's state, physical state, width and speed, read
   from the cache (no MADs).
3. ``ibqueryerrors --load-cache FILE --threshold-file /dev/null --skip-sl -t T``: every node's
   PMA, one ClassPortInfo and one PortCounters query per node where the PMA supports
   AllPortSelect (switches: one query for all ports, then a query per port only when the sum is
   not zero), per port otherwise. With every threshold at 0 it prints every non-zero error
   counter, so a port it does not list read zeros. ``--skip-sl`` skips the SA PathRecord query
   (the default asks the SM for the SL of every LID; without an SM answering, the tool fails).
   Steps 2 and 3 run at the same time.

Why drive the tools and not bind libibnetdisc/libibmad with ctypes: binding them is not sound
from Python. libibnetdisc returns ``ibnd_fabric_t``, a tree of C structs (``ibnd_node_t``,
``ibnd_port_t``, raw 64-byte MAD payloads such as ``info``) whose layouts a ctypes mirror would
copy by hand from ``ibnetdisc.h`` with nothing checking them against the installed library; a
mismatch reads garbage or crashes the controller process, where a tool failure is an exit code.
libibmad's PMA calls (``pma_query_via``) are synchronous, one MAD at a time, exactly what
``ibqueryerrors`` already does with them. The tools expose the knobs the sweep needs
(``-o`` window, ``-t`` timeout, ``--cache``/``--load-cache``), run anywhere rdma-core is
installed (a vantage host over SSH as well as this machine), and their text is what the project's
parsers are tested on. Writing a MAD layer of our own would duplicate libibnetdisc's engine.

No false failures: a run that failed for a reason the fabric did not cause (a non-zero exit,
no summary line, an ``ibwarn`` from the MAD layer, a timeout of the run itself) is retried, at
most ``attempts`` times, each run bounded by ``tool_timeout_s``; what still fails is a harness
error (``error`` results), never a port. A discovery that kept reporting MAD errors makes every
cable it did not find an error ("not confirmed"), not a missing cable; a node whose PMA query
kept failing has its cables' counters reported as not read.

Counter rises need two readings: pass the previous sweep's ``reading`` as ``before`` (what
``fabric check`` keeps between runs), or ``window_s`` to read twice in one sweep.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from fabric.graph import FabricGraph
from fabric.parsers.common import ParseError
from fabric.parsers.iblinkinfo import IblinkinfoReport
from fabric.parsers.iblinkinfo import parse as parse_iblinkinfo
from fabric.parsers.ibnetdiscover import parse as parse_ibnetdiscover
from fabric.parsers.ibqueryerrors import IbqueryerrorsReport
from fabric.parsers.ibqueryerrors import parse as parse_ibqueryerrors
from fabric.verify import sweep_judge
from fabric.verify.results import CheckResult
from fabric.verify.sweep_judge import CounterRead


@dataclass(frozen=True)
class Completed:
    """One tool run: exit status, stdout, stderr (exit 124: the run timed out)."""

    rc: int
    stdout: str
    stderr: str


#: Runs ``argv`` on the vantage host within ``timeout`` seconds.
Run = Callable[[list[str], float], Completed]


def local_runner(env: Mapping[str, str] | None = None) -> Run:
    """Run the tools on this host (``env`` added to the environment: umad2sim's, in the lab)."""
    full = dict(os.environ, **(env or {}))

    def run(argv: list[str], timeout: float) -> Completed:
        try:
            done = subprocess.run(
                argv, env=full, capture_output=True, text=True, timeout=timeout, check=False
            )
        except subprocess.TimeoutExpired:
            return Completed(124, "", f"{argv[0]}: timed out after {timeout:.0f}s")
        except OSError as err:
            return Completed(127, "", f"{argv[0]}: {err}")
        return Completed(done.returncode, done.stdout, done.stderr)

    return run


def shell_runner(run_command: Callable[[str], tuple[int, str, str]]) -> Run:
    """Run the tools through a shell on the vantage host (the check suite's SSH connection):
    ``run_command(command)`` returns (exit code, stdout, stderr); each run is bounded there by
    ``timeout``, its argv quoted."""

    def run(argv: list[str], timeout: float) -> Completed:
        return Completed(*run_command(f"timeout {max(1, round(timeout))} {shlex.join(argv)}"))

    return run


@dataclass(frozen=True)
class SweepConfig:
    """How the sweep runs its tools."""

    #: SMPs outstanding at once during discovery (libibnetdisc's ``max_smps``).
    max_smps: int = 8
    #: Each MAD's timeout (ms); libibnetdisc and libibmad retry 3 times.
    timeout_ms: int = 50
    #: Runs of a tool before its failure is reported as a harness error.
    attempts: int = 3
    #: Bound on one tool run (s).
    tool_timeout_s: float = 120.0
    #: The discovery cache, a path on the vantage host.
    cache: str = "/tmp/railyard-sweep.cache"
    #: The vantage HCA and port (``-C``/``-P``); None: the tools' default.
    ca: str | None = None
    port: int | None = None

    def local(self) -> list[str]:
        out = ["-C", self.ca] if self.ca else []
        return out + (["-P", str(self.port)] if self.port else [])


class SweepError(RuntimeError):
    """The sweep could not run at all (discovery failed every time): a harness error."""


@dataclass
class Capture:
    """The tools' parsed output from one sweep."""

    discovered: FabricGraph
    views: dict[sweep_judge.End, sweep_judge.PortView]
    reading: CounterRead
    taken_at: float
    incomplete: str | None = None
    harness: list[str] = field(default_factory=list)


#: libibnetdisc's error for a Mellanox ExtendedPortInfo query a port refused: it prints the
#: bad status, then carries on without that attribute (``mlnx_ext_port_info_err`` in
#: ``libibnetdisc/query_smp.c``), so the node is not lost.
_BENIGN = ("Attr 0xff90:",)


def _trouble(done: Completed) -> str | None:
    """Why a run is not to be trusted, from its exit and stderr; None when clean."""
    if done.rc != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return f"exit {done.rc}: {last.strip()[:200]}"
    for line in done.stderr.splitlines():
        if line.strip() and not any(mark in line for mark in _BENIGN):
            return line.strip()[:200]
    return None


def _timeout_ms(config: SweepConfig, attempt: int) -> str:
    """The MAD timeout of a tool's ``attempt``-th run (0 first): ``timeout_ms``, then four
    times longer each rerun. A reply later than its timeout is what a loaded responder sends,
    and libibnetdisc 44 handles one badly ("Failed to find matching smp for trid", then
    "double free or corruption" and SIGABRT, seen on a lab node at load 60): the rerun waits
    longer instead of meeting the same late replies."""
    return str(config.timeout_ms * 4**attempt)


def discover(run: Run, config: SweepConfig) -> tuple[FabricGraph, str | None]:
    """``ibnetdiscover`` as ``config`` says, rerun with longer MAD timeouts when a run fails:
    the fabric, and a note when every run reported MAD errors; ``SweepError`` when none ran."""
    last: tuple[FabricGraph, str] | None = None
    why = "not run"
    for attempt in range(max(1, config.attempts)):
        argv = [
            "ibnetdiscover",
            *config.local(),
            "-o",
            str(config.max_smps),
            "-t",
            _timeout_ms(config, attempt),
            "--cache",
            config.cache,
        ]
        done = run(argv, config.tool_timeout_s)
        trouble = _trouble(done)
        if done.rc != 0:
            why = trouble or f"exit {done.rc}"
            continue
        try:
            graph = parse_ibnetdiscover(done.stdout)
        except ParseError as err:
            why = f"unreadable output: {err}"
            continue
        if trouble is None:
            return graph, None
        last, why = (graph, trouble), trouble
    if last is None:
        raise SweepError(f"ibnetdiscover failed {config.attempts} times: {why}")
    return last[0], f"ibnetdiscover reported MAD errors {config.attempts} times: {last[1]}"


def _linkinfo(run: Run, config: SweepConfig) -> IblinkinfoReport:
    argv = ["iblinkinfo", *config.local(), "--load-cache", config.cache]
    why = "not run"
    for _ in range(max(1, config.attempts)):
        done = run(argv, config.tool_timeout_s)
        if done.rc == 0:
            try:
                report = parse_iblinkinfo(done.stdout)
            except ParseError as err:
                why = f"unreadable output: {err}"
                continue
            if report.ok:
                return report
            why = report.reason or "failed"
        else:
            why = _trouble(done) or f"exit {done.rc}"
    raise SweepError(f"iblinkinfo failed {config.attempts} times: {why}")


def _queryerrors(run: Run, config: SweepConfig) -> tuple[IbqueryerrorsReport, list[str]]:
    """The counters; a run with PMA failures is retried and each node taken from the first run
    that read it. Returns the merged report and the harness notes."""
    merged: IbqueryerrorsReport | None = None
    notes: list[str] = []
    for attempt in range(max(1, config.attempts)):
        argv = [
            "ibqueryerrors",
            *config.local(),
            "--load-cache",
            config.cache,
            "--threshold-file",
            "/dev/null",
            "--skip-sl",
            "-t",
            _timeout_ms(config, attempt),
        ]
        done = run(argv, config.tool_timeout_s)
        try:
            report = parse_ibqueryerrors(done.stdout + "\n" + done.stderr)
        except ParseError as err:
            notes.append(f"ibqueryerrors: unreadable output: {err}")
            continue
        if not report.ok or done.rc not in (0, 1):  # exit 1: ports with errors were found
            notes.append(f"ibqueryerrors: {report.reason or _trouble(done)}")
            continue
        merged = report if merged is None else _merge(merged, report)
        if not merged.failures:
            return merged, notes
        notes.append(f"ibqueryerrors: {len(merged.failures)} PMA query failures, retried")
    if merged is None:
        why = notes[-1] if notes else "not run"
        raise SweepError(f"ibqueryerrors failed {config.attempts} times: {why}")
    return merged, notes


def _merge(old: IbqueryerrorsReport, new: IbqueryerrorsReport) -> IbqueryerrorsReport:
    """``old`` with the nodes it could not read taken from ``new`` where ``new`` read them."""
    failed_before = {f.name for f in old.failures}
    still = [f for f in new.failures if f.name in failed_before]
    failed_now = {f.name for f in still}
    nodes = [n for n in old.nodes if n.name not in failed_before]
    nodes += [n for n in new.nodes if n.name in failed_before and n.name not in failed_now]
    return old.model_copy(update={"nodes": nodes, "failures": still})


def capture(run: Run, config: SweepConfig) -> Capture:
    """Discover, then read every port's state and counters (the tools, retried)."""
    discovered, incomplete = discover(run, config)
    with ThreadPoolExecutor(max_workers=2) as pool:
        links = pool.submit(_linkinfo, run, config)
        errors = pool.submit(_queryerrors, run, config)
        views = sweep_judge.port_views(links.result(), discovered)
        try:
            report, notes = errors.result()
        except SweepError as err:  # states were read: only the counters are unknown
            report, notes = None, [str(err)]
    taken_at = time.monotonic()
    if report is None:
        reading = CounterRead({}, dict.fromkeys(views, notes[-1]))
    else:
        reading = sweep_judge.counter_reading(report, views, discovered)
    return Capture(discovered, views, reading, taken_at, incomplete, notes)


@dataclass
class SweepOutcome:
    """The judged cables, the counter reading to keep for the next sweep, the harness notes."""

    results: list[CheckResult]
    capture: Capture
    seconds: dict[str, float]


def sweep(
    declared: FabricGraph,
    run: Run,
    config: SweepConfig | None = None,
    before: Capture | None = None,
    window_s: float = 0.0,
    overrides: Mapping[str, int | None] | None = None,
) -> SweepOutcome:
    """Judge every cable of ``declared`` from one vantage point (module docstring).

    ``before``: the previous sweep's capture (its counters are the first reading); else, with
    ``window_s`` > 0, counters are read, and read again ``window_s`` seconds later. A sweep that
    cannot run at all returns one ``error`` result naming why.
    """
    config = config or SweepConfig()
    started = time.monotonic()
    try:
        if before is None and window_s > 0:
            before = capture(run, config)
            time.sleep(window_s)
        now = capture(run, config)
    except SweepError as err:
        result = CheckResult(
            name="test_fabric_sweep", param="sweep", outcome="error", message=str(err)
        )
        return SweepOutcome([result], Capture(FabricGraph(), {}, CounterRead({}, {}), 0.0), {})
    captured = time.monotonic()
    results = sweep_judge.judge(
        declared,
        now.discovered,
        now.views,
        now.reading,
        before.reading if before is not None else None,
        (now.taken_at - before.taken_at) if before is not None else 0.0,
        overrides,
        now.incomplete,
    )
    done = time.monotonic()
    seconds = {"tools": captured - started, "judge": done - captured, "total": done - started}
    return SweepOutcome(results, now, seconds)
