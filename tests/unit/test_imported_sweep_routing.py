"""Imported fabrics keep the sweep and the routing check (issue 42): every public
ibnetdiscover capture in tests/fixtures that imports gets the ``sweep`` and ``routing``
families in ``check --plan``, judged against ``fabric.cabling`` alone where the import wrote
no fat tree, or a reason naming what the capture lacks; the routing check's switch levels are
inferred from the cabling (hosts at the bottom, then the distance from them)."""

from __future__ import annotations

from collections import deque

import pytest

from fabric.graph import FabricGraph
from fabric.model.cluster import ClusterModel
from fabric.parsers.ibnetdiscover import parse as parse_ibnetdiscover
from fabric.parsers.ibroute import IbrouteReport, SwitchLft
from fabric.spec import ClusterSpec
from fabric.spec.load import spec_from_mapping
from fabric.state import REPO_ROOT
from fabric.topology.importer import CaptureError, import_fabric
from fabric.verify.plan import TABLE, CheckPlan, describe
from fabric.verify.routing import judge_routes, switch_levels, unjudged_levels

FIXTURES = REPO_ROOT / "tests" / "fixtures"
#: The public captures (SOURCES.md: taken from other projects, not captured here).
PUBLIC = (
    "ibtopotool__1",
    "ibtopotool__2",
    "ibtopotool__3",
    "ibtopotool__4",
    "superbench__1",
    "topograph__2",
)


def _discovered(capture: str) -> FabricGraph:
    return parse_ibnetdiscover((FIXTURES / f"ibnetdiscover__{capture}.txt").read_text())


def _imported(capture: str) -> ClusterSpec | None:
    """The spec ``railyard import`` writes for ``capture``, or None where it refuses it."""
    try:
        imported = import_fabric(_discovered(capture), "imported")
    except CaptureError:
        return None
    return spec_from_mapping(imported.spec)


def test_the_public_captures_that_import() -> None:
    """Which captures import is this test's premise: ibtopotool 1 names no host."""
    assert [c for c in PUBLIC if _imported(c) is not None] == [
        "ibtopotool__2",
        "ibtopotool__3",
        "ibtopotool__4",
        "superbench__1",
        "topograph__2",
    ]


@pytest.mark.parametrize("capture", [c for c in PUBLIC if c != "ibtopotool__1"])
def test_an_imported_capture_is_swept_and_routed_or_says_what_it_lacks(capture: str) -> None:
    spec = _imported(capture)
    assert spec is not None
    plan = describe(CheckPlan(spec=spec, hosts=list(spec.hosts)))
    sweep, routing = plan["sweep"], plan["routing"]
    if spec.fabric.cabling:
        assert "parameters" in sweep, sweep
        assert "parameters" in routing, routing
        # one swept cable per cable the capture holds: the cabling is the declared fabric
        assert len(sweep["parameters"]) == len(spec.fabric.cabling)  # type: ignore[arg-type]
    else:  # topograph 2: one GB200 HCA with no cable, no switch
        assert capture == "topograph__2"
        for family in (sweep, routing):
            reason = str(family["not_generated"])
            assert "fabric.cabling lists no cable" in reason, reason
            assert "no switch and no cable" in reason, reason


def test_no_fat_tree_the_cabling_alone_is_the_declared_fabric() -> None:
    """ibtopotool 3 (two leaves cabled to each other, a switch's ports looped back): the
    import writes no fat tree, and every cable is still declared, each HCA port on its
    switch port."""
    spec = _imported("ibtopotool__3")
    assert spec is not None and spec.fabric.topology is None and spec.fabric.cabling
    model = ClusterModel(spec)
    graph = model.expected_graph
    assert graph is not None and len(graph.links) == len(spec.fabric.cabling)
    cabled = {(p.host, p.device): (p.switch, p.switch_port) for p in model.hca_ports if p.switch}
    assert cabled[("r-ufm101", "HCA-1")] == ("switch-de779e", 2)
    assert cabled[("r-ufm216", "HCA-2")] == ("S-e41d2d030003e470", 34)


def test_a_switch_only_fabric_is_refused_and_says_why() -> None:
    """The one thing the levels cannot come from: no host's HCA cabled to any switch. The
    switch cables are still swept; the routing check says why it is not generated."""
    spec = _imported("ibtopotool__3")
    assert spec is not None
    switch_cables = [c for c in spec.fabric.cabling if c.a.switch and c.b.switch]
    only = spec.model_copy(
        update={"fabric": spec.fabric.model_copy(update={"cabling": switch_cables})}
    )
    # families one by one: the slurm family refuses a switch-only fabric with a reason
    plan = CheckPlan(spec=only, hosts=list(only.hosts))
    families = {f.name: f for f in TABLE.families}
    assert len(families["sweep"].values(plan)) == len(switch_cables)
    assert families["sweep"].why_not(plan) is None
    assert families["routing"].values(plan) == []
    why = str(families["routing"].why_not(plan))
    assert "no host's HCA is cabled to any of the declared fabric's 2 switches" in why, why
    graph = _discovered("ibtopotool__3")
    assert unjudged_levels(graph) is None
    assert "no switch" in str(unjudged_levels(FabricGraph(switches={}, cas=graph.cas, links=[])))


