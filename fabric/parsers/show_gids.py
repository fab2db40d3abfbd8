"""``show_gids``: the GID table (device, port, index, GID, IPv4, RoCE version, netdev)."""

from __future__ import annotations

import re

from fabric.parsers.common import (
    Model,
    ParseError,
    ToolResult,
    build,
    failed,
    failure_line,
    find_failure,
    lines,
)

TOOL = "show_gids"

_ROW = re.compile(
    r"^(?P<dev>\S+)\s+(?P<port>\d+)\s+(?P<index>\d+)\s+(?P<gid>[0-9a-fA-F:]+)\s+"
    r"(?:(?P<ipv4>\d+\.\d+\.\d+\.\d+)\s+)?(?P<ver>v\d)(?:\s+(?P<netdev>\S+))?\s*$"
)
_HEADER = re.compile(r"^DEV\s+PORT\s+INDEX\s+GID\s+IPv4\s+VER\s+DEV\s*$")
_RULE = re.compile(r"^[-\s]+$")
_COUNT = re.compile(r"^n_gids_found=(?P<n>\d+)\s*$")


class Gid(Model):
    """One GID table row."""

    device: str
    port: int
    index: int
    gid: str
    ipv4: str | None = None
    version: str
    netdev: str | None = None


class ShowGidsReport(ToolResult):
    """Every GID row; ``n_gids_found`` when the trailer line was printed."""

    gids: list[Gid] = []
    n_gids_found: int | None = None


def parse(text: str) -> ShowGidsReport:
    """Parse ``show_gids`` output."""
    gids: list[dict[str, object]] = []
    found: int | None = None
    header = False
    for lineno, line in lines(text):
        if not line.strip() or _RULE.match(line):
            continue
        if _HEADER.match(line):
            header = True
        elif match := _COUNT.match(line):
            found = int(match["n"])
        elif match := _ROW.match(line):
            gids.append(
                {
                    "device": match["dev"],
                    "port": int(match["port"]),
                    "index": int(match["index"]),
                    "gid": match["gid"].lower(),
                    "ipv4": match["ipv4"],
                    "version": match["ver"],
                    "netdev": match["netdev"],
                }
            )
        else:
            if (reason := failure_line(line)) or (not header and (reason := find_failure(text))):
                return failed(TOOL, ShowGidsReport, {"gids": gids, "n_gids_found": found}, reason)
            raise ParseError(TOOL, lineno, "a GID row 'DEV PORT INDEX GID [IPv4] VER [DEV]'", line)
    if not header and not gids:
        raise ParseError(TOOL, 0, "the 'DEV PORT INDEX GID IPv4 VER DEV' header")
    return build(TOOL, ShowGidsReport, {"gids": gids, "n_gids_found": found}, text=text)
