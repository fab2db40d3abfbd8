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

#: Largest number of hosts one expression may expand to, over all its ranges together (30
#: ranges of 99,999 in 1 KB were 3M hosts: issue 44): catches typos such as
#: ``gpu[1-1000000]`` before they exhaust memory.
MAX_HOSTS = 100_000


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
        if int(high) - int(low) >= MAX_HOSTS:
            raise HostlistError(
                f"range {item!r} in host list {expr!r} has {int(high) - int(low) + 1} hosts;"
                f" at most {MAX_HOSTS} are allowed"
            )
        width = len(low) if low.startswith("0") else 0
        numbers.extend(str(n).zfill(width) for n in range(int(low), int(high) + 1))
    return numbers


#: What :func:`count` says for a range whose end has too many digits to count.
_UNCOUNTED = 10**18


def _range_sizes(body: str) -> int:
    """How many numbers ``body`` (``01-16,20``) names; items that are no range count 1 (the
    expansion refuses them)."""
    total = 0
    for item in body.split(","):
        match = re.fullmatch(r"\s*(\d+)-(\d+)\s*", item)
        if match and len(match[2].lstrip("0")) > len(str(MAX_HOSTS)) + 1:  # no huge int()
            return _UNCOUNTED
        total += max(0, int(match[2]) - int(match[1]) + 1) if match else 1
    return total


def count(expr: str) -> int:
    """How many names ``expr`` expands to, without expanding it (a malformed expression
    counts what it can: :func:`expand` names its problem)."""
    total = 0
    for part in _split_top_level(expr):
        match = _TOKEN.fullmatch(part)
        total += _range_sizes(match[2]) if match and match[2] is not None else 1
    return total


def expand(expr: str) -> list[str]:
    """Expand a host list expression into host names, in order (at most MAX_HOSTS of them,
    counted over every range before any is expanded)."""
    if (total := count(expr)) > MAX_HOSTS:
        counted = f" ({total})" if total < _UNCOUNTED else ""
        raise HostlistError(
            f"host list {expr[:60]!r} names more than {MAX_HOSTS} hosts{counted}; at most "
            f"{MAX_HOSTS} are allowed in all its ranges together"
        )
    hosts: list[str] = []
    for part in _split_top_level(expr):
        match = _TOKEN.fullmatch(part)
        if not match:
            raise HostlistError(
                f"cannot parse host list {part!r}; use prefix[ranges]suffix, one bracket per name"
            )
        prefix, body, suffix = match.groups()
        if body is None:
            hosts.append(part)
        else:
            hosts.extend(f"{prefix}{n}{suffix}" for n in _expand_ranges(body, expr))
    return hosts


_NUMBERED = re.compile(r"^(.*?)(\d+)([^\d]*)$")


def _width(digits: str) -> int:
    """Zero-padding width of a number as written: ``007`` -> 3, ``7`` and ``0`` -> 0."""
    return len(digits) if len(digits) > 1 and digits.startswith("0") else 0


def _ranges(values: list[int], width: int) -> str:
    """``[1, 2, 3, 5]`` -> ``1-3,5`` with each number padded to ``width``."""
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
    return ",".join(ranges)


def compress(hosts: Iterable[str]) -> str:
    """Compress host names into the shortest Slurm host list, keeping first-seen order.

    Names that share a prefix, suffix and number width are merged into one
    bracket, with consecutive numbers written as ranges, as ``scontrol show
    hostlist`` does: ``gpu001,gpu002,gpu004`` -> ``gpu[001-002,004]``. An
    unpadded number as wide as a padded group joins it (``gpu099,gpu100`` ->
    ``gpu[099-100]``), again as Slurm does. A name whose number is followed by more text
    (``n1-ib``, AWS's ``nn-1111111111example``) is kept whole: Slurm 22.05 refuses a bracket
    with a suffix (``scontrol show hostnames 'n[1-2]-ib'``: "Invalid hostlist"; slurmctld
    exits on such a topology.conf line: "Invalid switches"), and ``scontrol show hostlist``
    leaves such names uncompressed.
    """
    parsed: list[str | tuple[str, str, str]] = []
    padded: set[tuple[str, str, int]] = set()
    for host in hosts:
        match = _NUMBERED.match(host)
        if not match or match.group(3):
            parsed.append(host)
            continue
        prefix, digits, suffix = match.groups()
        parsed.append((prefix, digits, suffix))
        if _width(digits):
            padded.add((prefix, suffix, _width(digits)))
    groups: dict[tuple[str, str, int], set[int]] = {}
    order: list[tuple[str, str, int] | str] = []
    for item in parsed:
        if isinstance(item, str):
            if item not in order:
                order.append(item)
            continue
        prefix, digits, suffix = item
        key = (prefix, suffix, _width(digits))
        if key[2] == 0 and (prefix, suffix, len(digits)) in padded:
            key = (prefix, suffix, len(digits))
        if key not in groups:
            groups[key] = set()
            order.append(key)
        groups[key].add(int(digits))
    out: list[str] = []
    for key in order:
        if isinstance(key, str):
            out.append(key)
            continue
        prefix, suffix, width = key
        values = sorted(groups[key])
        if len(values) == 1:
            out.append(f"{prefix}{str(values[0]).zfill(width)}{suffix}")
        else:
            out.append(f"{prefix}[{_ranges(values, width)}]{suffix}")
    return ",".join(out)
