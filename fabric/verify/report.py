"""Reports: terminal table (rich), Markdown, and the fabric picture (graphviz PNG + SVG).

The picture is the declared graph; a link is red when a failing check names it (a port on
either end, a declared-link diff, a pair crossing it is not enough), a host box is red when
a failing check names that host.
"""

from __future__ import annotations

import shutil
import subprocess
import xml.etree.ElementTree as ET
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table

from fabric.graph import FabricGraph
from fabric.verify import picture
from fabric.verify.causes import Cause, Diagnosis, diagnose, explained, key
from fabric.verify.picture import legend_lines
from fabric.verify.results import CheckResult

if TYPE_CHECKING:
    from fabric.spec import ClusterSpec

#: Colours of the picture (``fabric.verify.picture``); ORANGE: a cable whose error counters rise
#: (``counters:`` subjects) but that no other check fails.
RED, GREEN, GREY, ORANGE = picture.RED, picture.GREEN, picture.GREY, picture.ORANGE
#: Seconds graphviz gets to draw one picture.
DOT_TIMEOUT = 120


def terminal_table(
    results: list[CheckResult],
    not_generated: dict[str, str],
    console: Console | None = None,
    causes: list[Cause] | None = None,
) -> None:
    """Print the root causes, then the failures by cause, the checks that could not run, a
    per-check count, and the checks not generated. ``causes``: found with the declared graph
    (``RunOutcome.causes``); found from the results alone when not given."""
    console = console or Console()
    found = _diagnosis(results, causes)
    if found.causes:
        table = Table(title="Root causes", show_lines=False)
        table.add_column("cause", overflow="fold")
        for line in found.headlines():
            table.add_row(line, style="red")
        console.print(table)
    failed = [r for r in results if r.outcome == "failed"]
    if failed:
        cause_of = found.cause_of()
        table = Table(title="Failed checks", show_lines=False)
        for col in ("cause", "check", "subject", "message"):
            table.add_column(col, overflow="fold")
        for r in _by_cause(failed, found):
            cause = cause_of.get(key(r))
            label = f"{cause.what}: {cause.subject}" if cause else "no cause found"
            table.add_row(label, r.name, r.param, r.message or r.outcome, style="red")
        console.print(table)
    if found.errors:
        table = Table(title="Could not run (harness or tool error, not a fabric failure)")
        for col in ("check", "subject", "error"):
            table.add_column(col, overflow="fold")
        for r in found.errors:
            table.add_row(r.name, r.param, r.message or r.outcome, style="yellow")
        console.print(table)
    counts = Table(title="Checks")
    for col in ("check", "passed", "failed", "error", "skipped"):
        counts.add_column(col)
    for name, row in _counts(results).items():
        counts.add_row(
            name,
            *(str(row[k]) for k in ("passed", "failed", "error", "skipped")),
            style="red" if row["failed"] else "yellow" if row["error"] else None,
        )
    console.print(counts)
    if not_generated:
        ng = Table(title="Not generated")
        ng.add_column("check")
        ng.add_column("reason", overflow="fold")
        for name, reason in sorted(not_generated.items()):
            ng.add_row(name, reason)
        console.print(ng)


def _diagnosis(results: list[CheckResult], causes: list[Cause] | None) -> Diagnosis:
    return explained(results, causes) if causes is not None else diagnose(results)


def _by_cause(failed: list[CheckResult], found: Diagnosis) -> list[CheckResult]:
    """Failures in cause order, the unexplained ones last."""
    order = {k: i for i, cause in enumerate(found.causes) for k in cause.checks}
    return sorted(failed, key=lambda r: order.get(key(r), len(order)))


