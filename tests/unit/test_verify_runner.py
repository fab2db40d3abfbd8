"""The check runner computes the spec's model once: a ``ClusterModel`` handed in is the one the
reports and the plan read; only an entry point without one builds it."""

from __future__ import annotations

from pathlib import Path

import pytest

from fabric.model.cluster import ClusterModel
from fabric.spec import load_spec
from fabric.state import REPO_ROOT
from fabric.verify import runner
from fabric.verify.context import ContextError
from fabric.verify.plan import CheckPlan


def _outcome(tmp_path: Path) -> runner.RunOutcome:
    return runner.RunOutcome(
        rc=0,
        results=[],
        not_generated={},
        junit=str(tmp_path / "checks.xml"),
        report_dir=str(tmp_path),
    )


def test_reports_read_the_model_handed_in_and_no_spec_file(tmp_path: Path, monkeypatch) -> None:
    model = ClusterModel(load_spec(REPO_ROOT / "Pulumi.lab.yaml"))
    graph = model.declared_graph
    assert graph is not None

    def again(*_: object) -> None:
        raise AssertionError("the declared graph was computed again")

    drawn: list[object] = []
    monkeypatch.setattr("fabric.topology.from_spec.graph_from_spec", again)
    monkeypatch.setattr("fabric.verify.report.fabric_dot", lambda g, *_: drawn.append(g) or "")
    monkeypatch.setattr("fabric.verify.report.render_picture", lambda _, out: [out / "fabric.png"])
    files = runner.write_reports(
        _outcome(tmp_path), "nosuchstack", tmp_path / "missing.yaml", model=model
    )
    assert drawn == [graph]
    assert files[-1] == str(tmp_path / "report.md")
    assert "fabric.png" in (tmp_path / "report.md").read_text()


def test_reports_without_a_model_build_it_from_the_spec_file(tmp_path: Path) -> None:
    with pytest.raises(ContextError, match="missing.yaml not found"):
        runner.write_reports(_outcome(tmp_path), "nosuchstack", tmp_path / "missing.yaml")
    spec = REPO_ROOT / "Pulumi.aws-efa.example.yaml"
    files = runner.write_reports(_outcome(tmp_path), "nosuchstack", spec)
    assert files == [str(tmp_path / "checks.xml"), str(tmp_path / "report.md")]


def test_the_plan_reads_the_model_handed_in() -> None:
    spec = load_spec(REPO_ROOT / "Pulumi.lab.yaml")
    model = ClusterModel(spec)
    plan = CheckPlan(spec=spec, hosts=list(spec.hosts), cluster=model)
    assert plan.model is model and plan.expected_graph is model.expected_graph
    assert plan.ib_mtu == model.ib_mtu
    other = CheckPlan(spec=spec, hosts=list(spec.hosts), cluster=ClusterModel(spec.model_copy()))
    with pytest.raises(ValueError, match="another spec's"):
        _ = other.model
