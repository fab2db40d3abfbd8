"""GPU-NIC affinity from ``nvidia-smi topo -m``: each rail's NIC must sit next to its GPU.

GPUDirect RDMA moves data between a GPU and a NIC over PCIe; NCCL uses it when they share a
PCIe switch (``PIX``: one bridge, ``PXB``: several) and falls back to staging through host
memory when the path crosses the CPU (``PHB``, ``NODE``) or the socket interconnect (``SYS``).
Pure functions over :class:`fabric.parsers.nvidia_smi_topo.NvidiaSmiTopo`.
"""

from __future__ import annotations

from fabric.catalog import GPUDIRECT_MESSAGE_SIZE, GPUDIRECT_WRITE
from fabric.parsers.nvidia_smi_topo import NvidiaSmiTopo
from fabric.parsers.perftest import PerftestReport

#: Relations from nearest to farthest (``nvidia-smi topo -m``'s legend).
RELATION_ORDER = ("PIX", "PXB", "PHB", "NODE", "SYS")

#: Relations a rail's NIC may have to its GPU.
NEAR = ("PIX", "PXB")


def _rank(relation: str | None) -> int:
    return RELATION_ORDER.index(relation) if relation in RELATION_ORDER else len(RELATION_ORDER)


def nearest_gpu(topo: NvidiaSmiTopo, device: str) -> int | None:
    """The index of the GPU nearest ``device`` (``mlx5_0``), or None when the matrix does not
    hold it (the first of equally near GPUs)."""
    best = min(topo.gpus, key=lambda gpu: _rank(topo.relation(gpu, device)), default=None)
    if best is None or topo.relation(best, device) not in RELATION_ORDER:
        return None
    return int(best.removeprefix("GPU"))


def affinity_problem(topo: NvidiaSmiTopo, device: str, gpu: int) -> str | None:
    """Why ``device`` is not next to ``GPU<gpu>`` (PIX or PXB), or None when it is."""
    name = f"GPU{gpu}"
    if name not in topo.gpus:
        return f"{name} is not in nvidia-smi topo -m (GPUs: {', '.join(topo.gpus) or 'none'})"
    relation = topo.relation(name, device)
    if relation is None:
        return f"{device} is not in nvidia-smi topo -m's matrix (is its driver loaded?)"
    if relation in NEAR:
        return None
    nearest = nearest_gpu(topo, device)
    closer = nearest is not None and _rank(topo.relation(f"GPU{nearest}", device)) < _rank(relation)
    hint = f"; the GPU nearest {device} is GPU{nearest}" if closer else ""
    return (
        f"{device} is {relation} to {name}, not PIX or PXB: GPUDirect RDMA between them crosses "
        f"{'the CPU' if relation in ('PHB', 'NODE') else 'the socket interconnect'}{hint}"
    )


#: The first rail's ib_write_bw port (NHC's 18510 ... 18517, one per HCA): each rail its own,
#: so two rails' servers on one host never share perftest's default 18515.
GPUDIRECT_BASE_PORT = 18510


def numa_node(topo: NvidiaSmiTopo, gpu: int) -> int | None:
    """``GPU<gpu>``'s NUMA node (``NUMA Affinity`` in ``nvidia-smi topo -m``), or None where
    the matrix gives none (``N/A`` on a VM)."""
    row = next((r for r in topo.rows if r.device == f"GPU{gpu}"), None)
    value = row.numa_affinity if row else None
    return int(value) if value is not None and value.isdigit() else None


def gpudirect_argv(
    device: str,
    gpu: int,
    *,
    rail: int = 0,
    gid_index: int | None = None,
    numa: int | None = None,
) -> list[str]:
    """One side of the GPUDirect write test as Azure's NHC runs it (the test its floors hold
    for, :data:`fabric.catalog.GPUDIRECT_WRITE`): bound to the NUMA node of the rail's GPU
    where known, the rail's own port, the buffer in GPU ``gpu``; ``gid_index`` for RoCE."""
    argv = ["numactl", "-N", str(numa), "-m", str(numa)] if numa is not None else []
    argv += ["ib_write_bw", "-d", device, f"--use_cuda={gpu}", *GPUDIRECT_WRITE]
    argv += ["-p", str(GPUDIRECT_BASE_PORT + rail)]
    if gid_index is not None:
        argv += ["-x", str(gid_index)]
    return argv


def gpudirect_bandwidth(report: PerftestReport) -> float | None:
    """The statistic the floor is defined on: ``BW average`` of the 8 MiB row (None: no such
    row, the test was not the anchor's)."""
    return next(
        (
            row.bw_average
            for run in report.runs
            for row in run.bw
            if row.bytes == GPUDIRECT_MESSAGE_SIZE
        ),
        None,
    )
