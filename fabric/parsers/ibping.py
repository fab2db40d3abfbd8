"""``ibping``: pongs, the statistics block, and the tool's MAD failures."""

from __future__ import annotations

import re

from fabric.parsers.common import (
    Model,
    ParseError,
    ToolResult,
    build,
    first_content_line,
    lines,
)

TOOL = "ibping"

_PONG = re.compile(r"^Pong from (?P<host>.*?) \((?P<dest>[^)]*)\): time (?P<ms>[\d.]+) ms\s*$")
_STATS = re.compile(r"^--- (?P<host>.*?)\s*\((?P<dest>[^)]*)\) ibping statistics ---\s*$")
_COUNTS = re.compile(
    r"^(?P<tx>\d+) packets transmitted, (?P<rx>\d+) received, (?P<loss>\d+)% packet loss, "
    r"time (?P<ms>\d+) ms\s*$"
)
_RTT = re.compile(r"^rtt min/avg/max = (?P<min>[\d.]+)/(?P<avg>[\d.]+)/(?P<max>[\d.]+) ms\s*$")
_WARN = re.compile(r"^ibwarn: .*|^ibping: iberror: .*|^ibpanic: .*")


class Pong(Model):
    """One ``Pong from ...`` line."""

    host: str
    destination: str
    time_ms: float


class IbpingReport(ToolResult):
    """Replies and statistics; ``ok`` is False when no reply came back. ``ibping -f`` (flood:
    no pause between echoes) prints no ``Pong`` lines, only the statistics."""

    pongs: list[Pong] = []
    host: str | None = None
    destination: str | None = None
    transmitted: int | None = None
    received: int | None = None
    loss_percent: int | None = None
    time_ms: int | None = None
    rtt_min_ms: float | None = None
    rtt_avg_ms: float | None = None
    rtt_max_ms: float | None = None
    warnings: list[str] = []

    @property
    def answered(self) -> int:
        """Echoes answered: the statistics' count, or the ``Pong`` lines where none."""
        return self.received if self.received is not None else len(self.pongs)


def parse(text: str) -> IbpingReport:
    """Parse ``ibping`` client output."""
    data: dict[str, object] = {"pongs": [], "warnings": []}
    for lineno, line in lines(text):
        stripped = line.strip()
        if not stripped:
            continue
        if match := _PONG.match(stripped):
            data["pongs"].append(  # type: ignore[attr-defined]
                {"host": match["host"], "destination": match["dest"], "time_ms": match["ms"]}
            )
        elif match := _STATS.match(stripped):
            data.update(host=match["host"] or None, destination=match["dest"])
        elif match := _COUNTS.match(stripped):
            data.update(
                transmitted=int(match["tx"]),
                received=int(match["rx"]),
                loss_percent=int(match["loss"]),
                time_ms=int(match["ms"]),
            )
        elif match := _RTT.match(stripped):
            data.update(
                rtt_min_ms=float(match["min"]),
                rtt_avg_ms=float(match["avg"]),
                rtt_max_ms=float(match["max"]),
            )
        elif _WARN.match(stripped):
            data["warnings"].append(stripped)  # type: ignore[attr-defined]
        else:
            raise ParseError(TOOL, lineno, "a 'Pong from', statistics or ibwarn line", line)
    warnings: list[str] = data["warnings"]  # type: ignore[assignment]
    if "transmitted" not in data and not warnings:
        lineno, line = first_content_line(text)
        raise ParseError(TOOL, lineno, "'N packets transmitted, N received, ...'", line)
    if not data["pongs"] and not data.get("received"):
        fatal = [w for w in warnings if "iberror" in w or "ibpanic" in w]
        loss = data.get("loss_percent")
        reason = fatal[0] if fatal else f"{loss}% packet loss" if loss is not None else warnings[0]
        data.update(ok=False, reason=reason)
    return build(TOOL, IbpingReport, data, text=text)
