"""Slurm-style host lists: ``gpu[001-016]`` <-> ``["gpu001", ..., "gpu016"]``.

Follows Slurm's hostlist syntax: a prefix, then a bracketed set of
comma-separated numbers and ranges whose zero padding is kept, then an optional
suffix; several such expressions may be joined with commas
(``gpu[01-02],login1``). Only one bracket per host name is supported, as in
most cluster naming schemes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_TOKEN = re.compile(r"([^,\[\]]*)(?:\[([^\]]+)\])?([^,\[\]]*)")


class HostlistError(ValueError):
    """Raised for a host list expression that cannot be expanded."""


def _split_top_level(expr: str) -> list[str]:
    """Split ``expr`` on commas that are outside brackets."""
    parts, depth, current = [], 0, []
    for char in expr:
        if char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
            if depth < 0:
                raise HostlistError(f"unbalanced ']' in host list {expr!r}")
        if char == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    if depth != 0:
        raise HostlistError(f"unbalanced '[' in host list {expr!r}")
    parts.append("".join(current))
    return [part.strip() for part in parts if part.strip()]


def _expand_ranges(body: str, expr: str) -> list[str]:
    numbers: list[str] = []
    for item in body.split(","):
        item = item.strip()
        if re.fullmatch(r"\d+", item):
            numbers.append(item)
            continue
        match = re.fullmatch(r"(\d+)-(\d+)", item)
        if not match:
            raise HostlistError(f"bad range {item!r} in host list {expr!r}; use e.g. 001-016")
        low, high = match.groups()
        if int(high) < int(low):
            raise HostlistError(f"range {item!r} in host list {expr!r} runs backwards")
        width = len(low) if low.startswith("0") else 0
        numbers.extend(str(n).zfill(width) for n in range(int(low), int(high) + 1))
    return numbers


def expand(expr: str) -> list[str]:
    """Expand a host list expression into host names, in order."""
    hosts: list[str] = []
    for part in _split_top_level(expr):
        match = _TOKEN.fullmatch(part)
        if not match:
            raise HostlistError(f"cannot parse host list {part!r}")
        prefix, body, suffix = match.groups()
        if body is None:
            hosts.append(part)
        else:
            hosts.extend(f"{prefix}{n}{suffix}" for n in _expand_ranges(body, expr))
    return hosts


_NUMBERED = re.compile(r"^(.*?)(\d+)([^\d]*)$")


def compress(hosts: Iterable[str]) -> str:
    """Compress host names into the shortest Slurm host list, keeping first-seen order.

    Names that share a prefix, suffix and number width are merged into one
    bracket, with consecutive numbers written as ranges, as ``scontrol show
    hostlist`` does: ``gpu001,gpu002,gpu004`` -> ``gpu[001-002,004]``.
    """
    groups: dict[tuple[str, str, int], list[int]] = {}
    order: list[tuple[str, str, int] | str] = []
    for host in hosts:
        match = _NUMBERED.match(host)
        if not match:
            if host not in order:
                order.append(host)
            continue
        prefix, digits, suffix = match.groups()
        width = len(digits) if digits.startswith("0") else 0
        key = (prefix, suffix, width)
        if key not in groups:
            groups[key] = []
            order.append(key)
        value = int(digits)
        if value not in groups[key]:
            groups[key].append(value)
    out: list[str] = []
    for key in order:
        if isinstance(key, str):
            out.append(key)
            continue
        prefix, suffix, width = key
        values = sorted(groups[key])
        if len(values) == 1:
            out.append(f"{prefix}{str(values[0]).zfill(width)}{suffix}")
            continue
        ranges: list[str] = []
        start = prev = values[0]
        for value in values[1:] + [None]:  # type: ignore[list-item]
            if value is not None and value == prev + 1:
                prev = value
                continue
            low, high = str(start).zfill(width), str(prev).zfill(width)
            ranges.append(low if start == prev else f"{low}-{high}")
            if value is not None:
                start = prev = value
        out.append(f"{prefix}[{','.join(ranges)}]{suffix}")
    return ",".join(out)
