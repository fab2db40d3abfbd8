"""NCCL judging (fabric.verify.nccl) on real logs and tables, and the bisection."""

from pathlib import Path

import pytest

from fabric.catalog import multi_node_allreduce, single_node_allreduce
from fabric.parsers import nccl, nccl_tests
from fabric.verify.nccl import (
    NO_RDMA_DEVICE,
    Needed,
    bisect,
    chosen_network,
    expectation,
    judge,
    judge_network,
    locate,
)

FIXTURES = Path(__file__).parents[1] / "fixtures"


def log(name: str) -> nccl.NcclLog:
    return nccl.parse((FIXTURES / name).read_text())


def table(name: str) -> nccl_tests.NcclTestsReport:
    return nccl_tests.parse((FIXTURES / name).read_text())


@pytest.mark.parametrize("kind", ["infiniband", "roce"])
def test_h100_socket_fallback_is_a_failure_naming_the_missing_rdma_device(kind: str) -> None:
    verdict = judge(log("nccl__h100vm__1.txt"), None, expectation(kind), None)
    assert not verdict.ok and verdict.network == "Socket"
    assert verdict.problems == [
        f"NCCL fell back to TCP sockets instead of IB/IBext over "
        f"{'IB' if kind == 'infiniband' else 'RoCE'} with GPUDirect RDMA: {NO_RDMA_DEVICE}"
    ]
    assert "/dev/infiniband" in verdict.summary() and verdict.summary().startswith("FAIL")


def test_old_release_socket_fallback_without_using_network_line() -> None:
    old = log("nccl__nccl352__1.txt")
    assert chosen_network(old) == "Socket"
    assert judge_network(old, expectation("infiniband"))[0].endswith(NO_RDMA_DEVICE)


def test_single_node_run_notes_the_fallback_without_judging_the_network() -> None:
    verdict = judge(log("nccl__h100vm__1.txt"), None, None, None)
    assert verdict.ok and verdict.notes == [f"NCCL's network is Socket: {NO_RDMA_DEVICE}"]


def test_roce_with_gpudirect_rdma_disabled_fails() -> None:
    problems = judge_network(log("nccl__nccl1537__1.txt"), expectation("roce"))
    assert len(problems) == 1
    assert problems[0].startswith(
        "GPU Direct RDMA disabled for mlx5_0, mlx5_1: load nvidia-peermem"
    )


def test_roce_log_passes_roce_and_names_the_link_layer_for_infiniband() -> None:
    roce = log("nccl__nccltests185__1.txt")
    assert judge_network(roce, expectation("roce", hcas=["mlx5_10", "mlx5_11"])) == []
    assert judge_network(roce, expectation("infiniband")) == [
        "mlx5_10, mlx5_11 run over the wrong link layer for IB/IBext over IB with GPUDirect RDMA"
    ]


def test_sharp_plugin_counts_as_ib_and_a_declared_hca_not_used_is_named() -> None:
    sharp = log("nccl__nccltests294__1.txt")
    declared = [f"mlx5_{i}" for i in range(1, 9)]
    assert judge_network(sharp, expectation("infiniband", hcas=declared)) == []
    problems = judge_network(sharp, expectation("infiniband", hcas=["mlx5_0", *declared]))
    assert problems[0].startswith("NCCL does not use mlx5_0 (it uses mlx5_1, mlx5_2")


def test_efa_libfabric_provider() -> None:
    efa = log("nccl__nccl1597__1.txt")
    assert judge_network(efa, expectation("efa")) == []
    assert judge_network(efa, expectation("infiniband")) == [
        "NCCL used network Libfabric, not IB/IBext over IB with GPUDirect RDMA"
    ]


def test_gcp_transports_name_their_plugin() -> None:
    efa = log("nccl__nccl1597__1.txt")
    problems = judge_network(efa, expectation("gcp-gpudirect", transport="gpudirect-tcpxo"))
    assert problems == ["NCCL used network Libfabric, not FasTrak"]


