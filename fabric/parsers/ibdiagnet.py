"""``ibdiagnet``: the console summary (Fabric Summary, stage table) or its ``.sm`` report."""

from __future__ import annotations

import re

from fabric.parsers.common import (
    Model,
    ParseError,
    ToolResult,
    build,
    first_content_line,
    lines,
    normalize_guid,
)

TOOL = "ibdiagnet"

_SUMMARY_FIELD = re.compile(r"^(?P<key>[A-Za-z][A-Za-z0-9 ]*?)\s*:\s*(?P<value>\d+)\s*$")
_STAGE_HEADER = re.compile(r"^-I- Stage\s+Warnings\s+Errors\s+Comment\s*$")
_STAGE = re.compile(
    r"^-I- (?P<stage>[A-Za-z][A-Za-z0-9 ]*?)\s+(?P<warn>\d+)\s+(?P<err>\d+)"
    r"(?:\s+(?P<comment>.*?))?\s*$"
)
_SM_ROLE = re.compile(r"^\s*SM - (?P<role>\w+)\s*$")
_SM_PORT = re.compile(
    r"^\s*Port=(?P<port>\d+) lid=(?P<lid>0x[0-9a-fA-F]+) guid=(?P<guid>0x[0-9a-fA-F]+) "
    r"dev=(?P<dev>\d+) priority:(?P<prio>\d+)\s*$"
)
_MESSAGE = re.compile(r"^-(?P<level>[IWE])- (?P<text>.*?)\s*$")
_ADAPTIVE = re.compile(r"^Adaptive Routing is enabled on (?P<n>\d+) switches\s*$")
_BANNERS = {"Fabric Summary", "Summary", "ibdiagnet fabric SM report"}
_SUMMARY_KEYS = {
    "Total Nodes": "total_nodes",
    "IB Switches": "switches",
    "IB Channel Adapters": "channel_adapters",
    "IB Aggregation Nodes": "aggregation_nodes",
    "IB Routers": "routers",
}


class Stage(Model):
    """One row of the ``-I- Stage Warnings Errors Comment`` table."""

    stage: str
    warnings: int
    errors: int
    comment: str | None = None


class SubnetManager(Model):
    """One SM from the ``ibdiagnet2.sm`` report."""

    role: str
    port: int
    lid: int
    guid: str
    device_id: int
    priority: int


class IbdiagnetReport(ToolResult):
    """What the summary printed; ``errors`` holds the ``-E-`` lines."""

    total_nodes: int | None = None
    switches: int | None = None
    channel_adapters: int | None = None
    aggregation_nodes: int | None = None
    routers: int | None = None
    adaptive_routing_switches: int | None = None
    counts: dict[str, int] = {}
    stages: list[Stage] = []
    subnet_managers: list[SubnetManager] = []
    info: list[str] = []
    errors: list[str] = []

    @property
    def total_errors(self) -> int:
        """Errors summed over the stage table."""
        return sum(stage.errors for stage in self.stages)


def console_summary(text: str) -> str:
    """The closing summary of a whole ibdiagnet console run (from its ``Fabric Summary`` or,
    without one, its stage table header on): what :func:`parse` reads. The progress lines
    before it differ between releases and plugins; the summary's form does not."""
    rows = text.splitlines()
    for marker in ("Fabric Summary", None):
        for index, row in enumerate(rows):
            stripped = row.strip()
            if stripped == marker or (marker is None and _STAGE_HEADER.match(stripped)):
                return "\n".join(rows[index:]) + "\n"
    return text


def parse(text: str) -> IbdiagnetReport:
    """Parse an ibdiagnet console summary or ``ibdiagnet2.sm`` file."""
    data: dict[str, object] = {
        "counts": {},
        "stages": [],
        "subnet_managers": [],
        "info": [],
        "errors": [],
    }
    role: str | None = None
    in_stages = False
    for lineno, line in lines(text):
        stripped = line.strip()
        if not stripped or stripped.startswith("#") or set(stripped) == {"-"}:
            continue
        if stripped in _BANNERS:
            continue
        if _STAGE_HEADER.match(stripped):
            in_stages = True
        elif in_stages and (match := _STAGE.match(stripped)):
            data["stages"].append(  # type: ignore[attr-defined]
                {
                    "stage": match["stage"],
                    "warnings": int(match["warn"]),
                    "errors": int(match["err"]),
                    "comment": match["comment"] or None,
                }
            )
        elif match := _MESSAGE.match(stripped):
            key = "errors" if match["level"] == "E" else "info"
            data[key].append(match["text"])  # type: ignore[attr-defined]
        elif match := _SM_ROLE.match(line):
            role = match["role"]
        elif role and (match := _SM_PORT.match(line)):
            data["subnet_managers"].append(  # type: ignore[attr-defined]
                {
                    "role": role,
                    "port": int(match["port"]),
                    "lid": int(match["lid"], 16),
                    "guid": normalize_guid(match["guid"]),
                    "device_id": int(match["dev"]),
                    "priority": int(match["prio"]),
                }
            )
        elif match := _ADAPTIVE.match(stripped):
            data["adaptive_routing_switches"] = int(match["n"])
        elif match := _SUMMARY_FIELD.match(stripped):
            data["counts"][match["key"]] = int(match["value"])  # type: ignore[index]
            if field := _SUMMARY_KEYS.get(match["key"]):
                data[field] = int(match["value"])
        else:
            raise ParseError(TOOL, lineno, "an ibdiagnet summary, stage or SM line", line)
    found = data["counts"] or data["stages"] or data["subnet_managers"] or data["errors"]
    if not found and role is None:
        lineno, line = first_content_line(text)
        raise ParseError(TOOL, lineno, "a 'Fabric Summary', stage table or SM report", line)
    errors: list[str] = data["errors"]  # type: ignore[assignment]
    if errors:
        data.update(ok=False, reason=errors[0])
    elif cut := _cut_short(data, role, in_stages):
        data.update(ok=False, reason=f"ibdiagnet: {cut}: the output was cut short")
    return build(TOOL, IbdiagnetReport, data, text=text)


#: The Fabric Summary lines every ibdiagnet version prints, in order, once it prints the first.
_SUMMARY_LINES = ("Total Nodes", "IB Switches", "IB Channel Adapters", "IB Routers")


def _cut_short(data: dict[str, object], role: str | None, in_stages: bool) -> str | None:
    """What a complete summary or SM report would hold and this one lacks, if anything."""
    counts: dict[str, int] = data["counts"]  # type: ignore[assignment]
    if "Total Nodes" in counts and (missing := [k for k in _SUMMARY_LINES if k not in counts]):
        return f"the Fabric Summary has no '{missing[0]}' line"
    if in_stages and not data["stages"]:
        return "the stage table has no rows"
    sms: list[dict[str, object]] = data["subnet_managers"]  # type: ignore[assignment]
    if role is not None and not any(sm["role"] == role for sm in sms):
        return f"'SM - {role}' lists no port"
    return None
