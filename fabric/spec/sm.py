"""Subnet-manager facts of a spec the rules, the checks and ``pulumi up`` share: which declared
SM is expected to be master, and the import's placeholder for an SM it could not identify."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from fabric.spec.problems import Problem

if TYPE_CHECKING:
    from fabric.spec.models import ClusterSpec

#: What ``python -m fabric import`` writes as an SM's node description when the capture does
#: not say which port the SM is on: the spec validates, ``pulumi up`` refuses it.
SM_PLACEHOLDER = "PLACEHOLDER"


class _Sm(Protocol):
    @property
    def role(self) -> str | None: ...

    @property
    def priority(self) -> int: ...


def expected_master(sms: Sequence[_Sm]) -> int | None:
    """Index of the SM expected to be master: the one ``role: master``, else the one highest
    priority among those not ``role: standby``; None when that is not exactly one (the spec
    rules refuse it: OpenSM would then pick by port GUID)."""
    masters = [i for i, sm in enumerate(sms) if sm.role == "master"]
    if masters:
        return masters[0] if len(masters) == 1 else None
    open_ = [i for i, sm in enumerate(sms) if sm.role is None]
    if not open_:
        return None
    top = max(sms[i].priority for i in open_)
    best = [i for i in open_ if sms[i].priority == top]
    return best[0] if len(best) == 1 else None


def sm_placeholder_problems(spec: ClusterSpec) -> list[Problem]:
    """Why ``pulumi up`` refuses a spec whose subnet manager is still the import's
    ``PLACEHOLDER``: one problem per such entry, saying what to fill in."""
    ib = spec.fabric.infiniband
    return [
        Problem(
            f"fabric.infiniband.subnet_managers[{i}].node_description",
            "still PLACEHOLDER (railyard import could not tell where the SM runs); set "
            "the master SM's node description (sminfo names its lid; smpquery nodedesc <lid>) "
            "or its port GUID (guid: sminfo's sm guid), or import with --ssh or --sminfo",
        )
        for i, sm in enumerate(ib.subnet_managers if ib else [])
        if sm.node_description == SM_PLACEHOLDER
    ]


__all__ = ["SM_PLACEHOLDER", "expected_master", "sm_placeholder_problems"]


#: OpenSM's routing engines, as its ``static_routing_modules`` table names them
#: (linux-rdma/opensm, opensm/osm_opensm.c); ``routing_engine`` takes one, or a chain
#: ``ftree,updn`` that OpenSM tries in order until one routes the fabric.
OPENSM_ROUTING_ENGINES = (
    "minhop",
    "updn",
    "dnup",
    "file",
    "ftree",
    "lash",
    "dor",
    "torus-2QoS",
    "nue",
    "dfsssp",
    "sssp",
)


def routing_chain(value: str) -> str:
    """``value`` if it is an OpenSM routing engine or a comma-separated chain of distinct
    ones, else a ValueError naming the position of the first that is not (never its text)."""
    names = value.split(",")
    for index, name in enumerate(names, 1):
        if name not in OPENSM_ROUTING_ENGINES:
            raise ValueError(
                f"engine {index} of {len(names)} is not one of OpenSM's: use "
                f"{', '.join(OPENSM_ROUTING_ENGINES)}, or a chain of them such as ftree,updn"
            )
    if len(set(names)) != len(names):
        raise ValueError("an engine is named twice in the chain; name each once")
    return value
