"""Port error counters: which ones, their thresholds per link speed, and judging two readings.

For the other engineers: this is the one home of railyard's counter logic. ``fabric watch``
(Prometheus), the check suite (the fabric sweep, ``sweep_judge.py``) and the Slurm health program
(``fabric/verify/health.py``, installed on every compute node by ``roles/node_health``) all
use it: :data:`COUNTERS` (perfquery name, short name, width in bits), :func:`thresholds`
(defaults per link rate, spec overrides), :func:`judge` (two readings -> breaches).

Readings come from ``perfquery`` (``fabric.parsers.perfquery`` on the controller side).
This module imports the standard library only: the health program runs on compute nodes,
where railyard's Python dependencies are not installed, so it carries its own reader of
perfquery's ``Name:....value`` lines (:func:`perfquery_values`); a unit test keeps it equal
to the parser on every perfquery fixture.

Thresholds are the largest increase allowed per minute of reading window (at least one
minute's budget is always allowed, so a 5 s window of an HDR link may see 12 symbol errors):

- ``SymbolErrorCounter``: a raw bit error ratio of 1e-12 at the link's data rate (InfiniBand
  Architecture Specification Vol. 2, physical layer BER objective of 10^-12; also the default
  of ibdiagnet's ``--ber_thresh``): ``ceil(rate_gbps * 1e9 * 60 * 1e-12)`` per minute, i.e.
  3 at QDR 40 Gb/s, 6 at EDR 100 Gb/s, 12 at HDR 200 Gb/s, 24 at NDR 400 Gb/s.
- ``LinkDownedCounter``, ``LinkErrorRecoveryCounter``: 0. A healthy cable neither drops nor
  retrains (IBTA Vol. 1, PortCounters: each is a link training failure or a link going down).
- ``PortRcvErrors``, ``PortRcvRemotePhysicalErrors``, ``LocalLinkIntegrityErrors``,
  ``ExcessiveBufferOverrunErrors``, ``PortXmitDiscards``: 0. Each counts packets lost or
  marked bad on this link; railyard's choice is that any new one is worth a look.
- ``PortXmitWait``: a congestion signal, not an error: reported, judged only when the spec
  sets ``health.counters.port_xmit_wait``.

The spec's ``health.counters`` (``fabric.spec.models.CounterThresholds``) overrides any of these.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

#: perfquery's own MAD timeout (ms) when the controller reads a port.
MAD_TIMEOUT_MS = 1000


@dataclass(frozen=True)
class Counter:
    """One PortCounters field: perfquery's name, railyard's short name, width in bits."""

    name: str
    short: str
    bits: int
    congestion: bool = False


#: The counters judged, in report order (widths of the plain PortCounters attribute).
COUNTERS: tuple[Counter, ...] = (
    Counter("SymbolErrorCounter", "symbol_errors", 16),
    Counter("LinkErrorRecoveryCounter", "link_error_recovery", 8),
    Counter("LinkDownedCounter", "link_downed", 8),
    Counter("PortRcvErrors", "port_rcv_errors", 16),
    Counter("PortRcvRemotePhysicalErrors", "port_rcv_remote_physical_errors", 16),
    Counter("LocalLinkIntegrityErrors", "local_link_integrity_errors", 4),
    Counter("ExcessiveBufferOverrunErrors", "excessive_buffer_overrun_errors", 4),
    Counter("PortXmitDiscards", "port_xmit_discards", 16),
    Counter("PortXmitWait", "port_xmit_wait", 32, congestion=True),
)
BY_SHORT = {c.short: c for c in COUNTERS}
BY_NAME = {c.name: c for c in COUNTERS}

#: Raw bit error ratio objective behind the symbol error default (see the module docstring).
BER_OBJECTIVE = 1e-12

_LINE = re.compile(r"^(?P<name>[A-Za-z0-9]+):\.+(?P<value>\S+)\s*$")
_HEADER = re.compile(r"^# Port (?P<ext>extended )?counters: ")


def cable_label(switch: str, switch_port: int, host: str, device: str, port: int) -> str:
    """A declared cable by both ends: ``leaf01 port 3 ↔ gpu03 mlx5_0 port 1``."""
    return f"{switch} port {switch_port} ↔ {host} {device} port {port}"


def symbol_error_limit(rate_gbps: float) -> int:
    """Symbol errors allowed per minute on a link of ``rate_gbps`` (BER 1e-12, at least 1)."""
    return max(1, math.ceil(rate_gbps * 1e9 * 60 * BER_OBJECTIVE - 1e-9))


def thresholds(
    rate_gbps: float, overrides: Mapping[str, int | None] | None = None
) -> dict[str, int | None]:
    """Short name -> increase allowed per minute (None: reported, never judged)."""
    out: dict[str, int | None] = {c.short: 0 for c in COUNTERS}
    out["symbol_errors"] = symbol_error_limit(rate_gbps)
    out["port_xmit_wait"] = None
    for short, value in (overrides or {}).items():
        if short not in BY_SHORT:
            raise ValueError(f"unknown counter {short!r}; known: {', '.join(BY_SHORT)}")
        if value is not None:
            out[short] = value
    return out


def perfquery_values(text: str) -> dict[str, int]:
    """perfquery's counter values by name; an extended block's values win over a plain one's.

    The node-side reader (standard library only); ``fabric.parsers.perfquery`` is the parser
    with the tool's failure forms, and a unit test holds both to the same values.
    """
    plain: dict[str, int] = {}
    extended: dict[str, int] = {}
    into = plain
    for line in text.splitlines():
        if header := _HEADER.match(line):
            into = extended if header["ext"] else plain
        elif match := _LINE.match(line):
            try:
                into[match["name"]] = int(match["value"], 0)
            except ValueError:
                continue
    return plain | extended


class CounterReadError(RuntimeError):
    """A port's counters could not be read (a tool or harness error, not a fabric failure)."""


