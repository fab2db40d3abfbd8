"""OpenSM's log (``/var/log/opensm.log``, ``opensm -f FILE``): which routing engine configured
the switches, and whether the declared one fell back.

Each routing pass (``osm_ucast_mgr_process`` in OpenSM's ``osm_ucast_mgr.c``) tries the engines
of ``routing_engine`` in order; an engine that cannot route logs ``ERR`` lines and ``<engine>:
cannot build lid matrices`` (or ``fwd tables``), and when none can, the default engine
(minhop) routes. The pass ends with one INFO line, ``<engine> tables configured on all
switches``, or the ERROR ``No routing engine able to successfully configure switch tables``.
The fat-tree engine (``osm_ucast_ftree.c``) says why it gave up in INFO lines such as
``Fabric topology is not a fat-tree`` or ``Fabric topology is not fat-tree - falling back to
default routing``. OpenSM's default log level (0x03: errors and INFO) prints all of these.

A line reads ``Nov 26 18:51:01 104840 [4FF7D6C0] 0x01 -> ucast_mgr_route: ftree: cannot build
lid matrices``; a message of several lines continues without that prefix. Lines the parser does
not need are skipped, so a ``grep`` of the log parses as well as the whole file. The report
describes the **last** routing pass in the text.
"""

from __future__ import annotations

import re

from fabric.parsers.common import Model, ParseError, ToolResult, first_content_line

TOOL = "opensm_log"

_LINE = re.compile(
    r"^(?P<when>[A-Z][a-z]{2} +\d+ \d\d:\d\d:\d\d \d{6}) \[[0-9A-Fa-f]+\] "
    r"(?P<level>0x[0-9a-fA-F]{2}) -> (?P<msg>.*)$"
)
_CONFIGURED = re.compile(
    r"(?:osm_ucast_mgr_process: )?(?P<engine>\S+) tables configured on all switches"
)
_NO_ENGINE = "No routing engine able to successfully configure"
_CANNOT = re.compile(
    r"(?:ucast_mgr_route: )?(?P<engine>\S+): cannot build (?:lid matrices|fwd tables)"
)
#: ftree's (and the other engines') INFO lines saying why they gave up.
_GAVE_UP = re.compile(
    r"not (?:a )?fat-tree|[Ff]alling back to default routing|Failed ranking the tree|"
    r"has no valid compute nodes|Fabric rank is"
)


class LogLine(Model):
    """One logged message (continuation lines joined with a space)."""

    line: int
    when: str
    level: int
    message: str


class RoutingPass(Model):
    """One routing pass: the engine that configured the switches (None: none could), the
    engines that failed before it, and the messages saying why."""

    engine: str | None
    failed_engines: list[str] = []
    reasons: list[LogLine] = []
    errors: list[LogLine] = []
    ended: LogLine


class OpensmLogReport(ToolResult):
    """The last routing pass in the log (None when the log has none yet), and how many it
    holds."""

    last: RoutingPass | None = None
    passes: int = 0
    version: str | None = None


def _messages(text: str) -> list[LogLine]:
    out: list[LogLine] = []
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.rstrip("\r")
        if match := _LINE.match(line):
            out.append(
                LogLine.model_construct(
                    line=lineno,
                    when=match["when"],
                    level=int(match["level"], 16),
                    message=match["msg"].strip(),
                )
            )
        elif line.strip() and out and not _LINE.match(line):
            prev = out[-1]
            out[-1] = prev.model_copy(update={"message": f"{prev.message} {line.strip()}"})
    return out


def parse(text: str) -> OpensmLogReport:
    """Parse OpenSM's log (or lines grepped from it)."""
    messages = _messages(text)
    if not messages:
        lineno, line = first_content_line(text)
        raise ParseError(TOOL, lineno, "'Mon DD HH:MM:SS usec [thread] 0xLL -> message'", line)
    version = None
    passes: list[RoutingPass] = []
    failed: list[str] = []
    reasons: list[LogLine] = []
    errors: list[LogLine] = []
    for msg in messages:
        if msg.message.startswith("OpenSM ") and version is None:
            version = msg.message.removeprefix("OpenSM ").strip()
        if match := _CONFIGURED.search(msg.message):
            passes.append(
                RoutingPass(
                    engine=match["engine"],
                    failed_engines=failed,
                    reasons=reasons,
                    errors=errors,
                    ended=msg,
                )
            )
            failed, reasons, errors = [], [], []
        elif _NO_ENGINE in msg.message:
            passes.append(
                RoutingPass(
                    engine=None, failed_engines=failed, reasons=reasons, errors=errors, ended=msg
                )
            )
            failed, reasons, errors = [], [], []
        elif match := _CANNOT.search(msg.message):
            failed.append(match["engine"])
        elif _GAVE_UP.search(msg.message):
            reasons.append(msg)
        elif msg.level & 0x01 and " ERR " in f" {msg.message}":
            errors.append(msg)
    return OpensmLogReport(last=passes[-1] if passes else None, passes=len(passes), version=version)
