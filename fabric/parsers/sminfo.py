"""``sminfo``: the subnet manager's LID, GUID, activity count, priority and state."""

from __future__ import annotations

import re

from fabric.parsers.common import (
    ParseError,
    ToolResult,
    find_failure,
    first_content_line,
    lines,
    normalize_guid,
)

TOOL = "sminfo"

_LINE = re.compile(
    r"^sminfo: sm lid (?P<lid>\d+) sm guid (?P<guid>0x[0-9a-fA-F]+), activity count "
    r"(?P<act>\d+) priority (?P<prio>\d+) state (?P<code>\d+) SMINFO_(?P<state>\w+)\s*$"
)


class SminfoReport(ToolResult):
    """The SMInfo record; ``state`` is MASTER, STANDBY, DISCOVER or NOTACTIVE."""

    sm_lid: int | None = None
    sm_guid: str | None = None
    activity_count: int | None = None
    priority: int | None = None
    state: str | None = None
    state_code: int | None = None


def parse(text: str) -> SminfoReport:
    """Parse ``sminfo`` output."""
    for _, line in lines(text):
        if match := _LINE.match(line.strip()):
            return SminfoReport(
                sm_lid=int(match["lid"]),
                sm_guid=normalize_guid(match["guid"]),
                activity_count=int(match["act"]),
                priority=int(match["prio"]),
                state=match["state"],
                state_code=int(match["code"]),
            )
    if reason := find_failure(text, [re.compile(r"^ibwarn: .*")]):
        failures = [line.strip() for _, line in lines(text) if "iberror" in line]
        return SminfoReport(ok=False, reason=failures[0] if failures else reason)
    lineno, line = first_content_line(text)
    raise ParseError(TOOL, lineno, "'sminfo: sm lid N sm guid 0x..., ... SMINFO_<STATE>'", line)
