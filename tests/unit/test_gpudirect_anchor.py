"""Issue 41: GPUDirect measured as its floor is defined (Azure NHC's ``ib_write_bw`` command and
per-GPU floors), a perftest without CUDA is a harness error, and a dma-buf node needs no
``nvidia_peermem`` (tests/fixtures/SOURCES.md names each capture)."""

from __future__ import annotations

from pathlib import Path

import pytest

from fabric.catalog import GPUDIRECT_WRITE, gpudirect_write_floor
from fabric.parsers import ParseError, perftest
from fabric.parsers.nvidia_smi_topo import parse as parse_topo
from fabric.state import REPO_ROOT
from fabric.verify import health, health_gpu
from fabric.verify.gpu import gpudirect_argv, gpudirect_bandwidth, numa_node

FIXTURES = REPO_ROOT / "tests/fixtures"


def read(name: str) -> str:
    return (FIXTURES / name).read_text()


# --- the command and the floors ---------------------------------------------------------------


def test_the_command_is_nhcs() -> None:
    # customTests/azure_ib_write_bw_gdr.nhc @ 0078044d: numactl -N $numa -m $numa ib_write_bw
    # -p $PORT -s 8388608 -x 0 -F --report_gbits --perform_warm_up --use_cuda=$idx -d $device
    argv = gpudirect_argv("mlx5_3", 3, rail=3, numa=1)
    assert argv[:5] == ["numactl", "-N", "1", "-m", "1"]
    assert argv[5:8] == ["ib_write_bw", "-d", "mlx5_3"]
    assert "--use_cuda=3" in argv
    for flag in ("-F", "--perform_warm_up", "--report_gbits"):
        assert flag in argv
    assert argv[argv.index("-s") + 1] == "8388608"
    assert argv[argv.index("-p") + 1] == "18513"  # NHC's ports: 18510 + the device's index
    assert gpudirect_argv("mlx5_0", 0, gid_index=3)[-2:] == ["-x", "3"]
    assert gpudirect_argv("mlx5_0", 0)[0] == "ib_write_bw"  # no NUMA node known: unbound


def test_the_slow_path_runs_the_same_test() -> None:
    assert tuple(health_gpu.GPUDIRECT_WRITE) == GPUDIRECT_WRITE
    argv = health_gpu._write_bw_argv({"device": "mlx5_0", "gpu": 0}, numa=0)
    assert argv == ["numactl", "-N", "0", "-m", "0", "ib_write_bw", "-d", "mlx5_0"] + [
        "--use_cuda=0",
        *GPUDIRECT_WRITE,
    ]


@pytest.mark.parametrize(
    ("gpu", "rate", "floor", "conf"),
    [
        ("h100", 400, 380.0, "nd96isr_h100_v5.conf"),
        ("H200", 400, 360.0, "nd96isr_h200_v5.conf"),
        ("a100", 200, 185.0, "nd96amsr_a100_v4.conf"),
        (None, 400, 380.0, "nd96isr_h100_v5.conf"),  # GPU type unknown: the rate's
        ("h200", 200, 185.0, "nd96amsr_a100_v4.conf"),  # no H200 number at HDR: the rate's
    ],
)
def test_floor_per_gpu_type(gpu: str | None, rate: int, floor: float, conf: str) -> None:
    got, source = gpudirect_write_floor(rate, gpu) or (None, "")
    assert got == floor
    assert conf in source


def test_the_statistic_is_bw_average_at_8_mib() -> None:
    # a real sweep up to 8 MiB whose 4 MiB row is higher than its 8 MiB one: the 8 MiB row's
    # BW average is read (NHC's), not the highest row
    report = perftest.parse(read("perftest__chestergillon__1.txt"))
    rows = {row.bytes: row.bw_average for run in report.runs for row in run.bw}
    assert rows[4194304] > rows[8388608]
    assert gpudirect_bandwidth(report) == rows[8388608] == 2707.23
    assert gpudirect_bandwidth(perftest.parse(read("perftest__deepops__1.txt"))) is None


def test_numa_node_of_the_gpu_from_topo() -> None:
    # the H200 capture's matrix: GPU0, NUMA Affinity 0
    topo = parse_topo(read("device/nvidia_smi_topo__h200vm__1.txt"))
    assert numa_node(topo, 0) == 0
    assert numa_node(topo, 7) is None