def test_a_log_without_network_lines() -> None:
    channels = log("nccl__nccl707__1.txt")
    assert judge_network(channels, expectation("infiniband"))[0].startswith(
        "the log names no network"
    )


def test_two_node_tree_table_below_the_ndr_floor_names_algorithm_and_source() -> None:
    target = multi_node_allreduce(400, 4)
    assert target is not None and target.min_busbw == 184.32
    verdict = judge(None, table("nccl_tests__nccltests232__1.txt"), None, target)
    assert not verdict.ok and verdict.busbw == 41.52
    (problem,) = verdict.problems
    assert problem.startswith("peak busbw 41.52 GB/s below 184.32 GB/s (Ring")
    assert "NVIDIA/nccl-tests issue 267" in problem and "read the floor at 8G" in problem


def test_table_without_a_cited_floor_is_reported_not_judged() -> None:
    verdict = judge(None, table("nccl_tests__sparkpb103__1.txt"), None, None)
    assert verdict.ok and verdict.notes == [
        "peak busbw 1.01 GB/s: no cited floor for this hardware, not judged"
    ]


def test_wrong_elements_fail() -> None:
    text = (
        (FIXTURES / "nccl_tests__nccltests232__1.txt")
        .read_text()
        .replace("22.46      0\n", "22.46      7\n")
    )
    verdict = judge(None, nccl_tests.parse(text), None, None)
    assert verdict.problems == ["7 wrong elements: results corrupted in transit"]


def test_single_node_targets_are_cited() -> None:
    h100 = single_node_allreduce("h100", 8)
    assert h100 is not None and h100.min_busbw == 460.0
    assert "nd96isr_h100_v5.conf" in h100.source and h100.size == "16G"
    assert single_node_allreduce("h100", 1) is None


NODES = [f"gpu{i:02d}" for i in range(1, 9)]


@pytest.mark.parametrize(
    ("slow", "expected"),
    [({"gpu05"}, ("gpu05",)), ({"gpu02", "gpu07"}, ("gpu02", "gpu07")), ({"gpu08"}, ("gpu08",))],
)
def test_bisect_names_the_slow_nodes(slow: set[str], expected: tuple[str, ...]) -> None:
    finding = bisect(NODES, lambda subset: not slow & set(subset))
    assert finding.slow == expected and finding.cut is None
    assert finding.runs < len(NODES) * 2


def test_bisect_halves_that_pass_alone_are_a_cut() -> None:
    left, right = set(NODES[:4]), set(NODES[4:])
    finding = bisect(NODES, lambda s: not (left & set(s) and right & set(s)))
    assert finding.slow == () and finding.cut == (tuple(NODES[:4]), tuple(NODES[4:]))
    assert "the links between them" in finding.describe()


def test_bisect_rails_one_at_a_time() -> None:
    rails = [f"mlx5_{i}" for i in range(8)]
    finding = bisect(rails, lambda s: "mlx5_6" not in s, min_run=1)
    assert finding.describe("rail") == "slow rail: mlx5_6"


def test_locate_is_pure_and_asks_for_the_next_subsets() -> None:
    with pytest.raises(Needed) as first:
        locate(NODES, {})
    assert first.value.subsets == [frozenset(NODES)]
    with pytest.raises(Needed) as second:
        locate(NODES, {frozenset(NODES): False})
    assert second.value.subsets == [frozenset(NODES[:4])]
    assert locate(NODES, {frozenset(NODES): True}).slow == ()


def test_two_nodes_and_nothing_good_to_pair_with() -> None:
    assert bisect(["a", "b"], lambda s: len(s) < 2).slow == ("a", "b")


def test_eight_declared_rails_used_by_the_sharp_plugin_pass() -> None:
    rails = [f"mlx5_{k}" for k in range(8)]
    assert judge_network(log("nccl__nccl988__1.txt"), expectation("infiniband", hcas=rails)) == []


def test_gdr_not_shown_is_a_note() -> None:
    verdict = judge(log("nccl__nccl988__1.txt"), None, expectation("infiniband"), None)
    assert verdict.ok and verdict.notes[0].startswith("the log shows no GPU Direct RDMA line")
