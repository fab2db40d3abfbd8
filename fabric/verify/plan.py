"""What to check, derived from the spec and the inventory alone (no SSH).

Each check family gets its parameters here, or a reason why it is not generated for this
spec/target; the check suite parametrises over these and reports the reasons, and ``describe``
lists them (``python -m fabric check --plan``). The families themselves are units of the family
table (``fabric.verify.families``: the general ones in that package, a target's own in its
``checks`` part ``fabric/targets/<name>/checks.py``, found through the registry); the plan
knows none of them: it computes the named values they ask for, each once.
"""

from __future__ import annotations

from dataclasses import fields, is_dataclass
from functools import cache, cached_property
from typing import Any

from pydantic import BaseModel, ConfigDict, PrivateAttr

from fabric.gcpause import gc_paused
from fabric.graph import FabricGraph
from fabric.model.cluster import ClusterModel
from fabric.model.gpus import GpuRail, NcclRun, RailPair
from fabric.model.ports import HcaPort
from fabric.spec import ClusterSpec
from fabric.verify.families import table
from fabric.verify.families.params import (
    DeclaredLink,
    Pair,
    ProviderTopology,
    SubnetManagerExpect,
    SweptCable,
    SwitchHop,
)

#: The family table: every family in listing order, the plan's named values, the suite's fixtures.
TABLE = table()


class CheckPlan(BaseModel):
    """Parameters of every check family for one spec and host selection. Every named value
    of the family table (``ib_pairs``, ``observer``) is read as an attribute, computed once.
    ``cluster``: the spec's :class:`ClusterModel` where the caller has one (built here if not)."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    spec: ClusterSpec
    hosts: list[str]
    groups: dict[str, list[str]] = {}
    cluster: ClusterModel | None = None
    _values: dict[str, Any] = PrivateAttr(default_factory=dict)

    def __getattr__(self, name: str) -> Any:
        source = TABLE.sources.get(name) if not name.startswith("_") else None
        if source is None:
            return super().__getattr__(name)  # type: ignore[misc]
        if name not in self._values:
            self._values[name] = source(self)
        return self._values[name]

    @property
    def simulated(self) -> bool:
        """True in the lab: ibsim, not real HCAs, answers the MADs."""
        return self.spec.simulated

    @cached_property
    def model(self) -> ClusterModel:
        """The cluster model of the spec: the facts every step shares, computed once."""
        if self.cluster is None:
            return ClusterModel(self.spec)
        if self.cluster.spec is not self.spec:
            raise ValueError("the cluster model handed to the check plan is another spec's")
        return self.cluster

    @property
    def declared_graph(self) -> FabricGraph | None:
        """The declared fabric, or None when the spec has no topology (clouds)."""
        return self.model.declared_graph

    @property
    def expected_graph(self) -> FabricGraph | None:
        """The declared fabric as the target will report it (ibsim speeds in the lab)."""
        return self.model.expected_graph

    @property
    def ib_mtu(self) -> int:
        """The active IB MTU every IB port must show."""
        return self.model.ib_mtu

    def params(self, source: str) -> list[Any]:
        """The values of a parameter source: a named value of the family table (``ib_pairs``,
        a target's ``efa_hosts``), as a list (a mapping's keys), computed once."""
        return list(getattr(self, source))

    def family_params(self, family: str) -> list[Any]:
        """The parameters a family runs over (``efa_gpudirect``: the EFA hosts with GPUDirect
        RDMA)."""
        return _FAMILY[family].values(self)

    def not_generated(self) -> dict[str, str]:
        """Check family -> why it is not generated for this spec, target and selection."""
        if "not_generated" not in self._values:
            reasons = ((f.name, f.why_not(self)) for f in TABLE.families)
            self._values["not_generated"] = {name: why for name, why in reasons if why}
        return dict(self._values["not_generated"])


_FAMILY = {family.name: family for family in TABLE.families}
#: Check family -> (the checks it holds, the parameter source they run over), from the family
#: table. What ``python -m fabric check --plan`` lists; a unit test keeps it equal to the suite.
FAMILIES: dict[str, tuple[tuple[str, ...], str]] = {
    family.name: (family.checks, family.source) for family in TABLE.families
}


@cache
def _fields(kind: type) -> tuple[str, ...]:
    """The field names of a parameter type (a record: ``fabric.model.record``)."""
    return tuple(f.name for f in fields(kind))


def jsonable(value: object) -> object:
    """A plan parameter as JSON: a record as the mapping of its fields (their values are
    strings, numbers, None or lists of strings: JSON as they are), a model (a target's own
    parameter type) dumped."""
    if is_dataclass(value):
        names = _fields(type(value))
        return {name: getattr(value, name) for name in names}
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    return value


def _records(values: list[Any]) -> list[Any]:
    """A family's parameters for a JSON writer that takes dataclasses: records (and plain
    values) as they are, a target's models as JSON values. ``values`` is the family's own list."""
    if not any(issubclass(kind, BaseModel) for kind in set(map(type, values))):
        return values  # records, strings and numbers
    return [jsonable(v) for v in values]


def describe(plan: CheckPlan, *, plain: bool = True) -> dict[str, dict[str, object]]:
    """Every check family: the checks and parameters that would run, or why it is not
    generated. Built from the spec alone: nothing is probed (the RoCE QoS family's ConnectX
    netdevs are narrowed by a PCI vendor probe when the suite runs). ``plain``: the
    parameters as JSON values (records as mappings); else the records themselves, for a JSON
    writer that takes dataclasses (``check --plan --json``: 700,000 of them at 16,384 hosts)."""
    with gc_paused():
        return _describe(plan, plain)


def _describe(plan: CheckPlan, plain: bool) -> dict[str, dict[str, object]]:
    reasons = plan.not_generated()
    out: dict[str, dict[str, object]] = {}
    for family, (checks, source) in FAMILIES.items():
        values = plan.family_params(family)
        reason = reasons.get(family)
        if reason is None and not values:
            reason = f"nothing to check: no {source.replace('_', ' ')} among the selected hosts"
        if reason is not None:
            out[family] = {"checks": list(checks), "not_generated": reason}
        else:
            params = [jsonable(v) for v in values] if plain else _records(values)
            out[family] = {"checks": list(checks), "parameters": params}
    return out


__all__ = [
    "FAMILIES",
    "CheckPlan",
    "DeclaredLink",
    "GpuRail",
    "HcaPort",
    "NcclRun",
    "Pair",
    "ProviderTopology",
    "RailPair",
    "SubnetManagerExpect",
    "SweptCable",
    "SwitchHop",
    "describe",
    "jsonable",
]
