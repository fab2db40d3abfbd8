"""``ring_pairs`` in linear time (issue 44 item 3: ``check --plan`` grew with the square of the
hosts) gives exactly the pairs of the first, quadratic version (``ring_pairs_reference``): every
host list and responder set Hypothesis finds, and large rings with few or many responders."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from fabric.model.pairs import ring_pairs, ring_pairs_reference

NAMES = st.lists(st.sampled_from([f"h{i}" for i in range(48)]), max_size=48)


@settings(max_examples=400, deadline=None)
@given(
    hosts=NAMES,
    responders=st.one_of(st.none(), st.lists(st.sampled_from([f"h{i}" for i in range(52)]))),
)
def test_the_same_pairs_as_the_reference(hosts: list[str], responders: list[str] | None) -> None:
    """Host lists with repeats too (the reference's rule then), responders outside the list."""
    assert ring_pairs(hosts, responders) == ring_pairs_reference(hosts, responders)


@settings(max_examples=200, deadline=None)
@given(
    count=st.integers(2, 64),
    picks=st.lists(st.integers(0, 63), max_size=12),
)
def test_few_responders_the_same_as_the_reference(count: int, picks: list[int]) -> None:
    """Few responders: each carries many sources, and the source itself is often the only one
    of the least load (the case the linear version settles by a scan of the responders)."""
    hosts = [f"n{i:02d}" for i in range(count)]
    responders = [hosts[p % count] for p in picks]
    assert ring_pairs(hosts, responders) == ring_pairs_reference(hosts, responders)


def test_large_rings_the_same_as_the_reference() -> None:
    hosts = [f"gpu{i:04d}" for i in range(600)]
    for responders in (None, hosts[::7], hosts[:1], hosts[:2], hosts[::25], hosts[1::2]):
        assert ring_pairs(hosts, responders) == ring_pairs_reference(hosts, responders)
