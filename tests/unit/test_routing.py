"""The routing family's judging (``fabric.verify.routing``) on real tables, fabrics and logs
captured from ibsim + OpenSM (``python -m bench.routing.capture_fixtures``): a 16-host fat tree
routed by ftree, and the same tree miscabled (gpu16 on spine01) where ftree fell back to minhop.
Broken routes are made by editing the parsed tables of the real capture."""

from __future__ import annotations

import pytest

from fabric.graph import Ca, FabricGraph, Link, Switch
from fabric.lab.simfabric import fat_tree
from fabric.parsers.ibnetdiscover import parse as parse_ibnetdiscover
from fabric.parsers.ibroute import IbrouteReport
from fabric.parsers.ibroute import parse as parse_ibroute
from fabric.parsers.opensm_log import parse as parse_log
from fabric.state import REPO_ROOT
from fabric.topology.ibsim import simulated
from fabric.verify.routing import host_switches, judge_engine, judge_routes, unjudged_levels

FIXTURES = REPO_ROOT / "tests" / "fixtures"


def read(name: str) -> str:
    return (FIXTURES / name).read_text()


@pytest.fixture(scope="module")
def declared():  # type: ignore[no-untyped-def]
    return simulated(fat_tree(16))


def _edit(report: IbrouteReport, edits: dict[tuple[str, int], int | None]) -> IbrouteReport:
    """The tables with some (switch, LID) entries set to another port (None: removed)."""
    switches = []
    for t in report.switches:
        ports = dict(t.ports)
        for (name, lid), port in edits.items():
            if name == t.name:
                if port is None:
                    ports.pop(lid, None)
                else:
                    ports[lid] = port
        switches.append(t.model_copy(update={"ports": ports}))
    return report.model_copy(update={"switches": switches})


def test_ftree_on_a_correct_fat_tree_passes(declared) -> None:  # type: ignore[no-untyped-def]
    tables = parse_ibroute(read("ibroute__ibsim_routing__1.txt"))
    fabric = parse_ibnetdiscover(read("routing/ok_ibnetdiscover.txt"))
    routes = judge_routes(tables, fabric, declared)
    assert (routes.hosts, routes.lids, routes.pairs) == (16, 16, 16 * 15)
    assert routes.all_updown and routes.missing_tables == []
    assert routes.over(1.5) == []
    worst = routes.worst
    assert worst is not None and worst.ratio == 1.0  # ftree spreads evenly
    # every leaf up-link and spine down-link is judged (4 leaves x 4, 2 spines x 8)
    assert len(routes.loads) == 32
    engine = judge_engine("ftree", parse_log(read("opensm_log__ibsim_routing__1.txt")), routes)
    assert engine.ok and engine.engine == "ftree", engine.message


def test_the_fallback_and_the_worst_port_are_named(declared) -> None:  # type: ignore[no-untyped-def]
    tables = parse_ibroute(read("ibroute__ibsim_routing__2.txt"))
    fabric = parse_ibnetdiscover(read("routing/miscabled_ibnetdiscover.txt"))
    routes = judge_routes(tables, fabric, declared)
    engine = judge_engine("ftree", parse_log(read("opensm_log__ibsim_routing__2.txt")), routes)
    assert not engine.ok
    assert engine.message.startswith("OpenSM fell back from ftree to minhop")
    assert "Fabric topology is not a fat-tree" in engine.message
    worst = routes.worst
    assert worst is not None and worst.ratio > 1.5
    assert worst.line().startswith(f"{worst.switch} p{worst.port} (")
    assert worst in routes.over(1.5)


def test_without_a_log_the_tables_decide(declared) -> None:  # type: ignore[no-untyped-def]
    tables = parse_ibroute(read("ibroute__ibsim_routing__1.txt"))
    fabric = parse_ibnetdiscover(read("routing/ok_ibnetdiscover.txt"))
    engine = judge_engine("ftree", None, judge_routes(tables, fabric, declared))
    assert engine.ok and engine.source == "lft"


def _lids(tables: IbrouteReport) -> dict[str, int]:
    """Host -> its LID, from the tool's own destination names (``dump_fts`` without ``-n``,
    the same fabric)."""
    del tables
    t = parse_ibroute(read("ibroute__ibsim_routing__5.txt")).switches[0]
    return {d[2].split()[0]: lid for lid, d in t.destinations.items() if d[0] == "Channel Adapter"}


def _port_to(fabric, switch: str, other: str) -> int:  # type: ignore[no-untyped-def]
    """A port of ``switch`` cabled to ``other`` (both switch names)."""
    by = fabric.switch_by_name
    for link in fabric.links:
        ends = {(link.a_guid, link.a_port), (link.b_guid, link.b_port)}
        for (g, p), (h, _) in (sorted(ends), sorted(ends)[::-1]):
            if g == by[switch].guid and h == by[other].guid:
                return p
    raise AssertionError(f"no cable {switch}-{other}")


def test_a_route_down_then_up_is_named(declared) -> None:  # type: ignore[no-untyped-def]
    tables = parse_ibroute(read("ibroute__ibsim_routing__1.txt"))
    fabric = parse_ibnetdiscover(read("routing/ok_ibnetdiscover.txt"))
    lid = _lids(tables)["gpu16"]  # on leaf04
    edits = {
        ("leaf01", lid): _port_to(fabric, "leaf01", "spine01"),
        ("spine01", lid): _port_to(fabric, "spine01", "leaf02"),
        ("leaf02", lid): _port_to(fabric, "leaf02", "spine02"),
    }
    routes = judge_routes(_edit(tables, edits), fabric, declared)
    assert routes.not_updown_pairs > 0 and not routes.all_updown
    assert any(
        e.startswith("leaf01 -> gpu16/mlx5_0") and "not up/down: leaf01 p" in e
        for e in routes.not_updown
    ), routes.not_updown


