"""The routing family against a real ibsim + OpenSM (``opensm -o -R ftree``), twice: a correct
16-host fat tree (ftree configures every switch; every route minimal up/down; no port over
1.5x its peers), and the same tree miscabled with a host on a spine, where ftree must fall back
to minhop: the engine verdict names the fallback with OpenSM's reason and the worst-loaded
port, and the balance check fails on it. The tools run through the check suite's runner (a
real testinfra host, umad2sim's environment), as on a lab node. Bounded: every tool run has a
timeout, and ibsim is stopped on exit."""

from __future__ import annotations

from pathlib import Path

import pytest
import testinfra

from fabric.lab.simfabric import SimFabric, fat_tree, host_on_spine
from fabric.topology.ibsim import ibsim_limits, render_net, sim_host, simulated
from fabric.verify.facts import keep_255
from fabric.verify.routing import judge_engine, judge_routes, read_fabric, read_log, read_tables
from fabric.verify.sweep import shell_runner

pytestmark = pytest.mark.integration

HOSTS = 16
IMBALANCE = 1.5


def _judge(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, miscabled: bool):  # type: ignore[no-untyped-def]
    graph = fat_tree(HOSTS)
    first = next(iter(graph.cas.values()))
    vantage = sim_host(first.host or "", first.device or "")
    cabled, moved = host_on_spine(graph) if miscabled else (graph, "")
    with SimFabric(
        render_net(cabled), tmp_path, vantage, ibsim_limits(cabled), ["-R", "ftree"]
    ) as fabric:
        for name, value in fabric.env(vantage).items():
            monkeypatch.setenv(name, value)
        local = testinfra.get_host("local://")

        def shell(command: str) -> tuple[int, str, str]:
            result = local.run(keep_255(command))
            return result.rc, result.stdout, result.stderr

        run = shell_runner(shell)
        routes = judge_routes(
            read_tables(run, timeout_s=30), read_fabric(run, timeout_s=30), simulated(graph)
        )
        log = read_log(run, str(tmp_path / "opensm.log"))
    return routes, judge_engine("ftree", log, routes), moved


def test_ftree_on_a_correct_fat_tree_passes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    routes, engine, _ = _judge(tmp_path, monkeypatch, miscabled=False)
    assert engine.ok and engine.engine == "ftree", engine.message
    assert (routes.hosts, routes.pairs) == (HOSTS, HOSTS * (HOSTS - 1))
    assert routes.all_updown, (routes.broken, routes.not_updown, routes.not_minimal)
    assert routes.over(IMBALANCE) == [], [p.line() for p in routes.over(IMBALANCE)]
    assert len(routes.switch_lids) == 6 and len(routes.hca_lids) == HOSTS


def test_a_miscabled_tree_names_the_fallback_and_the_worst_port(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    routes, engine, moved = _judge(tmp_path, monkeypatch, miscabled=True)
    assert moved.startswith("gpu16's cable moved from leaf04")
    assert not engine.ok
    assert engine.message.startswith("OpenSM fell back from ftree to minhop"), engine.message
    assert "Fabric topology is not a fat-tree" in engine.message
    worst = routes.worst
    assert worst is not None and worst.ratio > IMBALANCE, worst
    assert routes.over(IMBALANCE)[0] == worst
    assert f"{worst.switch} p{worst.port}" in worst.line()
