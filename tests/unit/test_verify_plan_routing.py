"""The ``routing`` and ``congestion_control`` families: planned from the spec alone for every
InfiniBand fat tree (the lab and the examples), not generated elsewhere, with the reason; the
lab says plainly that it cannot prove congestion control."""

from __future__ import annotations

from pathlib import Path

import pytest

from fabric.spec import load_spec
from fabric.verify.plan import FAMILIES, CheckPlan, describe

REPO = Path(__file__).resolve().parents[2]
INFINIBAND = ["Pulumi.lab.yaml", "Pulumi.baremetal-ib.example.yaml"]


def _plan(path: Path, hosts: list[str] | None = None) -> CheckPlan:
    spec = load_spec(path)
    return CheckPlan(spec=spec, hosts=hosts if hosts is not None else list(spec.hosts))


@pytest.mark.parametrize("name", INFINIBAND)
def test_every_infiniband_fat_tree_plans_routing(name: str) -> None:
    plan = _plan(REPO / name)
    assert plan.spec.fabric.kind == "infiniband"
    assert plan.routing_hosts and plan.routing_hosts[0] in plan.sm_hosts
    assert describe(plan)["routing"] == {
        "checks": list(FAMILIES["routing"][0]),
        "parameters": plan.routing_hosts,
    }


def test_the_lab_reads_its_masters_log() -> None:
    plan = _plan(REPO / "Pulumi.lab.yaml")
    assert plan.sm_log_hosts == ["sm1", "sm2"]


def test_other_fabrics_have_no_routing() -> None:
    plan = _plan(REPO / "Pulumi.aws-efa.example.yaml")
    reasons = plan.not_generated()
    assert reasons["routing"] == "fabric.kind is efa: LFT routing is InfiniBand's"
    assert "not_generated" in describe(plan)["congestion_control"]


def test_no_host_selected() -> None:
    plan = _plan(REPO / "Pulumi.lab.yaml", hosts=[])
    assert plan.not_generated()["routing"] == (
        "no selected host with an HCA to read the forwarding tables from"
    )


def test_congestion_control_off_is_not_generated() -> None:
    plan = _plan(REPO / "Pulumi.lab.yaml")
    assert plan.not_generated()["congestion_control"].startswith(
        "fabric.infiniband.congestion_control.enabled is false"
    )


def test_the_lab_cannot_prove_congestion_control() -> None:
    spec = load_spec(REPO / "Pulumi.lab.yaml")
    ib = spec.fabric.infiniband
    assert ib is not None
    cc = ib.congestion_control.model_copy(update={"enabled": True})
    spec = spec.model_copy(
        update={
            "fabric": spec.fabric.model_copy(
                update={"infiniband": ib.model_copy(update={"congestion_control": cc})}
            )
        }
    )
    plan = CheckPlan(spec=spec, hosts=list(spec.hosts))
    assert plan.cc_hosts == plan.routing_hosts
    reason = plan.not_generated()["congestion_control"]
    assert reason.startswith("target lab: the lab cannot prove congestion control")
    assert "class 0x21" in reason
