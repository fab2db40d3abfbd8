"""Report writers fed by a real JUnit file from a real pytest run."""

from __future__ import annotations

from pathlib import Path

from conftest import junit_of
from rich.console import Console

from fabric.spec import load_spec
from fabric.state import REPO_ROOT
from fabric.topology.from_spec import graph_from_spec
from fabric.verify.causes import summary
from fabric.verify.report import (
    fabric_dot,
    failing_subjects,
    markdown,
    render_picture,
    terminal_table,
)
from fabric.verify.results import read_junit

CHECKS = """
import pytest

@pytest.mark.parametrize("p", ["gpu01/mlx5_0/1", "gpu02/mlx5_0/1"])
def test_port_state_active(p, record_property):
    record_property("subject", f"port:{p}")
    assert p != "gpu02/mlx5_0/1", "gpu02 HCA mlx5_0 port 1 (cabled to leaf01 port 2): state Down, expected Active"

def test_declared_link_discovered(record_property):
    record_property("subject", "link:leaf01/3-gpu03/mlx5_0/1")
    assert False, "missing link leaf01 port 3 <-> gpu03 HCA mlx5_0 port 1"
"""


def _junit(tmp_path: Path) -> Path:
    (tmp_path / "test_fake_checks.py").write_text(CHECKS)
    return junit_of(tmp_path / "test_fake_checks.py")


def test_results_carry_outcome_message_and_subject(tmp_path: Path) -> None:
    results = read_junit(_junit(tmp_path))
    by = {(r.name, r.param): r for r in results}
    bad = by[("test_port_state_active", "gpu02/mlx5_0/1")]
    assert bad.failed and bad.subjects == ["port:gpu02/mlx5_0/1"]
    assert bad.message.startswith("gpu02 HCA mlx5_0 port 1 (cabled to leaf01 port 2): state Down")
    assert by[("test_port_state_active", "gpu01/mlx5_0/1")].outcome == "passed"


def test_summary_names_failed_checks(tmp_path: Path) -> None:
    text = summary(read_junit(_junit(tmp_path)))
    assert text.startswith("2 of 3 checks failed")
    assert "test_port_state_active[gpu02/mlx5_0/1]" in text and "missing link leaf01 port 3" in text


def test_markdown_has_verdict_failures_and_not_generated(tmp_path: Path) -> None:
    md = markdown(
        read_junit(_junit(tmp_path)),
        {"test_efa_provider": "fabric.kind is infiniband"},
        "lab",
        "fabric.png",
    )
    assert md.startswith("# lab: FAILED")
    assert "| test_declared_link_discovered |" in md and "![fabric](fabric.png)" in md
    assert "| test_efa_provider | fabric.kind is infiniband |" in md


def test_terminal_table_lists_failures(tmp_path: Path) -> None:
    console = Console(record=True, width=200)
    terminal_table(read_junit(_junit(tmp_path)), {"test_trust_mode": "no ConnectX"}, console)
    text = console.export_text()
    assert "state Down" in text and "Not generated" in text and "no ConnectX" in text


def test_picture_marks_failing_links_and_ports_red(tmp_path: Path) -> None:
    results = read_junit(_junit(tmp_path))
    assert failing_subjects(results) == {"port:gpu02/mlx5_0/1", "link:leaf01/3-gpu03/mlx5_0/1"}
    dot = fabric_dot(graph_from_spec(load_spec(REPO_ROOT / "Pulumi.lab.yaml")), results)
    red = [line for line in dot.splitlines() if "#d62728" in line and "--" in line]
    assert len(red) == 2
    assert any('"leaf01" -- "gpu02/mlx5_0"' in line for line in red)
    assert any('"leaf01" -- "gpu03/mlx5_0"' in line for line in red)
    files = render_picture(dot, tmp_path / "out")
    assert [f.suffix for f in files] == [".png", ".svg"]
    assert files[0].read_bytes()[:4] == b"\x89PNG" and b"<svg" in files[1].read_bytes()


ERRORS = """
import pytest

@pytest.fixture
def server():
    raise RuntimeError("could not start the ibping server")

@pytest.mark.parametrize("p", ["gpu01->gpu06"])
def test_ibping(p, server, record_property):
    record_property("subject", f"pair:{p}")

def test_declared_link_discovered(record_property):
    record_property("subject", "link:leaf01/3-gpu03/mlx5_0/1")
    assert False, "missing link leaf01 port 3 <-> gpu03 HCA mlx5_0 port 1"
"""


def test_a_check_that_could_not_run_is_an_error_not_a_fabric_failure(tmp_path: Path) -> None:
    (tmp_path / "test_fake_checks.py").write_text(ERRORS)
    results = read_junit(junit_of(tmp_path / "test_fake_checks.py"))
    assert failing_subjects(results) == {"link:leaf01/3-gpu03/mlx5_0/1"}  # the error paints nothing
    text = summary(results)
    assert text.startswith("1 of 2 checks failed, 1 could not run (harness or tool error)")
    assert text.index("root causes:") < text.index("could not run (harness or tool error, not")
    md = markdown(results, {}, "lab")
    assert "2 checks, 1 failed, 1 could not run." in md
    assert "| test_ibping | gpu01->gpu06 | failed on setup with" in md.split("## Could not run")[1]
    assert "| test_ibping | 0 | 0 | 1 | 0 |" in md
