"""``fabric.lab.plan.allocate``: stable node addresses (previous + hosts + subnet + fixed -> new)."""

from __future__ import annotations

import pytest

from fabric.lab.plan import LabPlanError, allocate

NET, GW = "198.18.30.0/24", "198.18.30.1"
HOSTS = ["gpu01", "gpu02", "sm1", "sm2", "ctl1"]


def _ip(last: int) -> str:
    return f"198.18.30.{last}"


def test_fresh_allocation_is_spec_order_from_dot_10() -> None:
    assert allocate({}, HOSTS, NET, GW) == {h: _ip(10 + i) for i, h in enumerate(HOSTS)}


def test_adding_a_host_in_the_first_group_moves_no_one() -> None:
    before = allocate({}, HOSTS, NET, GW)
    grown = ["gpu01", "gpu02", "gpu03", "sm1", "sm2", "ctl1"]
    after = allocate(before, grown, NET, GW)
    assert {h: after[h] for h in HOSTS} == before
    assert after["gpu03"] == _ip(15)  # lowest free
    assert list(after) == grown  # spec order kept in the result


def test_removing_a_host_releases_only_its_address() -> None:
    before = allocate({}, HOSTS, NET, GW)
    after = allocate(before, ["gpu01", "sm1", "sm2", "ctl1"], NET, GW)
    assert after == {h: a for h, a in before.items() if h != "gpu02"}


def test_grow_then_shrink_returns_to_the_same_assignment() -> None:
    start = allocate({}, HOSTS, NET, GW)
    grown = allocate(start, ["gpu00", *HOSTS], NET, GW)
    assert allocate(grown, HOSTS, NET, GW) == start


def test_address_released_in_this_update_is_not_reused_in_it() -> None:
    before = allocate({}, HOSTS, NET, GW)  # gpu02 -> .11
    after = allocate(before, ["gpu01", "gpu03", "sm1", "sm2", "ctl1"], NET, GW)
    assert after["gpu03"] == _ip(15)  # not gpu02's .11: its container goes away only at the end
    assert allocate(after, ["gpu01", "gpu03", "gpu04", "sm1", "sm2", "ctl1"], NET, GW)[
        "gpu04"
    ] == _ip(11)


def test_fixed_addresses_win_over_previous_and_fresh() -> None:
    before = allocate({}, HOSTS, NET, GW)  # sm1 -> .12
    after = allocate(before, HOSTS, NET, GW, {"ctl1": _ip(12)})
    assert after["ctl1"] == _ip(12)
    assert after["sm1"] == _ip(15)  # moved off the pinned address to a never-held one
    assert {h: after[h] for h in ("gpu01", "gpu02", "sm2")} == {
        h: before[h] for h in ("gpu01", "gpu02", "sm2")
    }
    assert allocate({}, ["a", "b"], NET, GW, {"a": _ip(10)}) == {"a": _ip(10), "b": _ip(11)}


def test_unpinned_host_keeps_its_former_fixed_address() -> None:
    pinned = allocate({}, HOSTS, NET, GW, {"ctl1": _ip(200)})
    assert allocate(pinned, HOSTS, NET, GW) == pinned


def test_previous_outside_the_subnet_or_on_the_gateway_is_reallocated() -> None:
    previous = {"gpu01": "198.18.31.10", "gpu02": GW, "sm1": "not-an-ip", "sm2": _ip(255)}
    assert allocate(previous, ["gpu01", "gpu02", "sm1", "sm2"], NET, GW) == {
        "gpu01": _ip(10),
        "gpu02": _ip(11),
        "sm1": _ip(12),
        "sm2": _ip(13),
    }


def test_gateway_inside_the_pool_is_skipped() -> None:
    assert allocate({}, ["a", "b"], NET, _ip(10)) == {"a": _ip(11), "b": _ip(12)}


def test_deterministic_for_the_same_inputs() -> None:
    previous = {"gpu01": _ip(40), "sm1": _ip(12)}
    assert allocate(previous, HOSTS, NET, GW) == allocate(
        dict(reversed(previous.items())), HOSTS, NET, GW
    )


@pytest.mark.parametrize(
    ("fixed", "message"),
    [
        ({"a": "198.18.31.5"}, r"management.addresses.a: .* not a usable address"),
        ({"a": GW}, r"not a usable address"),
        ({"a": _ip(20), "b": _ip(20)}, r"management.addresses.b: .* already the address of 'a'"),
    ],
)
def test_bad_pins_are_refused_naming_the_field(fixed: dict[str, str], message: str) -> None:
    with pytest.raises(LabPlanError, match=message):
        allocate({}, ["a", "b"], NET, GW, fixed)


def test_full_subnet_is_refused() -> None:
    small = "198.18.30.0/28"  # .10 - .14 usable from the pool
    assert len(allocate({}, [f"n{i}" for i in range(5)], small, "198.18.30.1")) == 5
    with pytest.raises(LabPlanError, match="no free address left for n5"):
        allocate({}, [f"n{i}" for i in range(6)], small, "198.18.30.1")