def test_a_loop_and_a_missing_entry_are_broken_routes(declared) -> None:  # type: ignore[no-untyped-def]
    tables = parse_ibroute(read("ibroute__ibsim_routing__1.txt"))
    fabric = parse_ibnetdiscover(read("routing/ok_ibnetdiscover.txt"))
    lids = _lids(tables)
    edits: dict[tuple[str, int], int | None] = {
        ("spine01", lids["gpu16"]): _port_to(fabric, "spine01", "leaf02"),
        ("spine02", lids["gpu16"]): _port_to(fabric, "spine02", "leaf02"),
        ("leaf02", lids["gpu16"]): _port_to(fabric, "leaf02", "spine01"),
    }
    for leaf in ("leaf01", "leaf02", "leaf03"):
        edits[(leaf, lids["gpu15"])] = None
    routes = judge_routes(_edit(tables, edits), fabric, declared)
    assert routes.broken_pairs >= 12 + 12  # 12 sources off leaf04, for each of the two hosts
    assert any("loops" in e for e in routes.broken)
    assert any(f"has no entry for LID {lids['gpu15']}" in e for e in routes.broken)


def test_a_host_no_switch_delivers_to_is_unrouted(declared) -> None:  # type: ignore[no-untyped-def]
    tables = parse_ibroute(read("ibroute__ibsim_routing__1.txt"))
    fabric = parse_ibnetdiscover(read("routing/ok_ibnetdiscover.txt"))
    bare = tables.model_copy(
        update={
            "switches": [
                t.model_copy(
                    update={
                        "destinations": {},
                        "ports": {k: v for k, v in t.ports.items() if k != _lids(tables)["gpu05"]},
                    }
                )
                for t in tables.switches
            ]
        }
    )
    routes = judge_routes(bare, fabric, declared)
    assert routes.unrouted == ["gpu05/mlx5_0"]
    assert not routes.all_updown


def test_a_missing_table_is_named(declared) -> None:  # type: ignore[no-untyped-def]
    tables = parse_ibroute(read("ibroute__ibsim_routing__1.txt"))
    fabric = parse_ibnetdiscover(read("routing/ok_ibnetdiscover.txt"))
    fewer = tables.model_copy(
        update={"switches": [t for t in tables.switches if t.name != "spine02"]}
    )
    routes = judge_routes(fewer, fabric, declared)
    assert routes.missing_tables == ["spine02"]
    assert routes.broken_pairs > 0


def test_a_port_within_whole_entries_of_the_mean_is_not_over() -> None:
    """5 hosts per leaf over 4 up-links: one port gets 2 of 5 destinations (1.6x the mean),
    which no destination-based table can spread better; 3 of them would be over."""
    from fabric.verify.routing import PortLoad

    even = PortLoad("leaf01", 61, "spine01", "up", 10, 6.25, 5)
    assert even.ratio == 1.6 and even.floor == 10 and not even.over(1.5)
    lumpy = PortLoad("leaf01", 61, "spine01", "up", 15, 6.25, 5)
    assert lumpy.over(1.5)
    assert not lumpy.over(2.5)


def test_another_engine_without_a_failure_is_not_called_a_fallback(declared) -> None:  # type: ignore[no-untyped-def]
    engine = judge_engine("updn", parse_log(read("opensm_log__ibsim_routing__1.txt")))
    assert not engine.ok
    assert engine.message.startswith("OpenSM routes with ftree, not the declared updn (log line")


def test_a_declared_chain_takes_any_engine_of_it() -> None:
    """OpenSM's ``routing_engine ftree,updn`` routes with the first engine that succeeds:
    ftree in the capture is what the chain declares; a chain without it is not."""
    log = parse_log(read("opensm_log__ibsim_routing__1.txt"))
    assert judge_engine("ftree,updn", log).ok
    assert judge_engine("updn,ftree", log).ok
    other = judge_engine("updn,minhop", log)
    assert not other.ok
    assert "OpenSM routes with ftree, not the declared updn,minhop" in other.message


def test_the_bottom_level_is_the_switches_with_a_hosts_hca() -> None:
    """A CA with no host or not an HCA (a SHARP aggregation node) makes no leaf, whichever end
    of the link it is; ``unjudged_levels`` agrees with ``host_switches``."""
    switches = {g: Switch(g, g.lower(), g.lower(), 8) for g in ("L1", "L2", "L3", "S1")}
    cas = {
        "H1": Ca("H1", "gpu01", "mlx5_0", "", 1),
        "H2": Ca("H2", None, "mlx5_0", "", 1),
        "H3": Ca("H3", "agg01", "agg", "", 1, "aggregation"),
    }

    def link(a: str, b: str) -> Link:
        return Link(a, 1, b, 2, "4X", "HDR", 200.0)

    graph = FabricGraph(
        switches=switches,
        cas=cas,
        links=[link("L2", "H2"), link("H3", "L3"), link("L1", "S1"), link("H1", "L1")],
    )
    assert host_switches(graph) == {"L1"}
    assert unjudged_levels(graph) is None
    no_host = FabricGraph(switches=switches, cas=cas, links=graph.links[:3])
    assert host_switches(no_host) == set()
    assert "no host's HCA is cabled to any of the declared fabric's 4" in str(
        unjudged_levels(no_host)
    )
