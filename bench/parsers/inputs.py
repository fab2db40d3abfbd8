"""Benchmark inputs: a real capture's records repeated up to a size.

A capture is split into header, records and footer; the records are repeated until the text
reaches the size, so every line is one the tool printed (tests/fixtures, see its SOURCES.md).
Most formats repeat as a whole (ibstat's CA blocks, perfquery's counter blocks, ...); the
ones that allow one header per run repeat their record lines only. ibnetdiscover's input is a
rail-optimized fat tree rendered by bench.topology (same line shapes as ibsim's real output,
checked there), sized by host count: repeated records would repeat GUIDs.
"""

from __future__ import annotations

import re
from pathlib import Path

from fabric.parsers import PARSERS

FIXTURES = Path(__file__).resolve().parents[2] / "tests" / "fixtures"

#: Tool -> (capture, regex of the record lines). Tools not listed repeat their first
#: newline-terminated capture as a whole.
RECORDS: dict[str, tuple[str, str]] = {
    "mlxconfig": ("mlxconfig__magnate3__1.txt", r"^\s+[A-Z][A-Z0-9_]+(\[\d+\])?\s+\S"),
    "ibping": ("ibping__ibsimparse__1.txt", r"^Pong from "),
    "ibtracert": ("ibtracert__ibsimparse__1.txt", r"^\[\d+\] -> "),
}

#: Bytes of rendered ibnetdiscover text per host (8 HCAs each), from bench/topology's table.
IBNETDISCOVER_BYTES_PER_HOST = 3_350


def capture_of(tool: str) -> str:
    """The capture a tool's input repeats: the listed one, or its first whole capture."""
    if tool in RECORDS:
        return RECORDS[tool][0]
    for path in sorted(FIXTURES.glob(f"{tool}__*.txt")):
        if path.read_bytes().endswith(b"\n"):
            return path.name
    raise LookupError(f"no newline-terminated capture of {tool} in {FIXTURES}")


def split(tool: str, text: str) -> tuple[str, str, str]:
    """(header, records, footer) of a capture."""
    if tool not in RECORDS:
        return "", text, ""
    record = re.compile(RECORDS[tool][1])
    lines = text.splitlines(keepends=True)
    marks = [i for i, line in enumerate(lines) if record.match(line)]
    first, last = marks[0], marks[-1] + 1
    return "".join(lines[:first]), "".join(lines[first:last]), "".join(lines[last:])


def build_input(tool: str, size: int, path: Path) -> int:
    """Write about ``size`` bytes of ``tool`` output to ``path``; return how many times the
    records (hosts, for ibnetdiscover) were repeated."""
    if tool == "ibnetdiscover":
        from bench.topology.fabric import graph, render_ibnetdiscover

        hosts = max(32, round(size / IBNETDISCOVER_BYTES_PER_HOST / 32) * 32)
        path.write_text(render_ibnetdiscover(graph(hosts)))
        return hosts
    header, records, footer = split(tool, (FIXTURES / capture_of(tool)).read_text())
    count = max(1, (size - len(header) - len(footer)) // len(records))
    with path.open("w") as out:
        out.write(header)
        for _ in range(count):
            out.write(records)
        out.write(footer)
    return count


def check() -> dict[str, bool]:
    """Each tool's 2-record input parses (the benchmark measures real work, not an error)."""
    import tempfile

    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for tool in PARSERS:
            path = Path(tmp) / tool
            header, records, footer = split(tool, (FIXTURES / capture_of(tool)).read_text())
            build_input(tool, len(header) + 2 * len(records) + len(footer), path)
            results[tool] = getattr(PARSERS[tool](path.read_text()), "ok", True)
    return results
