"""The NCCL INFO log, nccl-tests and ``nvidia-smi topo -m`` parsers, on real captured output."""

from pathlib import Path

import pytest

from fabric.parsers import ParseError, nccl, nccl_tests, nvidia_smi_topo

FIXTURES = Path(__file__).parents[1] / "fixtures"


def read(name: str) -> str:
    return (FIXTURES / name).read_text()


def test_h100_socket_fallback_log() -> None:
    log = nccl.parse(read("nccl__h100vm__1.txt"))
    assert log.version == "2.28.9+cuda13.0"
    assert log.networks == ["Socket"]
    assert log.ib_no_device and log.ib_devices == []
    assert log.plugins_failed == ["IB"] and log.plugins_initialized == ["Socket"]
    assert log.socket_devices == ["eth0"] and log.oob_interface == "eth0"
    assert [(g.net, g.name, g.enabled) for g in log.gdr] == [("Socket", "eth0", False)]
    assert log.hosts == ["vm"] and log.warnings == []


def test_roce_devices_with_gdr_disabled() -> None:
    log = nccl.parse(read("nccl__nccl1537__1.txt"))
    assert log.networks == ["IB"]
    assert [(d.index, d.name, d.port, d.link_layer) for d in log.ib_devices] == [
        (0, "mlx5_0", 1, "RoCE"),
        (1, "mlx5_1", 1, "RoCE"),
    ]
    assert [(g.name, g.enabled) for g in log.gdr] == [("mlx5_0", False), ("mlx5_1", False)]
    assert log.version is None


def test_bare_version_line_and_two_hosts() -> None:
    log = nccl.parse(read("nccl__nccltests185__1.txt"))
    assert log.version == "2.19.3+cuda12.3"
    assert log.hosts == ["dgxh100-4", "dgxh100-3"]
    assert [d.name for d in log.ib_devices] == ["mlx5_10", "mlx5_11"]
    assert log.oob_interface == "enp220s0np0"


def test_gdrdma_channels_counted_per_net_device() -> None:
    log = nccl.parse(read("nccl__nccl707__1.txt"))
    assert [(c.net, c.device, c.gdr, c.count) for c in log.channels] == [
        ("IB", 0, True, 2),
        ("IB", 2, True, 5),
        ("IB", 4, True, 2),
        ("IB", 5, True, 3),
    ]


def test_efa_provider_and_libfabric() -> None:
    log = nccl.parse(read("nccl__nccl1597__1.txt"))
    assert log.networks == ["Libfabric"]
    assert (log.ofi_provider, log.ofi_nics) == ("efa", 16)


def test_old_socket_fallback_has_no_using_network_line() -> None:
    log = nccl.parse(read("nccl__nccl352__1.txt"))
    assert log.version == "2.4.8+cuda10.1"
    assert log.networks == [] and log.ib_no_device and log.socket_devices == ["lo"]


def test_sharp_plugin_devices_and_warnings() -> None:
    log = nccl.parse(read("nccl__nccltests294__1.txt"))
    assert log.networks == ["IBext_v6"]
    assert len(log.ib_devices) == 8
    assert {(d.link_layer, d.extra) for d in log.ib_devices} == {("IB", "SHARP")}
    assert log.warnings == [
        "Net : connecting to address  with family 33621 is neither AF_INET(2) nor AF_INET6(10)"
    ]


@pytest.mark.parametrize("name", ["nccl_tests__nccl340__1.txt", "show_gids__magnate3__1.txt"])
def test_text_without_nccl_lines_is_not_an_nccl_log(name: str) -> None:
    with pytest.raises(ParseError, match="^nccl: end of input: expected 'NCCL INFO'"):
        nccl.parse(read(name))


def test_nccl_tests_header_and_rows() -> None:
    report = nccl_tests.parse(read("nccl_tests__sparkpb103__1.txt"))
    assert (report.version, report.collective) == ("2.20.0", "all_reduce_perf")
    assert (report.threads, report.gpus_per_thread, report.min_bytes) == (1, 1, 8192)
    assert [(r.rank, r.host, r.name) for r in report.ranks] == [
        (0, "spark-d708", "NVIDIA GB10"),
        (1, "spark-dbf4", "NVIDIA GB10"),
    ]
    first = report.rows[0]
    assert (first.size, first.redop, first.root) == (8192, "sum", -1)
    assert (first.out_of_place.busbw, first.in_place.busbw, first.in_place.wrong) == (
        0.23,
        0.27,
        0,
    )
    assert report.peak_busbw == 1.01 and report.avg_busbw is None


