"""nccl-tests output (``all_reduce_perf``, ``all_gather_perf``, ``broadcast_perf`` ...).

The header (``# nccl-tests version``, ``# Collective test starting: all_reduce_perf``, the
``nThread ... nGpus ... minBytes ... maxBytes`` line, one ``Rank N ... on HOST device D``
line per rank), then one row per message size: ``size count type [redop] [root]`` and, out of
place then in place, ``time algbw busbw #wrong`` (older releases print an ``error`` column, a
float, where newer ones count wrong elements), and the trailer ``# Out of bounds values`` and
``# Avg bus bandwidth``. NCCL's own INFO lines may be interleaved; they are skipped. A
``Test failure``/``Test NCCL failure`` line is the tool's own failure: ``ok=False``.
"""

from __future__ import annotations

import re

from fabric.parsers.common import Model, ParseError, ToolResult, build, failed, lines

TOOL = "nccl_tests"

_VERSION = re.compile(r"^#\s*nccl-tests version (?P<version>\S+)")
_COLLECTIVE = re.compile(r"^#\s*Collective test starting: (?P<name>\S+)")
_PARAMS = re.compile(
    r"nThread (?P<threads>\d+) nGpus (?P<gpus>\d+) minBytes (?P<min>\d+) maxBytes (?P<max>\d+)"
)
_RANK = re.compile(
    r"^#?\s*Rank\s+(?P<rank>\d+)\s+(?:Group\s+\d+\s+)?Pid\s+(?P<pid>\d+)\s+on\s+(?P<host>\S+)"
    r"\s+device\s+(?P<device>\d+)\s+\[(?P<bus>[^\]]*)\]\s+(?P<name>.*?)\s*$"
)
_HEADER = re.compile(r"^#\s*size\s+count\s+type\b")
_ROW = re.compile(r"^\s*\d+\s+\d+\s+[A-Za-z]\w*\s")
_OOB = re.compile(r"^#\s*Out of bounds values\s*:\s*(?P<n>\d+)")
_AVG = re.compile(r"^#\s*Avg bus bandwidth\s*:\s*(?P<bw>\S+)")
_FAILURE = re.compile(r"\bTest (?:NCCL |CUDA )?failure\b.*|\bNCCL failure\b.*")
_INT = re.compile(r"^-?\d+$")


class Result(Model):
    """One half of a row (out of place or in place): time in microseconds, bandwidths in
    GB/s; ``wrong`` (count of wrong elements) or ``error`` (max error, older releases); both
    ``None`` for ``N/A`` (run with ``-c 0``)."""

    time_us: float | None
    algbw: float | None
    busbw: float | None
    wrong: int | None = None
    error: float | None = None


class Row(Model):
    """One message size."""

    size: int
    count: int
    type: str
    redop: str | None = None
    root: int | None = None
    out_of_place: Result
    in_place: Result


class Rank(Model):
    """A ``Rank N Pid P on HOST device D [BUS] NAME`` line."""

    rank: int
    host: str
    device: int
    bus: str
    name: str


class NcclTestsReport(ToolResult):
    """Every row and the trailer; ``peak_busbw`` is the highest bus bandwidth of any row."""

    version: str | None = None
    collective: str | None = None
    threads: int | None = None
    gpus_per_thread: int | None = None
    min_bytes: int | None = None
    max_bytes: int | None = None
    ranks: list[Rank] = []
    rows: list[Row] = []
    out_of_bounds: int | None = None
    avg_busbw: float | None = None
    peak_busbw: float | None = None
    wrong: int = 0

    @property
    def rank_count(self) -> int:
        """Distinct ranks the header lists (sixteen one-rank runs list ``Rank 0`` sixteen
        times: one rank)."""
        return len({r.rank for r in self.ranks})

    @property
    def rank_hosts(self) -> list[str]:
        """The distinct hosts of the header's ``Rank N ... on HOST`` lines, in order."""
        return list(dict.fromkeys(r.host for r in self.ranks))


#: A measured value as nccl-tests prints it (``%7.2f``, ``%6.0e``): finite, a decimal point.
_NUMBER = re.compile(r"^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$")
_NOT_MEASURED = "N/A"  # -c 0: no check; some releases print it for a time or bandwidth too


