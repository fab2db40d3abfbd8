"""``ibccquery``: congestion-control (IBA class 0x21) attributes of a port, one or more records.

Each record starts ``# SwitchCongestionSetting: Lid 2`` and holds ``Key:.....value`` lines; a
blank line starts a group (``CACongestionSetting`` prints one group per SL, ``SL:`` first).
Several runs' output concatenated (one per LID, as the check reads a whole fabric) parse as
several records. A failed query (``ibccquery: iberror: failed: ...``) is ``ok=False`` with
that line as the reason, the records before it kept.
"""

from __future__ import annotations

import re

from fabric.parsers.common import (
    Model,
    ParseError,
    ToolResult,
    failed,
    failure_line,
    first_content_line,
    lines,
)

TOOL = "ibccquery"

_HEADER = re.compile(r"^# (?P<attr>[A-Za-z]+): Lid (?P<lid>\d+)\s*$")
_FIELD = re.compile(r"^(?P<key>[A-Za-z0-9_]+):\.+(?P<value>.*)$")


class CcRecord(Model):
    """One attribute read from one LID: its first group of fields and the groups after it."""

    attribute: str
    lid: int
    fields: dict[str, str]
    groups: list[dict[str, str]] = []


class IbccqueryReport(ToolResult):
    """Every record, in output order."""

    records: list[CcRecord] = []


def parse(text: str) -> IbccqueryReport:
    """Parse ``ibccquery`` output (one run, or several concatenated)."""
    records: list[dict[str, object]] = []
    group: dict[str, str] | None = None
    for lineno, line in lines(text):
        stripped = line.strip()
        if match := _HEADER.match(stripped):
            group = {}
            records.append(
                {
                    "attribute": match["attr"],
                    "lid": int(match["lid"]),
                    "fields": group,
                    "groups": [],
                }
            )
            continue
        if not stripped:
            if records and group:
                group = {}
                records[-1]["groups"].append(group)  # type: ignore[union-attr]
            continue
        if (match := _FIELD.match(stripped)) and records and group is not None:
            group[match["key"]] = match["value"].strip()
            continue
        if reason := failure_line(stripped, [re.compile(r"^ibwarn: .*")]):
            return failed(TOOL, IbccqueryReport, {"records": _clean(records)}, reason)
        raise ParseError(TOOL, lineno, "'# Attribute: Lid N' or 'Key:....value'", line)
    if not records:
        lineno, line = first_content_line(text)
        raise ParseError(TOOL, lineno, "'# Attribute: Lid N'", line)
    return IbccqueryReport(records=_clean(records))


def _clean(records: list[dict[str, object]]) -> list[CcRecord]:
    """Drop the empty group a trailing blank line opened."""
    out = []
    for r in records:
        groups = [g for g in r["groups"] if g]  # type: ignore[attr-defined]
        out.append(
            CcRecord(attribute=r["attribute"], lid=r["lid"], fields=r["fields"], groups=groups)
        )  # type: ignore[arg-type]
    return out
