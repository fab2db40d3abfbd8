"""The health check's opt-in GPU slow path (fabric.verify.health_gpu): its readers on real
nccl-tests and perftest output, its judgement against the catalog's floors, its configuration
from the spec, and the program itself run here with --slow, where no nccl-tests exists."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from fabric.handoff.health import health_configs
from fabric.model.cluster import ClusterModel
from fabric.spec import load_spec
from fabric.state import REPO_ROOT as REPO
from fabric.verify import health, health_gpu

FIXTURES = REPO / "tests" / "fixtures"
PROGRAM = REPO / "fabric" / "verify" / "health.py"


def text(name: str) -> str:
    return (FIXTURES / name).read_text()


def test_reads_peak_busbw_and_wrong_elements_from_real_tables() -> None:
    assert health_gpu.read_table(text("nccl_tests__nccltests232__1.txt")) == (41.52, 0)
    assert health_gpu.read_table(text("nccl_tests__nccl340__1.txt")) == (21.86, 0)
    assert health_gpu.read_table(text("nccl__h100vm__1.txt")) == (None, 0)


def test_reads_the_write_bandwidth_average_in_gbits() -> None:
    """ib_write_bw --report_gbits on RoCE 100G (a CPU-frequency warning between the rows)."""
    assert health_gpu.write_bw_gbps(text("perftest__deepops__1.txt")) == 92.40


def replay(output: str, rc: int = 0):
    """A runner answering with real captured output (no GPU here to run nccl-tests)."""
    calls: list[list[str]] = []

    def run(argv: Sequence[str], timeout: float) -> tuple[int, str]:
        calls.append(list(argv))
        return rc, output

    return run, calls


NCCL = {
    "binary": "/opt/railyard/nccl-tests/bin/all_reduce_perf",
    "gpus": 8,
    "size": "16G",
    "min_busbw": 460.0,
    "source": "nd96isr_h100_v5.conf",
}


def test_busbw_below_the_floor_is_a_failure_naming_the_source() -> None:
    run, calls = replay(text("nccl_tests__nccltests232__1.txt"))
    failures, harness = health_gpu.check_nccl(NCCL, run)
    assert (
        failures == ["NCCL all_reduce busbw 41.52 GB/s < 460 on 8 GPUs (nd96isr_h100_v5.conf)"]
        and harness == []
    )
    assert calls == [[NCCL["binary"], "-b", "1G", "-e", "16G", "-f", "2", "-g", "8", "-c", "1"]]


def test_busbw_at_the_floor_passes() -> None:
    run, _ = replay(text("nccl_tests__nccltests232__1.txt"))
    assert health_gpu.check_nccl(NCCL | {"min_busbw": 41.0}, run) == ([], [])


def test_wrong_elements_fail() -> None:
    broken = text("nccl_tests__nccltests232__1.txt").replace("22.46      0\n", "22.46      4\n")
    run, _ = replay(broken)
    assert health_gpu.check_nccl(NCCL | {"min_busbw": 1.0}, run)[0] == [
        "nccl-tests all_reduce: 4 wrong elements"
    ]


def test_missing_binary_is_a_harness_error_not_a_failure() -> None:
    failures, harness = health_gpu.check_nccl(NCCL, health.run)
    assert failures == []
    assert harness == [
        "nccl-tests: /opt/railyard/nccl-tests/bin/all_reduce_perf: No such file or directory"
    ]


def test_slow_config_for_an_8_rail_dgx_h100_node() -> None:
    spec = load_spec(REPO / "examples/dgx-h100-ib.yaml")
    config = health_configs(ClusterModel(spec))["dgx02"]
    slow = config["slow"]
    assert slow["nccl"] | {"source": ""} == NCCL | {"source": ""}
    assert "nd96isr_h100_v5.conf" in slow["nccl"]["source"]
    assert [(r["device"], r["gpu"], r["min_gbps"]) for r in slow["gpudirect"]] == [
        (f"mlx5_{k}", k, 380.0) for k in range(8)
    ]
    lab = load_spec(REPO / "Pulumi.lab.yaml")
    assert "slow" not in health_configs(ClusterModel(lab))["gpu01"]


def test_program_slow_without_a_slow_section_is_exit_2(tmp_path: Path) -> None:
    config = tmp_path / "health.json"
    config.write_text(json.dumps({"node": "gpu01", "ports": []}))
    done = subprocess.run(
        [sys.executable, str(PROGRAM), "--slow", "--check", "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert "no 'slow' section" in done.stderr and done.stderr.count("\n") == 1


def test_program_slow_here_reports_the_missing_nccl_tests_as_harness_error(tmp_path: Path) -> None:
    config = tmp_path / "health.json"
    config.write_text(json.dumps({"node": "gpu01", "ports": [], "slow": {"nccl": NCCL}}))
    done = subprocess.run(
        [sys.executable, str(PROGRAM), "--slow", "--check", "--json", "--config", str(config),
         "--state", str(tmp_path / "state.json")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )  # fmt: skip
    report = json.loads(done.stdout)
    assert done.returncode == 3, done.stderr
    assert report["failures"] == [] and report["action"] == "checked only"
    assert report["harness_errors"][-1].startswith("nccl-tests: /opt/railyard/nccl-tests/bin")
