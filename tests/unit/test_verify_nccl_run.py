"""The nccl-tests harness: the exact command, a real subprocess, the parse and judge path."""

import subprocess
import sys
from pathlib import Path

import pytest

from fabric.catalog import multi_node_allreduce
from fabric.verify.nccl import NO_RDMA_DEVICE, expectation
from fabric.verify.nccl_run import (
    NcclHarnessError,
    NcclTest,
    build_command,
    evaluate,
    execute,
    local_runner,
    nccl_env,
    srun_wrap,
)

FIXTURES = Path(__file__).parents[1] / "fixtures"
ROOT = Path(__file__).parents[2]


def test_single_gpu_command_is_exact() -> None:
    command = build_command(NcclTest(gpus=1), nccl_env(), "/opt/nccl-tests/build/all_reduce_perf")
    assert command == [
        "env",
        "NCCL_DEBUG=INFO",
        "NCCL_DEBUG_SUBSYS=INIT,NET,ENV",
        "/opt/nccl-tests/build/all_reduce_perf",
        "-b",
        "8M",
        "-e",
        "1G",
        "-f",
        "2",
        "-g",
        "1",
        "-c",
        "1",
    ]


def test_roce_environment_names_hcas_exactly_and_the_gid_index() -> None:
    env = nccl_env("roce", hcas=["mlx5_0", "mlx5_1"], gid_index=3, algorithm="Ring")
    assert env == {
        "NCCL_DEBUG": "INFO",
        "NCCL_DEBUG_SUBSYS": "INIT,NET,ENV",
        "NCCL_IB_HCA": "=mlx5_0:1,mlx5_1:1",
        "NCCL_IB_GID_INDEX": "3",
        "NCCL_ALGO": "Ring",
    }


def test_efa_environment_and_infiniband_without_gid() -> None:
    assert nccl_env("efa")["FI_PROVIDER"] == "efa"
    assert "NCCL_IB_GID_INDEX" not in nccl_env("infiniband", hcas=["mlx5_0"], gid_index=3)


def test_srun_wraps_one_task_per_gpu() -> None:
    inner = build_command(NcclTest(end="8G"), nccl_env("infiniband", algorithm="Ring"))
    wrapped = srun_wrap(inner, ["gpu01", "gpu02"], 8, 8, 900)
    assert wrapped[:9] == [
        "srun",
        "--nodes=2",
        "--nodelist=gpu01,gpu02",
        "--ntasks-per-node=8",
        "--gpus-per-node=8",
        "--exclusive",
        "--time=15",
        "--mpi=pmix",
        "--cpu-bind=none",
    ]
    assert wrapped[9:] == inner and "NCCL_ALGO=Ring" in wrapped
    pyxis = srun_wrap(inner, ["gpu01"], 8, 8, 900, container="nvcr.io#nvidia/pytorch:24.04-py3")
    assert pyxis[9] == "--container-image=nvcr.io#nvidia/pytorch:24.04-py3"
    assert pyxis[10:] == inner


def test_a_real_process_output_flows_through_parse_and_judge() -> None:
    """``cat`` of a real capture (nccl-tests header and NCCL's INFO lines of a Socket
    fallback) through the local runner: the multi-node judgement names the cause."""
    capture = FIXTURES / "nccl__nccl352__1.txt"
    outcome = execute(["cat", str(capture)], expectation("infiniband"), None, 30)
    assert outcome.rc == 0 and outcome.log is not None and outcome.table is not None
    assert [r.rank for r in outcome.table.ranks] == [0, 1]
    assert not outcome.verdict.ok
    assert outcome.verdict.problems[0].endswith(NO_RDMA_DEVICE)
    assert outcome.verdict.problems[1:] == ["nccl-tests printed no result row"]


def test_shared_h100_log_single_node_is_a_note_multi_node_a_failure() -> None:
    text = (FIXTURES / "nccl__h100vm__1.txt").read_text()
    single = evaluate(["all_reduce_perf"], 0, text, None, None)
    assert single.verdict.notes == [f"NCCL's network is Socket: {NO_RDMA_DEVICE}"]
    assert single.verdict.problems == [
        f"all_reduce_perf printed no result table: {text.strip().splitlines()[-3]} | "
        f"{text.strip().splitlines()[-2]} | {text.strip().splitlines()[-1]}"
    ]
    multi = evaluate(["all_reduce_perf"], 0, text, expectation("roce"), None)
    assert multi.verdict.problems[0].startswith("NCCL fell back to TCP sockets instead of IB")


def test_table_below_floor_and_nonzero_exit() -> None:
    text = (FIXTURES / "nccl_tests__nccltests232__1.txt").read_text()
    outcome = evaluate(["x/all_reduce_perf"], 3, text, None, multi_node_allreduce(400, 1))
    assert outcome.verdict.problems == [
        "peak busbw 41.52 GB/s below 46.08 GB/s (Ring (NCCL_ALGO=Ring: Tree and NVLS-Tree "
        "inflate two-node busbw), 96% of 48.0 GB/s x 1 NICs; NVIDIA/nccl-tests issue 267 "
        "(AddyLaddy, 2025-01-23): 48-49 GB/s per NDR NIC); largest message 33554432 B, read "
        "the floor at 8G",
        "nccl-tests exited 3",
    ]
    assert outcome.as_dict()["summary"].startswith("FAIL; network unknown; busbw 41.52 GB/s")


def test_nothing_readable_is_a_harness_error() -> None:
    with pytest.raises(NcclHarnessError, match="exited 127 with no NCCL log"):
        evaluate(["all_reduce_perf"], 127, "all_reduce_perf: command not found\n", None, None)


def test_runner_timeout_and_missing_program_are_harness_errors() -> None:
    with pytest.raises(NcclHarnessError, match="ran past its 0.5 s timeout"):
        local_runner(["sleep", "5"], 0.5)
    with pytest.raises(NcclHarnessError, match="cannot run /nonexistent/all_reduce_perf"):
        local_runner(["/nonexistent/all_reduce_perf"], 5)


def run_local(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "fabric.verify.nccl_local", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
        check=False,
    )


def test_local_entry_refuses_a_missing_binary_with_exit_2(tmp_path: Path) -> None:
    done = run_local("--binary", str(tmp_path / "all_reduce_perf"), "--out", str(tmp_path))
    assert done.returncode == 2
    assert done.stderr.strip().endswith("all_reduce_perf: not an executable file")


def test_local_entry_loads_no_spec_pytest_or_lab_code() -> None:
    code = (
        "import sys, fabric.verify.nccl_local; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('pytest', 'testinfra', 'yaml', 'pulumi') or m.startswith(('fabric.spec', 'fabric.lab'))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True
    )
    assert done.stdout.strip() == "[]"
