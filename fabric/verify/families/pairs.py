"""The host-pair families over InfiniBand: ``ib_pairs`` (MAD reachability: ``ibping``, the
PMA, ``ibtracert``) and ``verbs`` (``ibv_rc_pingpong``, ``ib_write_bw``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fabric.model.pairs import ring_pairs
from fabric.verify.families.base import Family, Source, pair_fixture
from fabric.verify.families.params import Pair

if TYPE_CHECKING:
    from fabric.verify.plan import CheckPlan

#: Where ``check --plan`` lists these families.
ORDER = 50


def _ib_pairs(plan: CheckPlan) -> list[Pair]:
    """MAD reachability pairs; in the lab an SM host cannot serve ``ibping -S`` (see checks)."""
    hosts = list(dict.fromkeys(p.host for p in plan.ib_ports))
    responders = [h for h in hosts if h not in plan.sm_hosts] if plan.simulated else None
    return [Pair(source=s, target=t) for s, t in ring_pairs(hosts, responders)]


def _verbs_why(plan: CheckPlan) -> str | None:
    kind = plan.spec.fabric.kind
    if plan.simulated:
        return (
            "target lab: verbs are not simulated (no RDMA kernel), so "
            "ibv_rc_pingpong/ib_write_bw cannot run"
        )
    if kind not in ("infiniband", "roce"):
        return f"fabric.kind is {kind}: verbs pair tests cover infiniband and roce"
    return None


SOURCES: dict[str, Source] = {"ib_pairs": _ib_pairs}
FAMILIES = (
    Family(
        "ib_pairs",
        ("test_ibping", "test_pma_reachable", "test_ibtracert_declared_path"),
        "ib_pairs",
        lambda plan: (
            None
            if plan.ib_pairs
            else "fewer than two selected InfiniBand hosts able to answer ibping"
        ),
        fixtures=(pair_fixture("ib_pair", lambda plan: plan.ib_pairs, served=True),),
    ),
    Family(
        "verbs",
        ("test_rc_pingpong", "test_write_bandwidth"),
        "ib_pairs",
        _verbs_why,
        fixtures=(
            pair_fixture(
                "verbs_pair",
                lambda plan: [Pair(source=p.source, target=p.target) for p in plan.ib_pairs],
                served=True,
            ),
        ),
    ),
)