def _float(lineno: int, line: str, text: str) -> float | None:
    """A measured value; None for N/A. Anything else (a decimal comma from a locale, inf or
    nan from a zero time) is refused naming the line: never ``ok`` with null or infinite
    values (issue 44)."""
    if text == _NOT_MEASURED:
        return None
    if not _NUMBER.match(text) or not 0 <= (value := float(text)) < float("inf"):
        hint = (
            "a decimal comma: run nccl-tests with LC_ALL=C"
            if re.fullmatch(r"[+-]?\d+,\d+", text)
            else "not a finite number of 0 or more: the run's timing failed (a harness error)"
        )
        raise ParseError(
            TOOL, lineno, f"a number like 12.34 or N/A, not {text[:20]!r} ({hint})", line
        )
    return value


def _result(lineno: int, line: str, tokens: list[str]) -> dict[str, object]:
    time, algbw, busbw, check = tokens
    out: dict[str, object] = {
        "time_us": _float(lineno, line, time),
        "algbw": _float(lineno, line, algbw),
        "busbw": _float(lineno, line, busbw),
    }
    if _INT.match(check):
        out["wrong"] = int(check)
    elif (value := _float(lineno, line, check)) is not None:
        out["error"] = value
    return out


def _row(lineno: int, line: str) -> dict[str, object]:
    tokens = line.split()
    middle = tokens[3:-8]
    if len(tokens) < 11 or len(middle) > 2:
        raise ParseError(
            TOOL, lineno, "a row 'size count type [redop] [root] time algbw busbw #wrong x2'", line
        )
    redop = root = None
    if len(middle) == 2:
        redop, root = middle
    elif len(middle) == 1:
        redop, root = (None, middle[0]) if _INT.match(middle[0]) else (middle[0], None)
    if root is not None and not _INT.match(root):
        raise ParseError(TOOL, lineno, "a whole-number root column", line)
    return {
        "size": int(tokens[0]),
        "count": int(tokens[1]),
        "type": tokens[2],
        "redop": redop,
        "root": int(root) if root is not None else None,
        "out_of_place": _result(lineno, line, tokens[-8:-4]),
        "in_place": _result(lineno, line, tokens[-4:]),
    }


def parse(text: str) -> NcclTestsReport:
    """Parse an nccl-tests binary's output."""
    data: dict[str, object] = {}
    ranks: list[dict[str, object]] = []
    rows: list[dict[str, object]] = []
    header = False
    for lineno, line in lines(text):
        if match := _VERSION.match(line):
            data["version"] = match["version"]
        elif match := _COLLECTIVE.match(line):
            data["collective"] = match["name"]
        elif match := _RANK.match(line):
            ranks.append(
                {
                    "rank": int(match["rank"]),
                    "host": match["host"],
                    "device": int(match["device"]),
                    "bus": match["bus"],
                    "name": match["name"],
                }
            )
        elif _HEADER.match(line):
            header = True
        elif match := _OOB.match(line):
            data["out_of_bounds"] = int(match["n"])
        elif match := _AVG.match(line):
            data["avg_busbw"] = _float(lineno, line, match["bw"])
        elif _ROW.match(line) and "NCCL INFO" not in line:
            rows.append(_row(lineno, line))
        elif failure := _FAILURE.search(line):
            data |= {"ranks": ranks, "rows": rows}
            return failed(TOOL, NcclTestsReport, data, failure.group(0).strip())
        if match := _PARAMS.search(line):
            data |= {
                "threads": int(match["threads"]),
                "gpus_per_thread": int(match["gpus"]),
                "min_bytes": int(match["min"]),
                "max_bytes": int(match["max"]),
            }
    if not (rows or header or "avg_busbw" in data or "threads" in data):
        raise ParseError(TOOL, 0, "nccl-tests output (the '# size count type' header or rows)")
    busbws = [
        bw
        for row in rows
        for half in ("out_of_place", "in_place")
        if (bw := row[half]["busbw"]) is not None  # type: ignore[index]
    ]
    data |= {
        "ranks": ranks,
        "rows": rows,
        "peak_busbw": max(busbws) if busbws else None,
        "wrong": sum(
            row[half].get("wrong") or 0  # type: ignore[attr-defined]
            for row in rows
            for half in ("out_of_place", "in_place")
        ),
    }
    return build(TOOL, NcclTestsReport, data, text=text)
