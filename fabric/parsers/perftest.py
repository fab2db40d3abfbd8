"""perftest (``ib_write_bw``, ``ib_send_bw``, ``ib_read_lat`` ...), client or server side.

One file may hold several runs (a client block then a server block, or two processes'
lines interleaved): each title line starts a run. Units are perftest's own
(``MB/sec``, ``Gb/sec`` with ``--report_gbits``, ``usec``); nothing is converted.
"""

from __future__ import annotations

import re
from typing import Literal

from fabric.parsers.common import Model, Number, ParseError, ToolResult, build, lines, number

TOOL = "perftest"

_TITLE = re.compile(r"^\s*(?P<title>[A-Za-z_ ]+?\s(?P<kind>BW|Latency) Test)\s*$")
_BANNER = re.compile(r"^\s*\*+\s*$|^\s*\*\s*Waiting for client to connect\.\.\.\s*\*\s*$")
_RULE = re.compile(r"^\s*-{10,}\s*$")
_ADDRESS = re.compile(
    r"^\s*(?P<side>local|remote) address:\s*LID (?P<lid>\S+) QPN (?P<qpn>\S+) PSN (?P<psn>\S+)"
)
_GID = re.compile(r"^\s*GID:\s*(?P<gid>[0-9a-fA-F:]+)\s*$")
_HEADER = re.compile(r"^\s*#bytes\s+#iterations\s+(?P<rest>.*)$")
_ROW = re.compile(r"^\s*\d+\s+\d+\s+[\d.]+")
_SETTING = re.compile(r"([A-Za-z][A-Za-z0-9_.* ]*?)\s*:\s*(\S+)")
_WARNING = re.compile(r"^\s*(Conflicting CPU frequency|libibverbs: Warning|Warning)", re.I)
_FAILURE = re.compile(r"couldn't|failed|error|unable|cannot|can't|retry exceeded", re.I)
#: A perftest built without CUDA refusing ``--use_cuda``: releases whose option table holds it
#: only under ``HAVE_CUDA`` leave it to getopt (``ib_write_bw: unrecognized option
#: '--use_cuda=0'``, Debian bookworm's 4.5+0.17), later ones (the memory types of 2022-12,
#: ``src/perftest_parameters.c``) print `` Unsupported memory type``.
_NO_CUDA = re.compile(r"unrecognized option '--use_cuda|^\s*Unsupported memory type\s*$")


_USAGE_CUDA = re.compile(r"^\s+--use_cuda=<", re.M)


def usage_has_cuda(text: str) -> bool | None:
    """Whether a perftest's usage (``ib_write_bw -h``) offers ``--use_cuda=<cuda device id>``:
    it lists it only when built with CUDA (``#ifdef HAVE_CUDA`` in older releases,
    ``cuda_memory_supported()`` in later ones). None: not a usage text."""
    if "Usage:" not in text:
        return None
    return bool(_USAGE_CUDA.search(text))


def cuda_unsupported(text: str) -> str | None:
    """The line by which a perftest built without CUDA refused ``--use_cuda``, or None: the
    harness's problem (install a CUDA-built perftest), never the fabric's."""
    return next((line.strip() for _, line in lines(text) if _NO_CUDA.search(line)), None)


class Endpoint(Model):
    """A ``local address:`` or ``remote address:`` line (and its GID line)."""

    lid: int
    qpn: int
    psn: int
    gid: str | None = None


class BwRow(Model):
    """One bandwidth result row, in the run's ``unit``."""

    bytes: int
    iterations: int
    bw_peak: float
    bw_average: float
    msg_rate_mpps: float


class LatRow(Model):
    """One latency result row, in microseconds."""

    bytes: int
    iterations: int
    t_min: float
    t_max: float
    t_typical: float
    t_avg: float | None = None
    t_stdev: float | None = None
    p99: float | None = None
    p99_9: float | None = None


class PerftestRun(Model):
    """One test run: its settings, endpoints and result rows."""

    title: str
    kind: Literal["bw", "lat"]
    side: Literal["client", "server"]
    settings: dict[str, str] = {}
    device: str | None = None
    link_type: str | None = None
    mtu: int | None = None
    gid_index: int | None = None
    local: Endpoint | None = None
    remote: Endpoint | None = None
    unit: str | None = None
    bw: list[BwRow] = []
    lat: list[LatRow] = []


class PerftestReport(ToolResult):
    """Every run in the output, plus the tools' warnings."""

    runs: list[PerftestRun] = []
    warnings: list[str] = []

    @property
    def peak_bw_average(self) -> Number | None:
        """The best ``BW average`` over every run, in that run's unit."""
        values = [row.bw_average for run in self.runs for row in run.bw]
        return max(values) if values else None


