"""The AWS target's host-key source: the SSH HOST KEY block cloud-init writes to an EC2
instance's console output (``aws ec2 get-console-output``), polled by
:func:`fabric.hostkeys.reported_host_keys` through ``fabric.components.dynamic_hostkeys``."""

from __future__ import annotations

import re
from typing import Any

from fabric.hostkeys import key_line

_BLOCK = re.compile(
    r"-----BEGIN SSH HOST KEY KEYS-----\r?\n(.*?)-----END SSH HOST KEY KEYS-----", re.DOTALL
)


def command(source: dict[str, Any]) -> list[str]:
    """The CLI call that reports ``{"cloud": "aws", "instance_id", "region"}``'s keys."""
    return [
        "aws", "ec2", "get-console-output", "--instance-id", source["instance_id"],
        "--region", source["region"], "--query", "Output", "--output", "text",
    ]  # fmt: skip


def console_host_keys(console: str) -> list[str]:
    """The host keys (``type base64``) in the last SSH HOST KEY KEYS block of an instance's
    console output (EC2 ``GetConsoleOutput``); ``[]`` while cloud-init has not written it.

    Raises :class:`HostKeyError` when a block is there but a line in it is not a host key.
    """
    blocks = _BLOCK.findall(console)
    if not blocks:
        return []
    lines = [line for line in blocks[-1].splitlines() if line.strip()]
    return [key_line(line, f"console host key block line {n}") for n, line in enumerate(lines, 1)]


#: How :func:`fabric.hostkeys.reported_host_keys` reads :func:`command`'s output.
parse = console_host_keys
