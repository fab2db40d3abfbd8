"""GPUDirect on every rail: ``ib_write_bw --use_cuda`` per rail, and each rail's NIC next to its GPU.

``gpudirect``: on every rail (each HCA, not the first only) an ``ib_write_bw`` from one GPU
node to another, each side's buffer in the GPU nearest that HCA (``nvidia-smi topo -m``), the
RoCE GID index read from ``show_gids``, run as Azure's NHC runs the test its floors hold for
(``-s 8388608 -F --perform_warm_up``, bound to the GPU's NUMA node, each rail on its own
port); ``BW average`` at 8 MiB must reach the catalog's floor for the node's GPU type. A
perftest built without CUDA (Debian's) is a harness error naming the fix, not a failure.
``gpu_nic_affinity``: each rail's NIC is PIX or PXB to its GPU, not across the CPU or sockets.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterator

import pytest

from fabric.catalog import GPUDIRECT_STATISTIC, gpudirect_write_floor
from fabric.model.gpus import gpus_of
from fabric.parsers import PARSERS, ParseError
from fabric.parsers.nvidia_smi_topo import NvidiaSmiTopo
from fabric.parsers.perftest import cuda_unsupported, usage_has_cuda
from fabric.verify.bandwidth import Exclusive, min_write_bw
from fabric.verify.checks.test_reachability import _address, _serve
from fabric.verify.facts import Facts
from fabric.verify.gids import roce_gid_index
from fabric.verify.gpu import (
    affinity_problem,
    gpudirect_argv,
    gpudirect_bandwidth,
    nearest_gpu,
    numa_node,
)
from fabric.verify.harness import HarnessError, Served
from fabric.verify.plan import CheckPlan, GpuRail, RailPair

TOPO = "nvidia-smi topo -m"


def _topo(facts: Facts, host: str) -> NvidiaSmiTopo:
    """``nvidia-smi topo -m`` on ``host``, parsed; a failed or unreadable run is the harness's."""
    rc, output = facts.output(host, TOPO)
    if rc != 0:
        raise HarnessError(f"{host}: {TOPO} exited {rc}: {output.strip()[:200]}")
    try:
        return facts.parsed(host, "nvidia_smi_topo", TOPO)
    except ParseError as err:
        raise HarnessError(f"{host}: {err}") from err


def _gpu(facts: Facts, host: str, device: str, declared: int) -> int:
    """The GPU nearest ``device`` on ``host`` (its rail's declared GPU if the matrix lacks it)."""
    topo = _topo(facts, host)
    found = nearest_gpu(topo, device)
    return declared if found is None else found


def _write_bw(facts: Facts, host: str, device: str, gpu: int, roce: bool, rail: int) -> str:
    """``ib_write_bw`` on one rail with its buffer in GPU ``gpu`` (RoCE: the show_gids index),
    as NHC runs it (:func:`fabric.verify.gpu.gpudirect_argv`)."""
    index = None
    if roce:
        index = roce_gid_index(facts.parsed(host, "show_gids", "show_gids"), device)
        if index is None:
            raise HarnessError(f"{host}: show_gids lists no RoCE v2 IPv4 GID on {device}")
    numa = numa_node(_topo(facts, host), gpu)
    return shlex.join(gpudirect_argv(device, gpu, rail=rail, gid_index=index, numa=numa))


#: What a perftest without CUDA is told to do instead.
NO_CUDA_FIX = (
    "install a perftest built with CUDA (./configure CUDA_H_PATH=/usr/local/cuda/include/cuda.h, "
    "or MLNX_OFED/DOCA's), not the distribution's"
)


def _cuda_perftest(facts: Facts, host: str) -> None:
    """A harness error where ``host``'s ib_write_bw has no ``--use_cuda`` (Debian's perftest):
    the tool cannot run the test, which says nothing about the fabric."""
    _, usage = facts.output(host, "ib_write_bw -h")
    if usage_has_cuda(usage) is False:
        raise HarnessError(
            f"{host}: ib_write_bw offers no --use_cuda (built without CUDA): {NO_CUDA_FIX}"
        )


@pytest.fixture
def gpudirect_server(
    facts: Facts, plan: CheckPlan, rail_pair: RailPair, exclusive: Exclusive
) -> Iterator[Served]:
    """The rail's ``ib_write_bw --use_cuda`` server on the pair's target, both hosts held for
    the test: no other rail's server, pair or NCCL run on either meanwhile."""
    with exclusive((rail_pair.source, rail_pair.target)):
        _cuda_perftest(facts, rail_pair.target)
        gpu = _gpu(facts, rail_pair.target, rail_pair.target_device, rail_pair.target_gpu)
        roce = rail_pair.link_layer == "Ethernet"
        yield from _serve(
            facts,
            plan,
            rail_pair.target,
            _write_bw(facts, rail_pair.target, rail_pair.target_device, gpu, roce, rail_pair.rail),
        )


@pytest.mark.family("gpudirect")
def test_gpudirect_write_bandwidth(
    host, facts: Facts, plan: CheckPlan, rail_pair: RailPair, gpudirect_server: Served
) -> None:
    """GPU memory to GPU memory over one rail reaches the rail's floor."""
    _cuda_perftest(facts, rail_pair.source)
    gpu = _gpu(facts, rail_pair.source, rail_pair.source_device, rail_pair.source_gpu)
    roce = rail_pair.link_layer == "Ethernet"
    command = _write_bw(facts, rail_pair.source, rail_pair.source_device, gpu, roce, rail_pair.rail)
    result = host.run(f"timeout 120 {command} {_address(facts, rail_pair.target)}")
    output = result.stdout + result.stderr
    if refused := cuda_unsupported(output):
        raise HarnessError(
            f"{rail_pair.id}: ib_write_bw built without CUDA ({refused}): {NO_CUDA_FIX}"
        )
    if result.rc == 127 and "numactl" in output:
        raise HarnessError(f"{rail_pair.source}: numactl is not installed: {output.strip()[:200]}")
    try:
        report = PARSERS["perftest"](output)
    except ParseError as err:
        raise HarnessError(f"{rail_pair.id}: {err}") from err
    measured = gpudirect_bandwidth(report)
    if measured is None:
        if (gone := gpudirect_server.gone()) is not None:
            raise gone
        pytest.fail(f"{rail_pair.id}: ib_write_bw --use_cuda gave no 8 MiB result: {report.reason}")
    _, gpu_type = gpus_of(plan.spec, rail_pair.source)
    cited = gpudirect_write_floor(rail_pair.rate_gbps, gpu_type)
    floor, source = cited or (min_write_bw(rail_pair.rate_gbps), "fabric/verify/bandwidth.py")
    assert measured >= floor, (
        f"{rail_pair.id}: ib_write_bw --use_cuda={gpu} {measured:.1f} Gb/s ({GPUDIRECT_STATISTIC})"
        f" < floor {floor} Gb/s for {gpu_type or 'GPUs'} at {rail_pair.rate_gbps} Gb/s ({source})"
    )


@pytest.mark.family("gpu_nic_affinity")
def test_gpu_nic_affinity(host, facts: Facts, gpu_rail: GpuRail) -> None:
    """The rail's NIC shares a PCIe switch with its GPU (PIX or PXB in nvidia-smi topo -m)."""
    topo = _topo(facts, gpu_rail.host)
    problem = affinity_problem(topo, gpu_rail.device, gpu_rail.gpu)
    assert problem is None, f"{gpu_rail.host}: {problem}"