def test_nccl_tests_old_format_with_trailer() -> None:
    report = nccl_tests.parse(read("nccl_tests__nccl340__1.txt"))
    assert len(report.rows) == 12
    assert report.rows[-1].redop is None and report.rows[-1].out_of_place.error == 0.0
    assert (report.out_of_bounds, report.avg_busbw, report.peak_busbw) == (0, 6.6972, 21.86)


def test_nccl_tests_rows_between_nccl_info_lines() -> None:
    report = nccl_tests.parse(read("nccl_tests__nccltests128__1.txt"))
    assert len(report.rows) == 10 and report.out_of_bounds == 0
    assert report.rows[0].redop == "sum" and report.rows[0].root is None
    assert report.rows[0].in_place.error == 2e-07 and report.wrong == 0


def test_nccl_tests_tree_two_nodes() -> None:
    report = nccl_tests.parse(read("nccl_tests__nccltests232__1.txt"))
    assert [r.size for r in report.rows][-1] == 33554432 and report.peak_busbw == 41.52


def test_nccl_tests_failure_line_is_the_tools_own_failure() -> None:
    text = read("nccl_tests__nccltests232__1.txt") + (
        "gpu5: Test NCCL failure common.cu:1005 'unhandled system error'\n"
    )
    report = nccl_tests.parse(text)
    assert not report.ok and report.reason is not None and "Test NCCL failure" in report.reason
    assert len(report.rows) == 5


def test_nccl_tests_wrong_elements_are_counted() -> None:
    line = read("nccl_tests__nccltests232__1.txt").splitlines()[4]
    report = nccl_tests.parse(line.rsplit("0", 1)[0] + "3\n")
    assert report.wrong == 3 and report.rows[0].in_place.wrong == 3


def test_nccl_log_is_not_nccl_tests_output() -> None:
    with pytest.raises(ParseError, match="^nccl_tests: end of input"):
        nccl_tests.parse(read("nccl__nccl1537__1.txt"))


def test_topo_single_gpu_with_ansi_header() -> None:
    topo = nvidia_smi_topo.parse(read("nvidia_smi_topo__h100vm__1.txt"))
    assert topo.columns == ["GPU0"] and topo.gpus == ["GPU0"]
    assert topo.rows[0].cpu_affinity == "0-15" and topo.rows[0].numa_affinity == "0"
    assert topo.relation("GPU0", "mlx5_0") is None


def test_topo_nic_columns() -> None:
    topo = nvidia_smi_topo.parse(read("nvidia_smi_topo__nccl2150__1.txt"))
    assert topo.gpus == [f"GPU{i}" for i in range(6)]
    assert [topo.relation(f"GPU{i}", f"NIC{i}") for i in range(6)] == ["PXB"] * 6
    assert topo.relation("GPU0", "NIC4") == "SYS"


def test_topo_rdma_device_columns() -> None:
    topo = nvidia_smi_topo.parse(read("nvidia_smi_topo__nccltests78__1.txt"))
    assert topo.relation("GPU0", "mlx5_0") == "PIX"
    assert topo.relation("GPU2", "mlx5_0") == "PXB"
    assert topo.relation("GPU3", "mlx5_4") == "SYS"


def test_topo_nic_legend() -> None:
    topo = nvidia_smi_topo.parse(read("nvidia_smi_topo__sglang14092__1.txt"))
    assert topo.nic_names["NIC0"] == "mlx5_0" and topo.nic_names["NIC35"] == "mlx5_bond_3"
    assert topo.nic_column("mlx5_bond_0") == "NIC32"


def test_topo_bad_row_names_the_line() -> None:
    text = read("nvidia_smi_topo__nccl2150__1.txt").replace("PXB     NODE", "FAST    NODE", 1)
    with pytest.raises(ParseError, match="^nvidia_smi_topo: line 2: expected 16 relations"):
        nvidia_smi_topo.parse(text)


def test_sharp_plugin_path_and_eight_rails() -> None:
    log = nccl.parse(read("nccl__nccl988__1.txt"))
    assert log.version == "2.12.9+cuda11.6" and log.networks == ["IBext"]
    assert log.plugin_paths == ["/opt/hpcx/nccl_rdma_sharp_plugin/lib/libnccl-net.so"]
    assert [d.name for d in log.ib_devices] == [f"mlx5_{k}" for k in range(8)]
    assert log.oob_interface == "eth0" and log.gdr == []