def _cabling_levels(capture: str) -> dict[str, int]:
    """Switch levels inferred from the imported spec's ``fabric.cabling`` alone."""
    spec = _imported(capture)
    assert spec is not None
    graph = ClusterModel(
        spec.model_copy(update={"fabric": spec.fabric.model_copy(update={"topology": None})})
    ).expected_graph
    assert graph is not None
    return switch_levels(graph)


def test_levels_of_a_three_level_capture() -> None:
    """superbench: five leaves with hosts, two L switches, one S switch above them; the S
    switch's SHARP aggregation node (a CA with no host) does not make it a leaf."""
    levels = _cabling_levels("superbench__1")
    assert sorted(levels.values()) == [0, 0, 0, 0, 0, 1, 1, 2]
    assert levels["rmd70-0101-0908-01ib1-A-S01"] == 2
    assert levels["rmd70-0101-0908-01ib1-A-L01"] == levels["rmd70-0101-0908-01ib1-A-L02"] == 1
    assert levels == switch_levels(_discovered("superbench__1"))


def test_levels_of_a_single_level_capture() -> None:
    """ibtopotool 3: both switches have hosts, cabled to each other: one level."""
    assert _cabling_levels("ibtopotool__3") == {"S-e41d2d030003e470": 0, "switch-de779e": 0}


def test_levels_of_a_rail_optimised_capture() -> None:
    """The quirks capture: a DGX's HCAs on two leaves (one per rail), one spine above."""
    discovered = _discovered("ibsim_quirks__1")
    leaves = discovered.host_leaves()
    assert len(leaves["a08-p1-dgx-04-c01"]) == 2  # rail-optimised: a host on two leaves
    assert _cabling_levels("ibsim_quirks__1") == {
        "A09-P1-IBLEAF-04-04": 0,
        "A09-P1-IBLEAF-04-05": 0,
        "A09-P1-IBSPINE-01": 1,
    }


def _minhop_tables(graph: FabricGraph) -> IbrouteReport:
    """Every switch's LFT as a min-hop engine writes it: a LID per switch and per HCA port,
    each switch forwarding towards the destination's switch over a shortest switch path."""
    lids: dict[tuple[str, int], int] = {}
    for guid in graph.switches:
        lids[(guid, 0)] = len(lids) + 1
    attached: dict[tuple[str, int], tuple[str, int]] = {}  # HCA port -> (switch, its port)
    ports: dict[str, dict[str, int]] = {g: {} for g in graph.switches}  # switch -> next -> port
    for lk in graph.links:
        for a, ap, b, bp in (
            (lk.a_guid, lk.a_port, lk.b_guid, lk.b_port),
            (lk.b_guid, lk.b_port, lk.a_guid, lk.a_port),
        ):
            if a in graph.switches and b in graph.switches and a != b:
                ports[a].setdefault(b, ap)
            elif a in graph.switches and b in graph.cas and graph.cas[b].host:
                attached[(b, bp)] = (a, ap)
                lids[(b, bp)] = len(lids) + 1
    tables = []
    for src in graph.switches:
        dist, first = {src: 0}, {src: 0}
        queue = deque([src])
        while queue:
            sw = queue.popleft()
            for nxt in sorted(ports[sw]):
                if nxt not in dist:
                    dist[nxt] = dist[sw] + 1
                    first[nxt] = ports[src][nxt] if sw == src else first[sw]
                    queue.append(nxt)
        lft = {lids[(src, 0)]: 0}
        for (node, port), lid in lids.items():
            if port == 0:
                if node != src and node in first:
                    lft[lid] = first[node]
                continue
            sw, sw_port = attached[(node, port)]
            if sw == src:
                lft[lid] = sw_port
            elif sw in first:
                lft[lid] = first[sw]
        tables.append(
            SwitchLft(
                guid=src,
                name=graph.switches[src].name,
                address=str(lids[(src, 0)]),
                lid_range=(1, len(lids)),
                ports=lft,
            )
        )
    return IbrouteReport(ok=True, switches=tables)


@pytest.mark.parametrize("capture", ["ibtopotool__3", "superbench__1", "ibtopotool__2"])
def test_min_hop_routes_pass_against_the_imported_cabling(capture: str) -> None:
    """The routing judge over the capture itself, declared by its cabling: min-hop routes are
    minimal up/down, across the single-level capture's leaf-to-leaf cable too."""
    spec = _imported(capture)
    assert spec is not None
    declared = ClusterModel(spec).expected_graph
    discovered = _discovered(capture)
    routes = judge_routes(_minhop_tables(discovered), discovered, declared)
    assert routes.pairs > 0
    assert routes.all_updown, (
        routes.broken,
        routes.not_updown,
        routes.not_minimal,
        routes.unrouted,
    )


def test_a_same_level_hop_the_cabling_does_not_have_is_still_not_updown() -> None:
    """The leaf-to-leaf cable is oriented only where the declared fabric has it: declared as
    two leaves under nothing (no cable between them), the same route is not up/down."""
    spec = _imported("ibtopotool__3")
    assert spec is not None
    cabling = [
        c
        for c in spec.fabric.cabling
        if not (c.a.switch and c.b.switch and c.a.switch != c.b.switch)
    ]
    apart = spec.model_copy(update={"fabric": spec.fabric.model_copy(update={"cabling": cabling})})
    declared = ClusterModel(apart).expected_graph
    discovered = _discovered("ibtopotool__3")
    routes = judge_routes(_minhop_tables(discovered), discovered, declared)
    assert routes.not_updown_pairs > 0
