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
    described = describe(plan)["sweep"]
    assert described["checks"] == [
        "test_declared_link_discovered",
        "test_no_undeclared_links",
        "test_port_state_active",
        "test_port_physical_state_linkup",
        "test_port_error_counters",
    ]
    # every declared cable: 10 HCA cables and 8 leaf-spine cables, each named by both ends
    cables = described["parameters"]
    assert len(cables) == 18  # type: ignore[arg-type]
    assert cables[0] == {  # type: ignore[index]
        "link": "leaf01/1-gpu01/mlx5_0/1",
        "port": "gpu01/mlx5_0/1",
        "host": "gpu01",
    }
    assert cables[-1] == {  # type: ignore[index]
        "link": "leaf02/64-spine01/8",
        "port": "leaf02/64-spine01/8",
        "host": None,
    }


def test_the_sweep_retires_the_per_host_cable_checks() -> None:
    """Every InfiniBand port the sweep judges leaves the per-host port and link families: SSH
    asks a host only what lives on it (here the port's active MTU, the master it sees)."""
    plan = _plan(REPO / "Pulumi.lab.yaml")
    assert {c.port for c in plan.swept_cables if c.host} == {p.id for p in plan.ib_ports}
    assert plan.host_ports == [] and plan.host_ib_ports == []
    reasons = plan.not_generated()
    assert (
        reasons["ports"]
        == reasons["ib_links"]
        == (f"the fabric sweep from {plan.observer} judges every declared cable (sweep)")
    )
    assert "ib" not in reasons and "sm" not in reasons


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
