"""Issue 41: a multi-node run that measured nothing fails, and a Socket fallback's cause is read
from NCCL's own lines on every fabric (tests/fixtures/SOURCES.md names each capture)."""

from __future__ import annotations

import pytest

from fabric.parsers import nccl, nccl_tests
from fabric.state import REPO_ROOT
from fabric.verify.nccl import (
    NO_RDMA_DEVICE,
    RunShape,
    expectation,
    fallback_cause,
    gdr_off_cause,
    judge,
    judge_network,
)
from fabric.verify.nccl_run import evaluate

FIXTURES = REPO_ROOT / "tests/fixtures"


def read(name: str) -> str:
    return (FIXTURES / name).read_text()


# --- the rank and node count ------------------------------------------------------------------

#: A real one-rank capture (one H100, nccl-tests without MPI: Rank 0 on host "vm", busbw 0),
#: repeated sixteen times here: what sixteen processes of an MPI-less nccl-tests print under
#: ``srun --nodes=2 --ntasks-per-node=8`` (each its own one-rank job).
SIXTEEN_ALONE = read("nccl_tests__h100vm__1.txt") * 16


def test_sixteen_one_rank_tables_are_one_rank_on_one_host() -> None:
    table = nccl_tests.parse(SIXTEEN_ALONE)
    assert len(table.ranks) == 16
    assert table.rank_count == 1
    assert table.rank_hosts == ["vm"]
    assert table.peak_busbw == 0


def test_sixteen_one_rank_tables_fail_where_they_passed() -> None:
    table = nccl_tests.parse(SIXTEEN_ALONE)
    # before: no floor on EFA (none cited), so busbw 0 was a note and the run passed
    assert judge(None, table, None, None).ok
    verdict = judge(None, table, None, None, RunShape(nodes=2, ranks=16))
    assert not verdict.ok
    assert verdict.problems[0].startswith(
        "nccl-tests reports 1 rank on 1 host (vm); the job asked for 16 ranks on 2 nodes: "
        "16 processes each ran alone (nccl-tests built without MPI=1"
    )
    assert "busbw 0 GB/s on a 16-rank run" in verdict.problems[1]


def test_sixteen_one_rank_tables_on_efa_fail_with_the_plugin_named() -> None:
    outcome = evaluate(
        ["srun", "all_reduce_perf"], 0, SIXTEEN_ALONE, expectation("efa"), None, RunShape(2, 16)
    )
    assert not outcome.verdict.ok
    assert outcome.verdict.summary().startswith("FAIL; network Socket; busbw 0 GB/s")
    text = " ".join(outcome.verdict.problems)
    assert "could not find libnccl-net.so: aws-ofi-nccl" in text
    assert "16 processes each ran alone" in text
    assert "mlx5_ib" not in text and "/dev/infiniband" not in text


def test_a_run_of_the_ranks_asked_is_not_judged_short() -> None:
    # a one-rank run asked for one rank (a single GPU) is judged as before
    table = nccl_tests.parse(read("nccl_tests__h100vm__1.txt"))
    assert judge(None, table, None, None, RunShape(1, 1)).ok


# --- the cause, in NCCL's words ---------------------------------------------------------------


def test_set_by_environment_is_read() -> None:
    log = nccl.parse(read("nccl__nccl1053__1.txt"))
    assert log.env == {
        "NCCL_IBEXT_DISABLE": "1",
        "NCCL_IB_DISABLE": "1",
        "NCCL_SOCKET_IFNAME": "lo",
    }
    problems = judge_network(log, expectation("infiniband"))
    assert problems == [
        "NCCL fell back to TCP sockets instead of IB/IBext over IB with GPUDirect RDMA: "
        "NCCL_IB_DISABLE set by environment to 1: NCCL was told not to use InfiniBand/RoCE "
        "(unset it in the job's environment, container or /etc/nccl.conf)"
    ]


@pytest.mark.parametrize(
    ("name", "missing"),
    [
        ("nccl__h100vm__1.txt", ["libnccl-net.so"]),  # 2.28: "NET/Plugin: Could not find: X"
        ("nccl__nccl352__1.txt", ["libnccl-net.so"]),  # 2.4: "No plugin found (X)."
    ],
)
def test_missing_net_plugin_is_read(name: str, missing: list[str]) -> None:
    assert nccl.parse(read(name)).net_plugins_missing == missing


@pytest.mark.parametrize("name", ["nccl__h100vm__1.txt", "nccl__nccl352__1.txt"])
def test_efa_without_the_plugin_is_told_the_plugin(name: str) -> None:
    log = nccl.parse(read(name))
    [problem] = judge_network(log, expectation("efa"))
    assert "NET/Plugin: could not find libnccl-net.so: aws-ofi-nccl" in problem
    assert "mlx5_ib" not in problem and "/dev/infiniband" not in problem


def test_gcp_without_the_plugin_is_told_the_plugin() -> None:
    log = nccl.parse(read("nccl__h100vm__1.txt"))
    [problem] = judge_network(log, expectation("gcp-gpudirect", transport="rdma-roce"))
    assert "could not find libnccl-net.so: GCP's NCCL net plugin (gIB" in problem
    assert "mlx5_ib" not in problem


def test_efa_plugin_that_failed_is_told_its_warning() -> None:
    log = nccl.parse(read("nccl__awsofinccl889__1.txt"))
    assert log.ib_no_device  # NCCL then tried IB: the old cause blamed mlx5_ib
    [problem] = judge_network(log, expectation("efa"))
    assert problem.startswith(
        "NCCL fell back to TCP sockets instead of Libfabric/AWS (provider efa): the NET plugin "
        "failed to initialize (NET/OFI Initializing plugin failed): aws-ofi-nccl"
    )
    assert "mlx5_ib" not in problem


def test_infiniband_without_a_device_keeps_its_cause() -> None:
    log = nccl.parse(read("nccl__h100vm__1.txt"))
    assert fallback_cause(log, expectation("infiniband")) == NO_RDMA_DEVICE


def test_rdma_core_too_old_for_dmabuf_is_read() -> None:
    log = nccl.parse(read("nccl__h100vm__1.txt"))
    assert log.missing_symbols == ["mlx5dv_get_data_direct_sysfs_path", "mlx5dv_reg_dmabuf_mr"]
    assert gdr_off_cause(log).startswith(
        "rdma-core is too old for dma-buf (dlvsym failed on mlx5dv_reg_dmabuf_mr)"
    )
    clean = nccl.parse(read("nccl__nccl1053__1.txt"))
    assert gdr_off_cause(clean).startswith("load nvidia-peermem")
