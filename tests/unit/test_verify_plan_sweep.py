"""The ``sweep`` check family: planned from the spec alone for every InfiniBand fabric with a
declared graph, from one vantage host; not generated for other fabrics, with the reason."""

from __future__ import annotations

from pathlib import Path

from fabric.spec import load_spec
from fabric.verify.plan import CheckPlan, describe

REPO = Path(__file__).resolve().parents[2]


def _plan(path: Path, hosts: list[str] | None = None) -> CheckPlan:
    spec = load_spec(path)
    return CheckPlan(spec=spec, hosts=hosts if hosts is not None else list(spec.hosts))


def test_lab_sweeps_from_its_observer() -> None:
    plan = _plan(REPO / "Pulumi.lab.yaml")
    assert plan.spec.fabric.kind == "infiniband"
    assert plan.sweep_hosts == [plan.observer] and plan.observer is not None
    assert "sweep" not in plan.not_generated()
    assert describe(plan)["sweep"] == {
        "checks": ["test_fabric_sweep"],
        "parameters": [plan.observer],
    }


def test_other_fabrics_are_not_swept() -> None:
    plan = _plan(REPO / "Pulumi.aws-efa.example.yaml")
    assert plan.sweep_hosts == []
    assert plan.not_generated()["sweep"] == (
        "fabric.kind is efa: the MAD sweep judges InfiniBand cables"
    )


def test_no_vantage_host_selected() -> None:
    plan = _plan(REPO / "Pulumi.lab.yaml", hosts=[])
    assert plan.sweep_hosts == []
    assert plan.not_generated()["sweep"] == "no selected host with an HCA to sweep the fabric from"
