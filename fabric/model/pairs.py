"""Deterministic, bounded pair sampling for reachability and bandwidth checks."""

from __future__ import annotations

from collections.abc import Collection, Sequence


def ring_pairs(
    hosts: Sequence[str], responders: Collection[str] | None = None
) -> list[tuple[str, str]]:
    """Return one (source, target) pair per host: a ring shifted by half its length.

    Every host is a source exactly once, so each is tested and the count grows linearly
    (never all pairs). Hosts are taken in the order given (declaration order fills leaves
    in order), so a half-ring shift pairs hosts on different leaves and crosses the spines.
    ``responders`` limits targets (e.g. hosts able to run an ``ibping -S`` server); a
    source whose shifted peer is not a responder takes the least-used responder, in ring
    order, so targets are spread out.
    """
    n = len(hosts)
    if n < 2:
        return []
    allowed = set(hosts if responders is None else responders)
    shift = max(1, n // 2)
    pairs: list[tuple[str, str]] = []
    load = {h: 0 for h in hosts}
    for i, source in enumerate(hosts):
        ring = [hosts[(i + shift + step) % n] for step in range(n)]
        candidates = [t for t in ring if t != source and t in allowed]
        if candidates:
            target = min(
                candidates, key=lambda t: load[t]
            )  # least-used responder, ring order on ties
            load[target] += 1
            pairs.append((source, target))
    return pairs
