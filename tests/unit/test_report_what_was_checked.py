"""What a check run did not look at, and numbers that differ for a reason (issue 45, items 3,
6 and 7): ``check --limit`` lists the families it left out; the picture greys what no check
named, has a legend (the ``P:Q`` labels, the colours, the master SM, the rates); a simulated
stack's report and ``lab status`` say why its rates and device names differ from the spec's;
``lab status`` shows a port's rate in Gb/s from its PortInfo, as plan and watch do.

Tool output is real (``tests/fixtures``: ibstat and smpquery captured on ibsim); the
inventory is the one the project builds from ``Pulumi.lab.yaml``.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from fabric.cli.check import left_out
from fabric.inventory import build_inventory
from fabric.lab.status import SIMULATED_NOTE as STATUS_NOTE
from fabric.lab.status import port_statuses
from fabric.parsers.ibstat import parse as parse_ibstat
from fabric.parsers.smpquery import parse_portinfo
from fabric.spec import load_spec
from fabric.state import REPO_ROOT
from fabric.topology.from_spec import graph_from_spec
from fabric.verify.picture import GREEN, GREY, RED
from fabric.verify.report import SIMULATED_NOTE, add_left_out, fabric_dot, markdown
from fabric.verify.results import CheckResult

FIXTURES = REPO_ROOT / "tests" / "fixtures"
LAB = load_spec(REPO_ROOT / "Pulumi.lab.yaml")


def _inventory() -> dict[str, object]:
    addresses = {h: f"198.18.0.{10 + i}" for i, h in enumerate(LAB.hosts)}
    return build_inventory(
        LAB, addresses, ssh_user="root", private_key_file="/k", known_hosts_file="/kh"
    )


def _passed(host: str) -> CheckResult:
    port = f"{host}/mlx5_0/1"
    return CheckResult(
        name="test_port_state_active",
        param=port,
        outcome="passed",
        subjects=[f"port:{port}", f"host:{host}"],
    )


# -- check --limit ----------------------------------------------------------------------------


def test_limit_to_one_node_lists_what_it_left_out_and_why() -> None:
    dropped = left_out(LAB, _inventory(), "gpu01")
    assert set(dropped) == {"ib", "sm", "ib_pairs", "sweep", "slurm", "slurm_topology"}
    assert dropped["sm"].startswith("not checked: test_sm_answers")
    assert (
        "test_host_sees_master (its 2 parameters need hosts outside --limit gpu01)"
        in (dropped["sm"])
    )
    assert "test_ibping" in dropped["ib_pairs"] and dropped["ib_pairs"].startswith("not checked")
    assert dropped["slurm"] == (
        "not checked: test_node_idle_or_allocated (its 8 parameters need hosts outside "
        "--limit gpu01)"
    )
    assert dropped["sweep"].startswith("checked in part: ") and "9 of its 18" in dropped["sweep"]


def test_a_limit_that_selects_everything_leaves_nothing_out() -> None:
    assert left_out(LAB, _inventory(), "all") == {}


def test_the_report_gets_a_left_out_section(tmp_path: Path) -> None:
    report = tmp_path / "report.md"
    report.write_text(markdown([_passed("gpu01")], {}, "railyard checks: lab"))
    add_left_out(report, left_out(LAB, _inventory(), "gpu01"))
    text = report.read_text()
    section = text.split("## Left out by --limit", 1)[1]
    assert "| slurm | not checked: test_node_idle_or_allocated" in section
    assert text.startswith("# railyard checks: lab: PASSED")


# -- the picture ------------------------------------------------------------------------------


def _colour(dot: str, node: str) -> str:
    line = next(x for x in dot.splitlines() if x.startswith(f'  "{node}" [label='))
    return line.split('color="', 1)[1].split('"', 1)[0]


def test_what_no_check_named_is_grey_and_dashed() -> None:
    graph = graph_from_spec(LAB)
    failed = CheckResult(
        name="test_port_state_active",
        param="gpu02/mlx5_0/1",
        outcome="failed",
        subjects=["port:gpu02/mlx5_0/1", "host:gpu02"],
    )
    dot = fabric_dot(graph, [_passed("gpu01"), failed], LAB)
    assert _colour(dot, "gpu01/mlx5_0") == GREEN
    assert _colour(dot, "gpu02/mlx5_0") == RED
    assert _colour(dot, "gpu03/mlx5_0") == GREY
    edges = {line for line in dot.splitlines() if " -- " in line}
    gpu01 = next(e for e in edges if '"gpu01/mlx5_0"' in e)
    gpu03 = next(e for e in edges if '"gpu03/mlx5_0"' in e)
    assert "dashed" not in gpu01 and f'color="{GREY}" style=dashed' in gpu03


def test_a_full_run_paints_every_checked_hca_green() -> None:
    graph = graph_from_spec(LAB)
    hosts = sorted({str(ca.host) for ca in graph.cas.values()})
    dot = fabric_dot(graph, [_passed(h) for h in hosts], LAB)
    assert len(hosts) == 10 and {_colour(dot, f"{h}/mlx5_0") for h in hosts} == {GREEN}


def test_the_legend_says_labels_colours_master_sm_rates_and_the_simulator(
    tmp_path: Path,
) -> None:
    dot = fabric_dot(graph_from_spec(LAB), [_passed("gpu01")], LAB)
    label = dot.splitlines()[1]
    for words in (
        "cable label P:Q: port P of the upper switch, port Q of the switch or HCA below",
        "grey: not checked",
        "master SM (double outline): sm1",
        "declared rates: 18 cables 4xNDR 400 Gb/s",
        "simulated fabric: ibsim's fastest rate is HDR",
    ):
        assert words in label, words
    sm1 = next(x for x in dot.splitlines() if x.startswith('  "sm1/mlx5_0"'))
    assert "peripheries=2" in sm1
    plain = subprocess.run(
        ["dot", "-Tplain"], input=dot, text=True, capture_output=True, check=True, timeout=60
    ).stdout
    assert "legend" not in plain  # a label of the graph, not a node among the fabric's


# -- numbers of a simulated stack ---------------------------------------------------------------


def test_a_simulated_stacks_report_says_why_its_numbers_differ() -> None:
    md = markdown([_passed("gpu01")], {}, "railyard checks: lab", "fabric.png", spec=LAB)
    assert f"Note: {SIMULATED_NOTE}." in md
    assert SIMULATED_NOTE == STATUS_NOTE
    real = load_spec(REPO_ROOT / "Pulumi.baremetal-ib.example.yaml")
    assert "Note:" not in markdown([_passed("gpu01")], {}, "railyard checks: bm", spec=real)


@pytest.mark.parametrize(
    ("portinfo", "rate", "shown"),
    [
        ("smpquery__ibsim_lab__1.txt", 200.0, "ibsim0=mlx5_0/1 Active LinkUp 4xHDR 200 Gb/s"),
        ("smpquery__ibsim_lab__3.txt", None, "ibsim0=mlx5_0/1 Active LinkUp"),
    ],
)
def test_status_shows_the_links_rate_in_gbps_not_ibstats(
    portinfo: str, rate: float | None, shown: str
) -> None:
    ibstat = parse_ibstat((FIXTURES / "ibstat__ibsimparse__1.txt").read_text())
    assert ibstat.devices[0].ports[0].rate_gbps == 104  # what ibstat says under ibsim
    info = parse_portinfo((FIXTURES / portinfo).read_text())
    (port,) = port_statuses(ibstat, {1: info}, "mlx5_0")
    assert port.rate_gbps == rate and port.shown() == shown
