"""``ibtracert``: the unicast path between two ports, hop by hop."""

from __future__ import annotations

import re
from typing import Literal

from fabric.parsers.common import (
    Model,
    ParseError,
    ToolResult,
    build,
    first_content_line,
    lines,
    normalize_guid,
)

TOOL = "ibtracert"

_END = re.compile(
    r"^(?P<which>From|To) (?P<kind>ca|switch|router) \{(?P<guid>0x[0-9a-fA-F]+)\} "
    r"portnum (?P<port>\d+) lid (?P<lid>\d+)-(?P<lid_max>\d+) \"(?P<name>.*)\"\s*$"
)
_HOP = re.compile(
    r"^\[(?P<out>\d+)\] -> (?P<kind>ca|switch|router)(?: port)? \{(?P<guid>0x[0-9a-fA-F]+)\}"
    r"\[(?P<in>\d+)\] lid (?P<lid>\d+)-(?P<lid_max>\d+) \"(?P<name>.*)\"\s*$"
)
_WARN = re.compile(r"^ibwarn: .*|^ibtracert: iberror: .*|^ibpanic: .*")

Kind = Literal["ca", "switch", "router"]


class PathEnd(Model):
    """The ``From`` or ``To`` node (``guid`` is the node GUID)."""

    kind: Kind
    guid: str
    port: int
    lid: int
    lid_max: int
    name: str


class Hop(Model):
    """``[out_port] -> <kind> {port guid}[in_port] lid L-L "name"``."""

    out_port: int
    kind: Kind
    guid: str
    in_port: int
    lid: int
    lid_max: int
    name: str


class IbtracertReport(ToolResult):
    """The path; ``ok`` is False when ibtracert could not find a route."""

    source: PathEnd | None = None
    destination: PathEnd | None = None
    hops: list[Hop] = []
    warnings: list[str] = []

    @property
    def switches(self) -> list[str]:
        """Names of the switches the path crosses, in order."""
        return [hop.name for hop in self.hops if hop.kind == "switch"]


def parse(text: str) -> IbtracertReport:
    """Parse ``ibtracert`` unicast output."""
    data: dict[str, object] = {"hops": [], "warnings": []}
    for lineno, line in lines(text):
        stripped = line.strip()
        if not stripped:
            continue
        if match := _END.match(stripped):
            key = "source" if match["which"] == "From" else "destination"
            data[key] = {
                "kind": match["kind"],
                "guid": normalize_guid(match["guid"]),
                "port": int(match["port"]),
                "lid": int(match["lid"]),
                "lid_max": int(match["lid_max"]),
                "name": match["name"],
            }
        elif match := _HOP.match(stripped):
            data["hops"].append(  # type: ignore[attr-defined]
                {
                    "out_port": int(match["out"]),
                    "kind": match["kind"],
                    "guid": normalize_guid(match["guid"]),
                    "in_port": int(match["in"]),
                    "lid": int(match["lid"]),
                    "lid_max": int(match["lid_max"]),
                    "name": match["name"],
                }
            )
        elif _WARN.match(stripped):
            data["warnings"].append(stripped)  # type: ignore[attr-defined]
        else:
            raise ParseError(TOOL, lineno, "a 'From'/'To' line, a hop or an ibwarn line", line)
    warnings: list[str] = data["warnings"]  # type: ignore[assignment]
    if "source" not in data and not warnings:
        lineno, line = first_content_line(text)
        raise ParseError(TOOL, lineno, "'From <kind> {guid} portnum N lid L-L \"name\"'", line)
    if "destination" not in data:
        fatal = [w for w in warnings if "iberror" in w or "ibpanic" in w]
        data.update(
            ok=False, reason=fatal[0] if fatal else warnings[-1] if warnings else "no 'To' line"
        )
    return build(TOOL, IbtracertReport, data, text=text)
