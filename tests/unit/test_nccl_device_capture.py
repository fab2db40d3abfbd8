"""What the ``nccl`` family's harness printed on a real H100 (no RDMA device), read again here.

Recorded 2026-11-26 through the device tool (tests/fixtures/SOURCES.md, "Captured by railyard's
own harness on an H100"): ``nccl_tests__h100vm__1``/``__2`` are raw ``all_reduce_perf`` runs,
``__3``/``__4`` the output of ``python -m fabric.verify.nccl_local`` and ``device/*.json`` the
verdicts it wrote there. The parsers and the judge must give the same answer on this machine.
"""

from __future__ import annotations

import json
import shlex

import pytest

from fabric.catalog import single_node_allreduce
from fabric.parsers import nccl, nccl_tests
from fabric.state import REPO_ROOT
from fabric.verify.nccl import expectation
from fabric.verify.nccl_run import evaluate

FIXTURES = REPO_ROOT / "tests/fixtures"


def read(name: str) -> str:
    return (FIXTURES / name).read_text()


@pytest.mark.parametrize(
    ("name", "version", "rows"),
    [
        ("nccl_tests__h100vm__1.txt", "2.28.3+cuda13.0", 26),
        ("nccl_tests__h100vm__2.txt", None, 28),
        ("nccl_tests__h100vm__3.txt", "2.28.9+cuda13.0", 8),
        ("nccl_tests__h100vm__4.txt", "2.28.9+cuda13.0", 4),
    ],
)
def test_one_gpu_runs_parse(name: str, version: str | None, rows: int) -> None:
    text = read(name)
    table = nccl_tests.parse(text)
    assert table.version == "2.19.6"
    assert table.collective == "all_reduce_perf"
    assert table.gpus_per_thread == 1
    assert len(table.rows) == rows
    assert table.wrong == 0
    # One rank: the bus bandwidth of an all-reduce is algbw * 2(n-1)/n = 0, whatever the size.
    assert table.avg_busbw == 0
    assert all(r.out_of_place.busbw == 0 and r.in_place.busbw == 0 for r in table.rows)
    assert table.rows[-1].out_of_place.algbw > 100  # GB/s: the all-reduce did run on the GPU
    if version is None:  # run without NCCL_DEBUG: no log to read
        return
    log = nccl.parse(text)
    assert log.version == version
    assert log.ib_no_device
    assert log.networks == ["Socket"]
    assert [g.enabled for g in log.gdr] == [False]


def _recorded(kind: str) -> dict:
    return json.loads((FIXTURES / f"device/h100vm_{kind}_verdict.json").read_text())


def test_single_node_run_judged_as_on_the_device() -> None:
    recorded = _recorded("single")
    outcome = evaluate(
        shlex.split(recorded["command"]),
        recorded["rc"],
        read("nccl_tests__h100vm__3.txt"),
        None,
        single_node_allreduce("h100", 1),
    )
    assert outcome.verdict.as_dict() == recorded["verdict"]
    assert outcome.verdict.ok  # one node: NVLink only, the network is a note
    assert any("No device found" in n for n in outcome.verdict.notes)


def test_socket_fallback_on_the_device_is_a_failure_with_its_cause() -> None:
    recorded = _recorded("ib")
    outcome = evaluate(
        shlex.split(recorded["command"]),
        recorded["rc"],
        read("nccl_tests__h100vm__4.txt"),
        expectation("infiniband"),
        None,
    )
    assert outcome.verdict.as_dict() == recorded["verdict"]
    assert not outcome.verdict.ok
    (problem,) = outcome.verdict.problems
    assert "fell back to TCP sockets" in problem
    assert "no RDMA device visible to NCCL" in problem
