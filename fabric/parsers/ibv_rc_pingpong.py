"""``ibv_rc_pingpong`` (rdma-core's rc_pingpong example), client or server side."""

from __future__ import annotations

import re

from fabric.parsers.common import Model, ParseError, ToolResult, build, find_failure, lines

TOOL = "ibv_rc_pingpong"

_ADDRESS = re.compile(
    r"^\s*(?P<side>local|remote) address:\s+LID (?P<lid>0x[0-9a-fA-F]+), "
    r"QPN (?P<qpn>0x[0-9a-fA-F]+), PSN (?P<psn>0x[0-9a-fA-F]+)(?:, GID (?P<gid>\S+))?\s*$"
)
_BYTES = re.compile(
    r"^(?P<bytes>\d+) bytes in (?P<seconds>[\d.]+) seconds = (?P<mbps>[\d.]+) Mbit/sec\s*$"
)
_ITERS = re.compile(
    r"^(?P<iters>\d+) iters in (?P<seconds>[\d.]+) seconds = (?P<usec>[\d.]+) usec/iter\s*$"
)


class PingpongEndpoint(Model):
    """A ``local address:`` or ``remote address:`` line."""

    lid: int
    qpn: int
    psn: int
    gid: str | None = None


class PingpongReport(ToolResult):
    """The endpoints and, when the exchange finished, its throughput and latency."""

    local: PingpongEndpoint | None = None
    remote: PingpongEndpoint | None = None
    bytes: int | None = None
    seconds: float | None = None
    mbit_per_sec: float | None = None
    iterations: int | None = None
    usec_per_iter: float | None = None
    errors: list[str] = []


def parse(text: str) -> PingpongReport:
    """Parse ``ibv_rc_pingpong`` output; any other line is the tool's own error message."""
    data: dict[str, object] = {}
    errors: list[str] = []
    for lineno, line in lines(text):
        if not line.strip():
            continue
        if match := _ADDRESS.match(line):
            data[match["side"]] = {
                "lid": int(match["lid"], 16),
                "qpn": int(match["qpn"], 16),
                "psn": int(match["psn"], 16),
                "gid": match["gid"],
            }
        elif match := _BYTES.match(line):
            data.update(
                bytes=int(match["bytes"]),
                seconds=float(match["seconds"]),
                mbit_per_sec=float(match["mbps"]),
            )
        elif match := _ITERS.match(line):
            data.update(iterations=int(match["iters"]), usec_per_iter=float(match["usec"]))
        elif "local" in data or find_failure(line):
            errors.append(line.strip())
        else:
            raise ParseError(TOOL, lineno, "'  local address:  LID ..., QPN ..., PSN ...'", line)
    if "local" not in data and not errors:
        raise ParseError(TOOL, 0, "'  local address:  LID ..., QPN ..., PSN ...'")
    finished = "mbit_per_sec" in data and "usec_per_iter" in data
    if errors or not finished:
        data.update(ok=False, reason="; ".join(errors) or "no throughput line")
    data["errors"] = errors
    return build(TOOL, PingpongReport, data, text=text)
