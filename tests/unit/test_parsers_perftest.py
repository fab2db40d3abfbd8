"""perftest parser, on every perftest fixture."""

import pytest

from fabric.parsers import ParseError
from fabric.parsers.perftest import parse
from fabric.state import REPO_ROOT

FIXTURES = REPO_ROOT / "tests" / "fixtures"


def read(name: str) -> str:
    return (FIXTURES / name).read_text()


@pytest.mark.parametrize(
    ("name", "runs"),
    [
        ("perftest__chestergillon__1.txt", [("RDMA_Write BW Test", "client", 23)]),
        ("perftest__deepops__1.txt", [("RDMA_Write BW Test", "client", 1)]),
        ("perftest__magnate3__1.txt", [("Send BW Test", "server", 23)]),
        ("perftest__magnate3__3.txt", [("Send BW Test", "client", 23)]),
        ("perftest__spiderpool__1.txt", [("RDMA_Read Latency Test", "client", 1)]),
        ("perftest__spiderpool__2.txt", [("RDMA_Read Latency Test", "client", 1)]),
        (
            "perftest__superbench__1.txt",
            [("RDMA_Write BW Test", "client", 1), ("RDMA_Write BW Test", "server", 1)],
        ),
        (
            "perftest__superbench__2.txt",
            [("RDMA_Write BW Test", "server", 0), ("RDMA_Write BW Test", "client", 24)],
        ),
    ],
)
def test_runs_sides_and_rows(name: str, runs: list[tuple[str, str, int]]) -> None:
    report = parse(read(name))
    assert [(r.title, r.side, len(r.bw) + len(r.lat)) for r in report.runs] == runs


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        (
            "perftest__chestergillon__1.txt",
            {
                "device": "mlx4_0",
                "link_type": "IB",
                "mtu": 4096,
                "gid_index": None,
                "unit": "MB/sec",
            },
        ),
        (
            "perftest__deepops__1.txt",
            {"device": "mlx5_0", "link_type": "Ethernet", "gid_index": 3, "unit": "Gb/sec"},
        ),
        ("perftest__magnate3__1.txt", {"device": "mlx5_2", "mtu": 4096, "link_type": "IB"}),
        ("perftest__magnate3__3.txt", {"device": "mlx5_1", "mtu": 1024, "gid_index": 3}),
        ("perftest__spiderpool__1.txt", {"device": "mlx5_0", "gid_index": 12, "unit": "usec"}),
        ("perftest__spiderpool__2.txt", {"device": "mlx5_5", "gid_index": 2, "mtu": 1024}),
        ("perftest__superbench__1.txt", {"device": "ib0", "mtu": 4096, "kind": "bw"}),
        ("perftest__superbench__2.txt", {"device": "ib0", "link_type": "IB"}),
    ],
)
def test_last_run_settings(name: str, expected: dict[str, object]) -> None:
    run = parse(read(name)).runs[-1].model_dump()
    assert {key: run[key] for key in expected} == expected


@pytest.mark.parametrize(
    ("name", "size", "average"),
    [
        ("perftest__chestergillon__1.txt", 8388608, 2707.23),
        ("perftest__deepops__1.txt", 65536, 92.40),
        ("perftest__magnate3__1.txt", 8388608, 23426.81),
        ("perftest__magnate3__3.txt", 2, 4.35),
        ("perftest__superbench__1.txt", 8388608, 24056.72),
        ("perftest__superbench__2.txt", 4096, 9948.41),
    ],
)
def test_bw_average_at_size(name: str, size: int, average: float) -> None:
    rows = [row for run in parse(read(name)).runs for row in run.bw if row.bytes == size]
    assert rows[0].bw_average == average


@pytest.mark.parametrize(
    ("name", "peak"),
    [("perftest__chestergillon__1.txt", 2935.0), ("perftest__superbench__2.txt", 23277.91)],
)
def test_best_bw_average(name: str, peak: float) -> None:
    assert parse(read(name)).peak_bw_average == peak


@pytest.mark.parametrize(
    ("name", "t_typical", "p99_9"),
    [("perftest__spiderpool__1.txt", 7.04, 16.81), ("perftest__spiderpool__2.txt", 6.74, 20.37)],
)
def test_latency_row(name: str, t_typical: float, p99_9: float) -> None:
    row = parse(read(name)).runs[0].lat[0]
    assert (row.bytes, row.t_typical, row.p99_9) == (2, t_typical, p99_9)


@pytest.mark.parametrize(
    ("name", "lid", "gid"),
    [
        ("perftest__chestergillon__1.txt", 2, None),
        ("perftest__magnate3__1.txt", 0x6E, None),
        ("perftest__deepops__1.txt", 0, "00:00:00:00:00:00:00:00:00:00:255:255:10:10:11:11"),
        ("perftest__spiderpool__2.txt", 0, "00:00:00:00:00:00:00:00:00:00:255:255:172:81:00:118"),
    ],
)
def test_remote_endpoint(name: str, lid: int, gid: str | None) -> None:
    remote = parse(read(name)).runs[-1].remote
    assert remote is not None and (remote.lid, remote.gid) == (lid, gid)


@pytest.mark.parametrize(
    ("name", "count", "first"),
    [
        ("perftest__deepops__1.txt", 1, "Conflicting CPU frequency values detected"),
        (
            "perftest__spiderpool__2.txt",
            7,
            "libibverbs: Warning: couldn't stat '/sys/class/infiniband/mlx5_4'.",
        ),
        ("perftest__magnate3__3.txt", 0, None),
    ],
)
def test_warnings_kept_apart(name: str, count: int, first: str | None) -> None:
    warnings = parse(read(name)).warnings
    assert (len(warnings), warnings[0][: len(first)] if first else None) == (count, first)


@pytest.mark.parametrize(
    "name",
    [
        "perftest__chestergillon__1.txt",
        "perftest__deepops__1.txt",
        "perftest__magnate3__1.txt",
        "perftest__magnate3__3.txt",
        "perftest__spiderpool__1.txt",
        "perftest__spiderpool__2.txt",
        "perftest__superbench__1.txt",
        "perftest__superbench__2.txt",
    ],
)
def test_completed_runs_are_ok(name: str) -> None:
    assert parse(read(name)).ok


def test_output_cut_before_results_is_a_failed_result() -> None:
    head = "".join(read("perftest__magnate3__3.txt").splitlines(keepends=True)[:21])
    report = parse(head)
    assert (report.ok, report.reason) == (False, "no result rows")


@pytest.mark.parametrize(
    "text", [read("ibstat__gpud__1.txt"), read("ethtool__terrencemiao__1.txt"), ""]
)
def test_not_perftest_raises_parse_error(text: str) -> None:
    with pytest.raises(ParseError, match="^perftest: "):
        parse(text)