def _counts(results: list[CheckResult]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for r in results:
        row = out.setdefault(r.name, {"passed": 0, "failed": 0, "error": 0, "skipped": 0})
        row[r.outcome] += 1
    return out


def markdown(
    results: list[CheckResult],
    not_generated: dict[str, str],
    title: str,
    picture: str | None = None,
    causes: list[Cause] | None = None,
    spec: ClusterSpec | None = None,
    graph: FabricGraph | None = None,
) -> str:
    """A Markdown report: verdict, root causes, the picture and its legend (``graph``), failures
    by cause, checks that could not run, counts per check, checks not generated. A simulated
    ``spec`` gets one line on its numbers under the verdict."""
    found = _diagnosis(results, causes)
    failed = [r for r in results if r.outcome == "failed"]
    errors = [r for r in results if r.outcome == "error"]
    verdict = "FAILED" if failed else "ERROR" if errors else "PASSED"
    lines = [
        f"# {title}: {verdict}",
        "",
        f"{len(results)} checks, {len(failed)} failed, {len(errors)} could not run.",
        "",
    ]
    if spec is not None and spec.simulated:
        lines += [f"Note: {SIMULATED_NOTE}.", ""]
    if found.causes:
        lines += ["## Root causes", ""]
        lines += [f"- {_cell(line)}" for line in found.headlines()]
        lines += [""]
    if picture:
        lines += [f"![fabric]({picture})", ""]
        if graph is not None:
            lines += [f"- {line}" for line in legend_lines(graph, legend(spec))] + [""]
    if failed:
        cause_of = found.cause_of()
        lines += [
            "## Failed",
            "",
            "| cause | check | subject | message |",
            "| --- | --- | --- | --- |",
        ]
        for r in _by_cause(failed, found):
            cause = cause_of.get(key(r))
            label = f"{cause.what}: {cause.subject}" if cause else "no cause found"
            lines.append(
                f"| {_cell(label)} | {r.name} | {r.param} | {_cell(r.message or r.outcome)} |"
            )
        lines.append("")
    if found.errors:
        lines += [
            "## Could not run",
            "",
            "Harness or tool errors: the check could not look; not a fabric failure.",
            "",
            "| check | subject | error |",
            "| --- | --- | --- |",
        ]
        lines += [
            f"| {r.name} | {r.param} | {_cell(r.message or r.outcome)} |" for r in found.errors
        ]
        lines.append("")
    lines += [
        "## Checks",
        "",
        "| check | passed | failed | error | skipped |",
        "| --- | --- | --- | --- | --- |",
    ]
    lines += [
        f"| {n} | {c['passed']} | {c['failed']} | {c['error']} | {c['skipped']} |"
        for n, c in _counts(results).items()
    ]
    if not_generated:
        lines += ["", "## Not generated", "", "| check | reason |", "| --- | --- |"]
        lines += [f"| {n} | {_cell(r)} |" for n, r in sorted(not_generated.items())]
    return "\n".join(lines) + "\n"


def annotate_junit(path: Path, results: list[CheckResult], causes: list[Cause]) -> None:
    """Add the root causes to a pytest JUnit file: a ``<properties>`` block on the testsuite
    (``railyard.cause`` per headline, ``railyard.could_not_run``), and a ``railyard.cause``
    property on each testcase a cause explains. Test counts and outcomes stay pytest's."""
    found = explained(results, causes)
    cause_of = found.cause_of()
    tree = ET.parse(path)
    for suite in tree.getroot().iter("testsuite"):
        props = suite.find("properties")
        if props is None:
            props = ET.Element("properties")
            suite.insert(0, props)
        for line in found.headlines():
            ET.SubElement(props, "property", name="railyard.cause", value=line)
        ET.SubElement(
            props, "property", name="railyard.could_not_run", value=str(len(found.errors))
        )
        for case in suite.iter("testcase"):
            cause = cause_of.get(case.get("name", ""))
            if cause is None:
                continue
            case_props = case.find("properties")
            if case_props is None:
                case_props = ET.Element("properties")
                case.insert(0, case_props)
            ET.SubElement(
                case_props,
                "property",
                name="railyard.cause",
                value=f"{cause.what}: {cause.subject}",
            )
    tree.write(path, encoding="utf-8", xml_declaration=True)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", "<br>")


def failing_subjects(results: Iterable[CheckResult]) -> set[str]:
    """Subjects (``port:h/d/p``, ``link:id``, ``host:h``, ``switch:s``) of failed checks (a
    check that could not run marks nothing: its harness failed, not the fabric)."""
    return {s for r in results if r.outcome == "failed" for s in r.subjects}


def checked_subjects(results: Iterable[CheckResult]) -> set[str]:
    """Subjects of every check that ran (passed, failed or could not run; not skipped)."""
    return {s for r in results if r.outcome != "skipped" for s in r.subjects}


#: One line under a simulated fabric's numbers (``lab status`` says the same).
SIMULATED_NOTE = (
    "simulated fabric: ibsim's fastest rate is HDR, so a 400 Gb/s (NDR) link in the spec runs "
    "at 200 Gb/s here, and the HCA a node calls ibsim0 is the spec's mlx5_0 (the lab maps "
    "device names)"
)


def legend(spec: ClusterSpec | None) -> picture.Legend:
    """The picture's legend facts from the spec: the expected master SM, the simulated note."""
    if spec is None:
        return picture.Legend()
    from fabric.spec.sm import expected_master

    ib = spec.fabric.infiniband
    sms = ib.subnet_managers if ib else []
    index = expected_master(sms) if sms else None
    master = None if index is None else (sms[index].host or sms[index].switch)
    return picture.Legend(master_sm=master, note=SIMULATED_NOTE if spec.simulated else None)


def fabric_dot(
    graph: FabricGraph, results: Iterable[CheckResult], spec: ClusterSpec | None = None
) -> str:
    """Graphviz DOT of ``graph`` in layers (``fabric.verify.picture``): failing links, ports and
    hosts in red; a cable whose only failure is rising error counters in orange; what no check
    named in grey; a legend (the master SM and the simulated note from ``spec`` when given)."""
    results = list(results)
    marks = picture.Marks.of(failing_subjects(results), checked_subjects(results))
    return picture.fabric_dot(graph, marks, legend=legend(spec))


def render_picture(dot: str, out_dir: Path, stem: str = "fabric") -> list[Path]:
    """Render DOT to ``stem.png`` and ``stem.svg`` with graphviz ``dot``; return the files."""
    if shutil.which("dot") is None:
        raise RuntimeError("graphviz 'dot' is not installed; apt-get install graphviz")
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / f"{stem}.dot").write_text(dot)
    files = []
    for fmt in ("png", "svg"):
        target = out_dir / f"{stem}.{fmt}"
        subprocess.run(
            ["dot", f"-T{fmt}", "-o", str(target)],
            input=dot,
            text=True,
            check=True,
            timeout=DOT_TIMEOUT,
        )
        files.append(target)
    return files


def add_left_out(report: Path, left_out: dict[str, str]) -> None:
    """Add a "Left out by --limit" section to a written report.md: each family the limit
    left out, not checked or checked in part, and why."""
    if not left_out or not report.is_file():
        return
    lines = ["", "## Left out by --limit", "", "| family | what and why |", "| --- | --- |"]
    lines += [f"| {family} | {_cell(why)} |" for family, why in sorted(left_out.items())]
    report.write_text(report.read_text().rstrip("\n") + "\n" + "\n".join(lines) + "\n")