# --- perftest without CUDA --------------------------------------------------------------------

#: Debian bookworm's perftest 4.5+0.17-1 (captured here, SOURCES.md).
NO_CUDA = read("perftest__debiannocuda__1.txt")


def test_perftest_without_cuda_is_named() -> None:
    assert perftest.cuda_unsupported(NO_CUDA) == "ib_write_bw: unrecognized option '--use_cuda=0'"
    report = perftest.parse(NO_CUDA)
    assert not report.ok
    assert report.reason == (
        "perftest built without CUDA: ib_write_bw: unrecognized option '--use_cuda=0'"
    )
    assert perftest.usage_has_cuda(NO_CUDA) is False
    assert health_gpu.perftest_without_cuda(NO_CUDA)
    # a run's output (no usage) says nothing either way
    assert perftest.usage_has_cuda(read("perftest__deepops__1.txt")) is None
    assert not health_gpu.perftest_without_cuda(read("perftest__deepops__1.txt"))


def test_slow_path_reports_a_harness_error_not_a_drain(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(health_gpu, "_usage", lambda: NO_CUDA)
    failures, harness = health_gpu.check_rail({"device": "mlx5_0", "gpu": 0, "min_gbps": 380})
    assert failures == []
    assert harness == [
        f"mlx5_0 GPU0: ib_write_bw has no --use_cuda (built without CUDA): {health_gpu.NO_CUDA_FIX}"
    ]


# --- dma-buf instead of nvidia_peermem --------------------------------------------------------

H200_VERSION = read("device/proc_driver_nvidia_version__h200vm__1.txt")
H200_KERNEL = "6.18.44-fc-v657-gpu"  # dmesg__h200vm__1.txt: "Linux version 6.18.44-fc-v657-gpu"


def test_the_h200_capture_is_dmabuf_capable() -> None:
    assert health.dmabuf_capable(H200_VERSION, H200_KERNEL)
    assert not health.dmabuf_capable(H200_VERSION, "5.4.0-150-generic")
    proprietary = H200_VERSION.replace("Open Kernel Module", "Kernel Module")
    assert not health.dmabuf_capable(proprietary, H200_KERNEL)


def test_infiniband_node_with_dmabuf_is_not_drained(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    proc = tmp_path / "nvidia"
    proc.mkdir()
    (proc / "version").write_text(H200_VERSION)
    monkeypatch.setattr(health, "NVIDIA_PROC", proc)
    monkeypatch.setattr(health, "kernel_release", lambda: H200_KERNEL)
    assert not Path("/sys/module/nvidia_peermem").exists()  # as on the H200: lsmod shows none
    checker = health.Checker({"node": "n1", "ports": []}, tmp_path / "state.json")
    checker._peermem()  # an InfiniBand config: no "gpudirect" list
    assert checker.failures == []
    (proc / "version").write_text(H200_VERSION.replace("Open Kernel Module", "Kernel Module"))
    checker._peermem()
    assert checker.failures == [
        "no GPUDirect RDMA path: nvidia_peermem not loaded and no dma-buf (the NVIDIA open "
        "kernel module on Linux >= 5.12)"
    ]


# --- nvidia-smi topo -m: a preamble, and topo -p2p refused ------------------------------------


def test_topo_tolerates_a_preamble() -> None:
    # HAMi PR 99: the shell prompt pasted above a one-GPU matrix
    topo = parse_topo(read("nvidia_smi_topo__hami99__1.txt"))
    assert topo.preamble == ["root@controller-node-1:/# nvidia-smi topo -m"]
    assert topo.columns == ["GPU0"]
    assert topo.rows[0].cpu_affinity == "0-7"
    assert numa_node(topo, 0) is None  # NUMA Affinity N/A


def test_topo_refuses_p2p_output() -> None:
    # the H200's `nvidia-smi topo -p2p r`: the same matrix shape, a peer-to-peer legend
    with pytest.raises(ParseError, match="nvidia-smi topo -p2p"):
        parse_topo(read("device/nvidia_smi_topo__h200vm__2.txt"))
    assert parse_topo(read("device/nvidia_smi_topo__h200vm__1.txt")).preamble == []