def read_port(run: Callable[[str], tuple[int, str]], host: str, address: str) -> dict[str, int]:
    """One port's counters (perfquery name -> value): extended, else the plain PortCounters.

    ``run(command)`` runs a ``perfquery`` command line on ``host`` (the caller bounds it in
    time) and returns (exit code, output). The controller side of the readers: the check
    suite and ``fabric watch`` both read through it, with ``fabric.parsers.perfquery``.
    """
    from fabric.parsers.common import ParseError
    from fabric.parsers.perfquery import parse  # controller only: the parser needs pydantic

    values: dict[str, int] = {}
    for flag in ("-x ", ""):
        command = f"perfquery {flag}-t {MAD_TIMEOUT_MS} {address}"
        rc, text = run(command)
        if rc > 128:  # died of a signal (a crash, not an answer): once more
            rc, text = run(command)
        try:
            report = parse(text) if text.strip() else None
        except ParseError:
            if rc == 0:
                raise
            report = None  # a tool that failed printed no report: its last line says why
        if report is None or not report.ok or rc != 0:
            if flag:
                continue  # no extended counters here: the plain ones follow
            if report is not None and report.reason:
                reason = report.reason
            else:
                last = text.strip().splitlines()[-1:] or ["no output"]
                reason = f"exit {rc}: {last[0].strip()[:160]}"
            raise CounterReadError(f"{host}: perfquery {address} failed: {reason}")
        for block in report.blocks:
            values = dict(block.counters) | values
        if "SymbolErrorCounter" in values:
            break
    return values


@dataclass(frozen=True)
class Breach:
    """A counter that rose more than allowed between two readings (or a congestion report)."""

    counter: str
    delta: int
    allowed: int | None
    seconds: float
    saturated: bool = False

    @property
    def failing(self) -> bool:
        """True for an error over its threshold (congestion without a threshold only reports)."""
        return self.saturated or (self.allowed is not None and self.delta > self.allowed)

    def text(self) -> str:
        """``SymbolErrorCounter +40 in 5s (allowed 12)``."""
        allowed = "not judged" if self.allowed is None else f"allowed {self.allowed}"
        sat = ", saturated: clear it with perfquery -R" if self.saturated else ""
        return f"{self.counter} +{self.delta} in {self.seconds:.0f}s ({allowed}{sat})"


def allowed_in(per_minute: int | None, seconds: float) -> int | None:
    """Increase allowed in a window of ``seconds`` (at least one minute's budget)."""
    if per_minute is None:
        return None
    return math.floor(per_minute * max(seconds, 60.0) / 60.0)


def judge(
    before: Mapping[str, int],
    after: Mapping[str, int],
    seconds: float,
    limits: Mapping[str, int | None],
) -> list[Breach]:
    """Counters (perfquery names) that rose more than ``limits`` (short names, per minute)
    allow over ``seconds``, plus PortXmitWait's rise when it is not judged. A counter that
    went down was cleared in between: its new value is the rise. A counter missing from
    either reading is skipped (the port's PMA does not report it)."""
    out = []
    for counter in COUNTERS:
        if counter.name not in before or counter.name not in after:
            continue
        old, new = before[counter.name], after[counter.name]
        delta = new - old if new >= old else new
        saturated = not counter.congestion and new == (1 << counter.bits) - 1
        allowed = allowed_in(limits.get(counter.short), seconds)
        breach = Breach(counter.name, delta, allowed, seconds, saturated)
        if breach.failing or (allowed is None and delta > 0):
            out.append(breach)
    return out


def failing(breaches: list[Breach]) -> list[Breach]:
    """The breaches that fail a check (errors over threshold)."""
    return [b for b in breaches if b.failing]
