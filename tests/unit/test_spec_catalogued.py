"""``fabric.spec.common``'s walk over compute groups' catalogued machine types."""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from fabric.spec import NodeGroup
from fabric.spec.checker import Checker
from fabric.spec.common import catalogued_compute, check_machine


@dataclass(frozen=True)
class Machine:
    name: str
    gpus: int
    gpu_type: str | None


CATALOG = {"big": Machine("big", 8, "h100")}


def checker(*groups: dict[str, Any]) -> Checker:
    """A checker over a spec of these node groups (the walk reads nothing else)."""
    nodes = [NodeGroup.model_validate(g) for g in groups]
    return Checker(SimpleNamespace(nodes=nodes))  # type: ignore[arg-type]


def test_each_group_is_reported_in_declaration_order_with_the_callers_own() -> None:
    c = checker(
        {"names": "a1", "instance_type": "big", "gpus": 4},
        {"names": "b1"},
        {"names": "c1", "instance_type": "odd"},
        {"names": "d1", "instance_type": "big", "gpu_type": "a100"},
        {"names": "e1", "role": "login"},
    )
    for index, known in catalogued_compute(c, CATALOG.get, "name a type", "is not known"):
        c.add(f"nodes[{index}].mine", known.name)
        check_machine(c, index, known)
    assert [(p.path, p.message) for p in c.problems] == [
        ("nodes[0].mine", "big"),
        ("nodes[0].gpus", "4 GPUs, but big has 8"),
        ("nodes[1].instance_type", "name a type"),
        ("nodes[2].instance_type", "'odd' is not known"),
        ("nodes[3].mine", "big"),
        (
            "nodes[3].gpu_type",
            "'a100', but big has h100 GPUs; set gpu_type: h100, or change instance_type",
        ),
    ]


def test_an_unknown_type_may_go_unreported() -> None:
    c = checker({"names": "a1", "instance_type": "odd"})
    assert list(catalogued_compute(c, CATALOG.get, "name a type", None)) == []
    assert c.problems == []
