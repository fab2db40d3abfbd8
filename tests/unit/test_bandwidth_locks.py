"""Bandwidth tests serialised per host (``fabric.verify.bandwidth.host_locks``): two tests that
touch one host never overlap, across threads and across processes (the suite's xdist
workers), tests on other hosts run meanwhile, and a wait past the timeout is ``HostsBusy``."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from fabric.verify.bandwidth import HostsBusy, host_locks


def _run_all(
    folder: Path, jobs: list[tuple[str, ...]], hold: float
) -> list[tuple[set, float, float]]:
    """Run each job (its hosts) in a thread holding them for ``hold`` s: (hosts, start, end)."""
    spans: list[tuple[set, float, float]] = []
    lock = threading.Lock()

    def one(hosts: tuple[str, ...]) -> None:
        with host_locks(folder, hosts, timeout=30, poll=0.01):
            start = time.monotonic()
            time.sleep(hold)
            end = time.monotonic()
        with lock:
            spans.append((set(hosts), start, end))

    threads = [threading.Thread(target=one, args=(job,)) for job in jobs]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    return spans


def test_two_tests_on_one_host_never_overlap(tmp_path: Path) -> None:
    # eight rails' GPUDirect pairs into dgx02 and a leaf NCCL run over dgx01..dgx03
    jobs = [("dgx01", "dgx02")] * 8 + [("dgx01", "dgx02", "dgx03"), ("dgx02", "dgx03")]
    spans = _run_all(tmp_path, jobs, 0.05)
    assert len(spans) == len(jobs)
    for i, (hosts_a, start_a, end_a) in enumerate(spans):
        for hosts_b, start_b, end_b in spans[i + 1 :]:
            if hosts_a & hosts_b:
                assert end_a <= start_b or end_b <= start_a, (hosts_a, hosts_b)


def test_tests_on_other_hosts_run_at_once(tmp_path: Path) -> None:
    spans = _run_all(tmp_path, [("a1", "a2"), ("b1", "b2"), ("c1", "c2")], 0.3)
    starts, ends = [s for _, s, _ in spans], [e for _, _, e in spans]
    assert max(starts) < min(ends), "disjoint hosts were serialised"


def test_a_host_held_past_the_timeout_is_hosts_busy_naming_it(tmp_path: Path) -> None:
    with host_locks(tmp_path, ["dgx02"]):
        with pytest.raises(HostsBusy, match="dgx02 stayed busy"):
            with host_locks(tmp_path, ["dgx01", "dgx02"], timeout=0.2, poll=0.02):
                pytest.fail("both hosts held while dgx02 was")
    # released: the same hosts are taken at once, and dgx01 was let go after the refusal
    with host_locks(tmp_path, ["dgx01", "dgx02"], timeout=0.2):
        pass


_HOLDER = """
import sys, time
from pathlib import Path
from fabric.verify.bandwidth import host_locks
with host_locks(Path(sys.argv[1]), ["dgx01"]):
    print("held", flush=True)
    time.sleep(float(sys.argv[2]))
"""


def test_another_process_holding_the_host_is_waited_for(tmp_path: Path) -> None:
    """xdist workers are processes: the lock is an flock on a file of the run's folder."""
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(tmp_path), "1.0"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(HostsBusy):
            with host_locks(tmp_path, ["dgx01"], timeout=0.2, poll=0.02):
                pass
        began = time.monotonic()
        with host_locks(tmp_path, ["dgx01"], timeout=10, poll=0.02):
            waited = time.monotonic() - began
        assert holder.wait(timeout=10) == 0
        assert waited > 0.2
    finally:
        holder.kill()
        holder.wait(timeout=10)


def test_odd_host_names_make_plain_lock_files(tmp_path: Path) -> None:
    with host_locks(tmp_path, ["gpu/../x y"]):
        assert [p.name for p in tmp_path.iterdir()] == ["bw-gpu_.._x_y.lock"]
