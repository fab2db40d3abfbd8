"""The health check's opt-in slow path: what training sees, on one node, against its floors.

``railyard-health --slow`` (roles/node_health with ``node_health_gpu_prolog``, or by hand) adds
two measurements to the fast port checks, both needing the GPUs idle, so neither runs unless
asked: a single-node nccl-tests all-reduce (its peak bus bandwidth against the catalog's floor
for the node's GPUs) and, per rail, an ``ib_write_bw --use_cuda`` loopback through the HCA
(server and client on the same device, buffers in the GPU nearest it: the GPUDirect RDMA path
between that GPU and that NIC) against the rail's floor. A result below its floor is a failure
(the node is drained, ``railyard: ...``); a tool that could not run or did not finish is a
harness error (nothing changed).

Standard library only, installed beside ``health.py``; the configuration's ``slow`` section is
written by :func:`fabric.handoff.health.slow_config` from the catalog (``fabric.catalog``).
"""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Callable, Sequence
from typing import Any

#: Seconds the nccl-tests run may take; seconds one ib_write_bw side may take.
NCCL_TIMEOUT = 600.0
WRITE_BW_TIMEOUT = 60.0
#: Seconds the loopback server gets to listen before the client connects.
SERVER_SETTLE = 2.0
#: A whole slow run's alarm (seconds): the nccl sweep and one loopback per rail.
SLOW_RUN_TIMEOUT = 1200

_NCCL_ROW = re.compile(r"^\s*\d+\s+\d+\s+[A-Za-z]\w*\s")
_BW_ROW = re.compile(r"^\s*\d+\s+\d+\s+[\d.]+\s+(?P<avg>[\d.]+)\s+[\d.]+\s*$")

#: ``(argv, timeout) -> (exit code, output)``: 124 timed out, 127 could not start.
Run = Callable[[Sequence[str], float], tuple[int, str]]


def read_table(text: str) -> tuple[float | None, int]:
    """(the highest bus bandwidth in GB/s, the wrong elements) of an nccl-tests table: each
    row ends with out-of-place then in-place ``time algbw busbw #wrong``."""
    found: list[float] = []
    wrong = 0
    for line in text.splitlines():
        if not _NCCL_ROW.match(line) or "NCCL INFO" in line:
            continue
        tokens = line.split()
        if len(tokens) < 11:
            continue
        for busbw, check in ((tokens[-6], tokens[-5]), (tokens[-2], tokens[-1])):
            try:
                found.append(float(busbw))
            except ValueError:
                pass
            if check.isdecimal():
                wrong += int(check)
    return (max(found) if found else None), wrong


def write_bw_gbps(text: str) -> float | None:
    """The highest ``BW average[Gb/sec]`` of ``ib_write_bw --report_gbits`` rows."""
    values = [float(m["avg"]) for line in text.splitlines() if (m := _BW_ROW.match(line))]
    return max(values) if values else None


def _last(text: str, rc: int) -> str:
    lines = text.strip().splitlines()
    return lines[-1].strip()[:120] if lines else f"exit {rc}"


def check_nccl(nccl: dict[str, Any], run: Run) -> tuple[list[str], list[str]]:
    """(failures, harness errors) of the single-node all-reduce against ``min_busbw``."""
    argv = [
        str(nccl["binary"]),
        "-b", "1G",
        "-e", str(nccl.get("size", "16G")),
        "-f", "2",
        "-g", str(nccl["gpus"]),
        "-c", "1",
    ]  # fmt: skip
    rc, text = run(argv, NCCL_TIMEOUT)
    if rc in (124, 127):
        return [], [f"nccl-tests: {_last(text, rc)}"]
    peak, wrong = read_table(text)
    if peak is None:
        return [f"nccl-tests all_reduce printed no result (exit {rc}): {_last(text, rc)}"], []
    if wrong:
        return [f"nccl-tests all_reduce: {wrong} wrong elements"], []
    floor = float(nccl["min_busbw"])
    if peak < floor:
        return [
            f"NCCL all_reduce busbw {peak:g} GB/s < {floor:g} on {nccl['gpus']} GPUs "
            f"({nccl.get('source', 'catalog')})"
        ], []
    return [], []


def _write_bw_argv(rail: dict[str, Any]) -> list[str]:
    argv = ["ib_write_bw", "-d", str(rail["device"]), f"--use_cuda={rail['gpu']}", "--report_gbits"]
    if rail.get("gid_index") is not None:
        argv += ["-x", str(rail["gid_index"])]
    return argv


def check_rail(rail: dict[str, Any]) -> tuple[list[str], list[str]]:
    """(failures, harness errors) of one rail's ``ib_write_bw --use_cuda`` loopback."""
    argv = _write_bw_argv(rail)
    name = f"{rail['device']} GPU{rail['gpu']}"
    try:
        server = subprocess.Popen(
            [*argv, "-p", str(rail.get("port", 18515))],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    except OSError as exc:
        return [], [f"{name}: ib_write_bw: {exc.strerror or exc}"]
    try:
        time.sleep(SERVER_SETTLE)
        if server.poll() is not None:
            return [f"{name}: ib_write_bw --use_cuda server exited {server.returncode} at once"], []
        try:
            done = subprocess.run(
                [*argv, "-p", str(rail.get("port", 18515)), "127.0.0.1"],
                capture_output=True,
                text=True,
                timeout=WRITE_BW_TIMEOUT,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return [], [f"{name}: ib_write_bw timed out after {WRITE_BW_TIMEOUT:g}s"]
        text = done.stdout + done.stderr
        gbps = write_bw_gbps(text)
        if gbps is None:
            return [
                f"{name}: ib_write_bw --use_cuda gave no result: {_last(text, done.returncode)}"
            ], []
        floor = float(rail["min_gbps"])
        if gbps < floor:
            return [
                f"{name}: GPUDirect ib_write_bw {gbps:g} Gb/s < {floor:g} "
                f"({rail.get('source', 'catalog')})"
            ], []
        return [], []
    finally:
        if server.poll() is None:
            server.terminate()
            try:
                server.wait(timeout=5)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()


def check_slow(slow: dict[str, Any], run: Run) -> tuple[list[str], list[str]]:
    """Every slow measurement the configuration declares: (failures, harness errors)."""
    failures: list[str] = []
    harness: list[str] = []
    if slow.get("nccl"):
        more, errors = check_nccl(slow["nccl"], run)
        failures += more
        harness += errors
    for rail in slow.get("gpudirect", []):
        more, errors = check_rail(rail)
        failures += more
        harness += errors
    return failures, harness
