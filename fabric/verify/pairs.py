"""Deterministic, bounded pair sampling for reachability and bandwidth checks."""

from __future__ import annotations

from collections.abc import Collection, Sequence


def ring_pairs(hosts: Sequence[str], responders: Collection[str] | None = None) -> list[tuple[str, str]]:
    """Return one (source, target) pair per host: a ring shifted by half its length.

    Every host is a source exactly once, so each is tested and the count grows linearly
    (never all pairs). Hosts are taken in the order given (declaration order fills leaves
    in order), so a half-ring shift pairs hosts on different leaves and crosses the spines.
    ``responders`` limits targets (e.g. hosts able to run an ``ibping -S`` server); a
    source whose shifted peer is not a responder takes the next responder round the ring.
    """
    n = len(hosts)
    if n < 2:
        return []
    allowed = set(hosts if responders is None else responders)
    shift = max(1, n // 2)
    pairs: list[tuple[str, str]] = []
    for i, source in enumerate(hosts):
        for step in range(n - 1):
            target = hosts[(i + shift + step) % n]
            if target != source and target in allowed:
                pairs.append((source, target))
                break
    return pairs