def _settings(run: dict[str, object], line: str) -> bool:
    pairs = _SETTING.findall(line)
    if not pairs:
        return False
    settings: dict[str, str] = run["settings"]  # type: ignore[assignment]
    for key, value in pairs:
        settings[" ".join(key.split())] = value
    return True


def _row(run: dict[str, object], line: str, lineno: int) -> None:
    values = line.split()
    try:
        if run["kind"] == "bw":
            size, iters, peak, avg, rate = values
            row: dict[str, Number] = {
                "bytes": int(size),
                "iterations": int(iters),
                "bw_peak": float(peak),
                "bw_average": float(avg),
                "msg_rate_mpps": float(rate),
            }
            run["bw"].append(row)  # type: ignore[attr-defined]
        else:
            names = ("t_min", "t_max", "t_typical", "t_avg", "t_stdev", "p99", "p99_9")
            row = {"bytes": int(values[0]), "iterations": int(values[1])}
            row.update({n: number(v) for n, v in zip(names, values[2:], strict=False)})
            run["lat"].append(row)  # type: ignore[attr-defined]
    except ValueError as err:
        raise ParseError(TOOL, lineno, f"a {run['kind']} result row", line) from err


def _finish(run: dict[str, object]) -> dict[str, object]:
    settings: dict[str, str] = run["settings"]  # type: ignore[assignment]
    run["device"] = settings.get("Device")
    run["link_type"] = settings.get("Link type")
    for key, field in (("Mtu", "mtu"), ("GID index", "gid_index")):
        if value := settings.get(key):
            if not value.removesuffix("[B]").isdecimal():
                raise ParseError(TOOL, 0, f"a number as the {key} setting", f"{key}: {value}")
            run[field] = int(value.removesuffix("[B]"))
    return run


def parse(text: str) -> PerftestReport:
    """Parse perftest output (one that refused ``--use_cuda`` is not ok, the refusal its reason:
    the usage text after it is not read)."""
    if refused := cuda_unsupported(text):
        reason = f"perftest built without CUDA: {refused}"
        return build(TOOL, PerftestReport, {"ok": False, "reason": reason, "runs": []}, text=text)
    runs: list[dict[str, object]] = []
    warnings: list[str] = []
    failures: list[str] = []
    server_next = False
    last_endpoint: dict[str, object] | None = None
    open_table = False  # result rows seen since the last '----' rule (perftest closes the table)
    for lineno, line in lines(text):
        if not line.strip():
            continue
        if _RULE.match(line):
            open_table = False
            continue
        if _BANNER.match(line):
            server_next = server_next or "Waiting" in line
            continue
        if match := _TITLE.match(line):
            kind = "bw" if match["kind"] == "BW" else "lat"
            side = "server" if server_next else "client"
            runs.append(
                {
                    "title": match["title"],
                    "kind": kind,
                    "side": side,
                    "settings": {},
                    "bw": [],
                    "lat": [],
                }
            )
            server_next = False
            continue
        if _WARNING.match(line):
            warnings.append(line.strip())
            continue
        if not runs:
            if _FAILURE.search(line):
                failures.append(line.strip())
                continue
            raise ParseError(TOOL, lineno, "a perftest title such as 'RDMA_Write BW Test'", line)
        run = runs[-1]
        if match := _ADDRESS.match(line):
            try:
                last_endpoint = {k: int(match[k], 16) for k in ("lid", "qpn", "psn")}
            except ValueError as err:
                raise ParseError(TOOL, lineno, "hexadecimal LID, QPN and PSN", line) from err
            run[match["side"]] = last_endpoint
        elif match := _GID.match(line):
            if last_endpoint is None:
                raise ParseError(TOOL, lineno, "a 'local address:' line before 'GID:'", line)
            last_endpoint["gid"] = match["gid"]
        elif match := _HEADER.match(line):
            unit = re.search(r"\[([^\]]+)\]", match["rest"])
            run["unit"] = unit[1] if unit else None
        elif _ROW.match(line):
            _row(run, line, lineno)
            open_table = True
        elif _FAILURE.search(line):
            failures.append(line.strip())
        elif not _settings(run, line):
            raise ParseError(TOOL, lineno, "a perftest setting, address or result line", line)
    if not runs and not failures:
        raise ParseError(TOOL, 0, "a perftest title such as 'RDMA_Write BW Test'")
    has_results = any(r["bw"] or r["lat"] for r in runs)
    reason = failures[0] if failures else None if has_results else "no result rows"
    if reason is None and open_table:
        reason = "perftest: the results table has no closing '----' line: the output was cut short"
    return build(
        TOOL,
        PerftestReport,
        {
            "ok": reason is None,
            "reason": reason,
            "runs": [_finish(r) for r in runs],
            "warnings": warnings,
        },
        text=text,
    )
