"""The netdev MTU families: ``netdev_mtu`` (each fabric netdev's MTU) and ``path_mtu`` (the
MTU a host pair's path carries)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fabric.model.pairs import ring_pairs
from fabric.verify.families.base import Family, Fixture, Source, pair_fixture
from fabric.verify.families.params import Pair

if TYPE_CHECKING:
    from fabric.verify.plan import CheckPlan

#: Where ``check --plan`` lists these families.
ORDER = 30


def _netdev_pairs(plan: CheckPlan) -> list[Pair]:
    """Path-MTU pairs between hosts with a fabric netdev."""
    hosts = list(dict.fromkeys(h for h, _ in plan.netdevs))
    return [Pair(source=s, target=t) for s, t in ring_pairs(hosts)]


#: A (host, netdev) parameter, its check on the host.
NETDEV = Fixture(
    "netdev",
    lambda plan: plan.netdevs,
    ident=lambda n: f"{n[0]}/{n[1]}",
    on=lambda _, n: n[0],
    subject=lambda _, n: f"host:{n[0]}",
)
#: A pair of hosts with a fabric netdev (``path_mtu``, ``roce_bandwidth``).
NETDEV_PAIR = pair_fixture("netdev_pair", lambda plan: plan.netdev_pairs, served=False)

SOURCES: dict[str, Source] = {"netdev_pairs": _netdev_pairs}
FAMILIES = (
    Family(
        "netdev_mtu",
        ("test_netdev_mtu",),
        "netdevs",
        lambda plan: (
            None
            if plan.netdevs
            else "no HCA declares a netdev (RoCE/IPoIB interface) on the selected hosts"
        ),
        fixtures=(NETDEV,),
    ),
    Family(
        "path_mtu",
        ("test_path_mtu",),
        "netdev_pairs",
        lambda plan: (
            None if plan.netdev_pairs else "fewer than two selected hosts with a fabric netdev"
        ),
        fixtures=(NETDEV_PAIR,),
    ),
)
