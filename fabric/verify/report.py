"""Reports: terminal table (rich), Markdown, and the fabric picture (graphviz PNG + SVG).

The picture is the declared graph; a link is red when a failing check names it (a port on
either end, a declared-link diff, a pair crossing it is not enough), a host box is red when
a failing check names that host.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterable
from pathlib import Path

from rich.console import Console
from rich.table import Table

from fabric.topology.graph import FabricGraph
from fabric.verify.results import CheckResult

RED, GREEN, GREY = "#d62728", "#2ca02c", "#7f7f7f"


def terminal_table(
    results: list[CheckResult], not_generated: dict[str, str], console: Console | None = None
) -> None:
    """Print failures first, then a per-check pass/fail count, then checks not generated."""
    console = console or Console()
    failed = [r for r in results if r.failed]
    if failed:
        table = Table(title="Failed checks", show_lines=False)
        for col in ("check", "subject", "message"):
            table.add_column(col, overflow="fold")
        for r in failed:
            table.add_row(r.name, r.param, r.message or r.outcome, style="red")
        console.print(table)
    counts = Table(title="Checks")
    for col in ("check", "passed", "failed", "skipped"):
        counts.add_column(col)
    for name, row in _counts(results).items():
        counts.add_row(
            name,
            str(row["passed"]),
            str(row["failed"]),
            str(row["skipped"]),
            style="red" if row["failed"] else None,
        )
    console.print(counts)
    if not_generated:
        ng = Table(title="Not generated")
        ng.add_column("check")
        ng.add_column("reason", overflow="fold")
        for name, reason in sorted(not_generated.items()):
            ng.add_row(name, reason)
        console.print(ng)


def _counts(results: list[CheckResult]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for r in results:
        row = out.setdefault(r.name, {"passed": 0, "failed": 0, "skipped": 0})
        row["failed" if r.failed else r.outcome] += 1
    return out


def markdown(
    results: list[CheckResult],
    not_generated: dict[str, str],
    title: str,
    picture: str | None = None,
) -> str:
    """A Markdown report: verdict, failures, counts per check, checks not generated."""
    failed = [r for r in results if r.failed]
    verdict = "FAILED" if failed else "PASSED"
    lines = [f"# {title}: {verdict}", "", f"{len(results)} checks, {len(failed)} failed.", ""]
    if picture:
        lines += [f"![fabric]({picture})", ""]
    if failed:
        lines += ["## Failed", "", "| check | subject | message |", "| --- | --- | --- |"]
        lines += [f"| {r.name} | {r.param} | {_cell(r.message or r.outcome)} |" for r in failed]
        lines.append("")
    lines += ["## Checks", "", "| check | passed | failed | skipped |", "| --- | --- | --- | --- |"]
    lines += [
        f"| {n} | {c['passed']} | {c['failed']} | {c['skipped']} |"
        for n, c in _counts(results).items()
    ]
    if not_generated:
        lines += ["", "## Not generated", "", "| check | reason |", "| --- | --- |"]
        lines += [f"| {n} | {_cell(r)} |" for n, r in sorted(not_generated.items())]
    return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", "<br>")


def failing_subjects(results: Iterable[CheckResult]) -> set[str]:
    """Subjects (``port:h/d/p``, ``link:id``, ``host:h``, ``switch:s``) of failed checks."""
    return {s for r in results if r.failed for s in r.subjects}


def _dot_id(name: str) -> str:
    return '"' + name.replace('"', "'") + '"'


def fabric_dot(graph: FabricGraph, results: Iterable[CheckResult]) -> str:
    """Graphviz DOT of ``graph``: failing links, ports and hosts in red."""
    bad = failing_subjects(results)
    bad_hosts = {s.split(":", 1)[1] for s in bad if s.startswith("host:")}
    bad_ports = {s.split(":", 1)[1] for s in bad if s.startswith("port:")}
    bad_links = {s.split(":", 1)[1] for s in bad if s.startswith("link:")}
    bad_switches = {s.split(":", 1)[1] for s in bad if s.startswith("switch:")}
    out = [
        "graph fabric {",
        "  rankdir=BT; splines=true; node [fontname=Helvetica fontsize=10]; edge [fontsize=8];",
    ]
    for sw in graph.switches.values():
        color = RED if sw.name in bad_switches else GREY
        out.append(
            f'  {_dot_id(sw.name)} [shape=box style=filled fillcolor="#e8e8e8" color="{color}"];'
        )
    for ca in graph.cas.values():
        host = ca.host or ca.guid
        failed = host in bad_hosts or any(p.startswith(f"{host}/") for p in bad_ports)
        color = RED if failed else GREEN
        out.append(
            f'  {_dot_id(graph.node_name(ca.guid))} [label="{host}\\n{ca.device}" shape=ellipse color="{color}"];'
        )
    for link in graph.links:
        a, b = graph.node_name(link.a.guid), graph.node_name(link.b.guid)
        ids = {f"{a}/{link.a.port}-{b}/{link.b.port}", f"{b}/{link.b.port}-{a}/{link.a.port}"}
        ports = {f"{a}/{link.a.port}", f"{b}/{link.b.port}"}
        failed = bool(ids & bad_links or ports & bad_ports)
        color, width = (RED, 2.5) if failed else ("#444444", 1.0)
        label = f"{link.a.port}:{link.b.port}"
        out.append(
            f'  {_dot_id(a)} -- {_dot_id(b)} [color="{color}" penwidth={width} label="{label}"];'
        )
    out.append("}")
    return "\n".join(out) + "\n"


def render_picture(dot: str, out_dir: Path, stem: str = "fabric") -> list[Path]:
    """Render DOT to ``stem.png`` and ``stem.svg`` with graphviz ``dot``; return the files."""
    if shutil.which("dot") is None:
        raise RuntimeError("graphviz 'dot' is not installed; apt-get install graphviz")
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / f"{stem}.dot").write_text(dot)
    files = []
    for fmt in ("png", "svg"):
        target = out_dir / f"{stem}.{fmt}"
        subprocess.run(["dot", f"-T{fmt}", "-o", str(target)], input=dot, text=True, check=True)
        files.append(target)
    return files
