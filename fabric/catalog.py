"""NCCL bandwidth targets, each quoted from its source: the floors the checks and the
node health check judge. The cloud machine types are the targets' own catalogs
(``fabric/targets/aws/catalog.py``, ``fabric/targets/gcp/catalog.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

# --- NCCL bandwidth targets (issue 28) --------------------------------------------------------
#
# Every number below is quoted from its source; ``fabric.verify.nccl`` judges against them.
#
# - Single node, all-reduce bus bandwidth at 16 GiB over NVLink, NCCL's default algorithm
#   (NVLS, NVLink SHARP, on 8x H100/H200): Azure's node health checks,
#   Azure/azurehpc-health-checks ``conf/nd96isr_h100_v5.conf`` at commit
#   7e6ac7796e4398d2a6b0b29ca39f1060f0a993cb (``check_nccl_allreduce 460.0 1 ... 16G``),
#   ``conf/nd96isr_h200_v5.conf`` at 13fa400b10f5cb8d900cf02ea0cdda958a2082b9 (``431.0``) and
#   ``conf/nd96amsr_a100_v4.conf`` at 2a20aecf0371335db7741a498a836b910d716d15 (``228.0``).
#   NVIDIA's peak for comparison: "On 8 GPUs, you should reach a peak busBw of ~480GB/s" (H100,
#   NVLS; ~370 GB/s with NCCL_ALGO=RING): sjeaugey, NVIDIA/nccl-tests issue 212, 2024-05-06.
# - Across nodes, per NIC, all-reduce bus bandwidth with the Ring algorithm (Tree, NVLS-Tree and
#   CollNet report inflated busbw on two nodes, so multi-node runs pin ``NCCL_ALGO=Ring``):
#   "CX-7 NICs at NDR rate (400Gbps) should achieve up to 48-49GB/s per NIC" (AddyLaddy,
#   NVIDIA/nccl-tests issue 267, 2025-01-23); "We usually consider 24GB/s is the peak
#   performance per 200G NIC (12 GB/s for 100G NICs)" (sjeaugey, NVIDIA/nccl-tests issue 119,
#   2022-11-17); ring busbw across nodes is the NICs' sum: one HDR NIC under 8 GPUs gives
#   "24GB/s inter-node" (sjeaugey, NVIDIA/nccl issue 412, 2023-04-24). The floor railyard
#   judges is 96 % of that peak (NDR: 46.08 GB/s per NIC, the "46-48 GB/s" of NVIDIA's
#   guidance), per NIC of the node.
# - Per rail, ``ib_write_bw --use_cuda`` (GPUDirect RDMA), per GPU type, in Gb/s: Azure's
#   ``check_ib_bw_gdr 380`` (H100, NDR 400, ``nd96isr_h100_v5.conf`` above), ``check_ib_bw_gdr
#   360`` (H200, ``nd96isr_h200_v5.conf`` above) and ``check_ib_bw_gdr 185.0`` (A100, HDR 200,
#   ``nd96amsr_a100_v4.conf`` above). The test that number holds for is NHC's
#   ``customTests/azure_ib_write_bw_gdr.nhc`` (commit 0078044d3a838a45a89649836d61ebd1b000e3ae):
#   ``ib_write_bw -p PORT -s 8388608 -x 0 -F --report_gbits --perform_warm_up --use_cuda=IDX
#   -d DEV`` under ``numactl -N NODE -m NODE`` (the HCA's NUMA node), a loopback per HCA, each
#   HCA on its own port (18510 ...), and the statistic is the row of the 8 MiB message's
#   fourth column, ``BW average[Gb/sec]``. :data:`GPUDIRECT_WRITE` is that command.


@dataclass(frozen=True)
class BusBwTarget:
    """A minimum NCCL bus bandwidth (GB/s): the collective, the algorithm it holds for, the
    message size to read it at, and where the number comes from."""

    min_busbw: float
    collective: str
    algorithm: str
    size: str
    source: str


_AZURE_NHC = "Azure/azurehpc-health-checks"

#: (GPU type, GPUs per node) -> single-node all-reduce floor at 16 GiB, NCCL's default algorithm.
_SINGLE_NODE: dict[tuple[str, int], BusBwTarget] = {
    ("h100", 8): BusBwTarget(
        460.0,
        "all_reduce",
        "NCCL default (NVLS on 8x H100)",
        "16G",
        f"{_AZURE_NHC} conf/nd96isr_h100_v5.conf @ 7e6ac779: check_nccl_allreduce 460.0 ... 16G",
    ),
    ("h200", 8): BusBwTarget(
        431.0,
        "all_reduce",
        "NCCL default (NVLS on 8x H200)",
        "16G",
        f"{_AZURE_NHC} conf/nd96isr_h200_v5.conf @ 13fa400b: check_nccl_allreduce 431.0 1 16G",
    ),
    ("a100", 8): BusBwTarget(
        228.0,
        "all_reduce",
        "NCCL default (Ring/Tree on 8x A100)",
        "16G",
        f"{_AZURE_NHC} conf/nd96amsr_a100_v4.conf @ 2a20aecf: check_nccl_allreduce 228.0 ... 16G",
    ),
}

#: Link rate (Gb/s) -> NVIDIA's peak all-reduce bus bandwidth per NIC (GB/s) across nodes.
NIC_PEAK_BUSBW: dict[int, tuple[float, str]] = {
    400: (48.0, "NVIDIA/nccl-tests issue 267 (AddyLaddy, 2025-01-23): 48-49 GB/s per NDR NIC"),
    200: (24.0, "NVIDIA/nccl-tests issue 119 (sjeaugey, 2022-11-17): 24 GB/s per 200G NIC"),
    100: (12.0, "NVIDIA/nccl-tests issue 119 (sjeaugey, 2022-11-17): 12 GB/s per 100G NIC"),
}

#: The share of NVIDIA's per-NIC peak a multi-node run must reach (NDR: 46.08 GB/s per NIC).
NIC_FLOOR_SHARE = 0.96

#: Link rate (Gb/s) -> ib_write_bw --use_cuda floor (Gb/s) per rail, and its source: where the
#: GPU type is not known (the H100 and A100 numbers of the rates they ship with).
GPUDIRECT_WRITE_FLOOR: dict[int, tuple[float, str]] = {
    400: (380.0, f"{_AZURE_NHC} conf/nd96isr_h100_v5.conf @ 7e6ac779: check_ib_bw_gdr 380"),
    200: (185.0, f"{_AZURE_NHC} conf/nd96amsr_a100_v4.conf @ 2a20aecf: check_ib_bw_gdr 185.0"),
}

#: (GPU type, link rate) -> ib_write_bw --use_cuda floor (Gb/s) per rail, and its source:
#: NHC's per-SKU configuration (its H200 SKU is given 360 on the NDR rail its H100 gets 380 on).
GPUDIRECT_WRITE_FLOOR_BY_GPU: dict[tuple[str, int], tuple[float, str]] = {
    ("h100", 400): GPUDIRECT_WRITE_FLOOR[400],
    ("h200", 400): (
        360.0,
        f"{_AZURE_NHC} conf/nd96isr_h200_v5.conf @ 13fa400b: check_ib_bw_gdr 360",
    ),
    ("a100", 200): GPUDIRECT_WRITE_FLOOR[200],
}

#: The message size (bytes) the floors hold at: NHC's MESSAGE_SIZE.
GPUDIRECT_MESSAGE_SIZE = 8388608

#: The GPUDirect write test as NHC runs it (``azure_ib_write_bw_gdr.nhc`` @ 0078044d): one
#: 8 MiB message size, every iteration timed (``-F``: no CPU-frequency refusal), a warm-up
#: pass first, Gb/s; the floor is read from the ``BW average`` column of that row.
GPUDIRECT_WRITE = (
    "-s",
    str(GPUDIRECT_MESSAGE_SIZE),
    "-F",
    "--perform_warm_up",
    "--report_gbits",
)
GPUDIRECT_STATISTIC = "BW average at 8 MiB (-s 8388608 -F --perform_warm_up)"


def single_node_allreduce(gpu_type: str | None, gpus: int) -> BusBwTarget | None:
    """The single-node all-reduce floor for ``gpus`` GPUs of ``gpu_type``, or None when no
    source gives one (then the bandwidth is reported, not judged)."""
    return _SINGLE_NODE.get(((gpu_type or "").lower(), gpus))


def multi_node_allreduce(rate_gbps: int, nics: int) -> BusBwTarget | None:
    """The multi-node all-reduce floor (Ring) for nodes with ``nics`` NICs of ``rate_gbps``."""
    peak = NIC_PEAK_BUSBW.get(rate_gbps)
    if peak is None or nics < 1:
        return None
    per_nic, source = peak
    return BusBwTarget(
        round(per_nic * NIC_FLOOR_SHARE * nics, 2),
        "all_reduce",
        "Ring (NCCL_ALGO=Ring: Tree and NVLS-Tree inflate two-node busbw)",
        "8G",
        f"{NIC_FLOOR_SHARE:.0%} of {per_nic} GB/s x {nics} NICs; {source}",
    )


def gpudirect_write_floor(rate_gbps: int, gpu_type: str | None = None) -> tuple[float, str] | None:
    """The per-rail ib_write_bw --use_cuda floor (Gb/s) and its source, or None: the GPU type's
    at this link rate (NHC's per-SKU number) where it has one, else the link rate's."""
    by_gpu = GPUDIRECT_WRITE_FLOOR_BY_GPU.get(((gpu_type or "").lower(), rate_gbps))
    if by_gpu is not None:
        return by_gpu
    return GPUDIRECT_WRITE_FLOOR.get(rate_gbps)
