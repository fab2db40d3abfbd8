"""The slurm_topology family on a switch-only cabling (issue 42): the public capture
ibtopotool 3 cut to its switch-to-switch cables gives Slurm no tree; ``check --plan`` says so
in the family's reason instead of crashing on the tree writer's ``GraphError``."""

from __future__ import annotations

from fabric.parsers.ibnetdiscover import parse as parse_ibnetdiscover
from fabric.spec import ClusterSpec
from fabric.spec.load import spec_from_mapping
from fabric.state import REPO_ROOT
from fabric.topology.importer import import_fabric
from fabric.verify.plan import CheckPlan, describe

CAPTURE = REPO_ROOT / "tests" / "fixtures" / "ibnetdiscover__ibtopotool__3.txt"


def _switch_only() -> ClusterSpec:
    """The imported spec of ibtopotool 3 with only its switch-to-switch cables, and a Slurm
    controller so that only the tree can stop the family."""
    imported = import_fabric(parse_ibnetdiscover(CAPTURE.read_text()), "imported").spec
    spec = spec_from_mapping(imported)
    cables = [c for c in spec.fabric.cabling if c.a.switch and c.b.switch]
    assert cables and len(cables) < len(spec.fabric.cabling)
    fabric = spec.fabric.model_copy(update={"cabling": cables})
    slurm = spec.slurm.model_copy(update={"controller": next(iter(spec.hosts))})
    return spec.model_copy(update={"fabric": fabric, "slurm": slurm})


def test_a_switch_only_cabling_is_refused_with_the_reason() -> None:
    spec = _switch_only()
    plan = describe(CheckPlan(spec=spec, hosts=list(spec.hosts)))
    family = plan["slurm_topology"]
    assert "parameters" not in family, family
    reason = str(family["not_generated"])
    assert reason.startswith("the declared fabric gives Slurm no topology tree: "), reason
    assert "no switch is cabled to a host's HCA (2 switches, 0 CAs)" in reason, reason
    # the sweep still judges the switch cables
    assert len(plan["sweep"]["parameters"]) == len(spec.fabric.cabling)  # type: ignore[arg-type]


def test_the_full_capture_still_gets_its_tree() -> None:
    imported = import_fabric(parse_ibnetdiscover(CAPTURE.read_text()), "imported").spec
    spec = spec_from_mapping(imported)
    slurm = spec.slurm.model_copy(update={"controller": next(iter(spec.hosts))})
    spec = spec.model_copy(update={"slurm": slurm})
    family = describe(CheckPlan(spec=spec, hosts=list(spec.hosts)))["slurm_topology"]
    assert family.get("parameters") == ["S-e41d2d030003e470", "switch-de779e"], family
