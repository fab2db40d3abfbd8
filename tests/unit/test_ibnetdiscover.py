"""fabric.parsers.ibnetdiscover on real ibnetdiscover output (tests/fixtures/SOURCES.md)."""

from __future__ import annotations

import pytest

from fabric.graph import FabricGraph, GraphError
from fabric.parsers.common import ParseError
from fabric.parsers.ibnetdiscover import IbnetdiscoverError, parse
from fabric.state import REPO_ROOT

FIXTURES = REPO_ROOT / "tests" / "fixtures"


def load(name: str) -> FabricGraph:
    return parse((FIXTURES / f"ibnetdiscover__{name}.txt").read_text())


# (fixture, switches, CAs, links): counted by hand from each file.
COUNTS = [
    ("ibtopotool__1", 2, 4, 7),
    ("ibtopotool__2", 1, 2, 2),
    ("ibtopotool__3", 2, 6, 10),
    ("ibtopotool__4", 1, 1, 1),
    ("superbench__1", 8, 11, 18),
    ("topograph__2", 0, 1, 0),
    ("ibsim_lab__1", 3, 10, 18),
    ("ibsim_lab__2", 3, 9, 18),
    ("ibsim_quirks__1", 3, 8, 12),
    ("ibsim_quirks__2", 0, 1, 0),
]


@pytest.mark.parametrize(("name", "switches", "cas", "links"), COUNTS)
def test_node_and_link_counts(name: str, switches: int, cas: int, links: int) -> None:
    graph = load(name)
    assert (len(graph.switches), len(graph.cas), len(graph.links)) == (switches, cas, links)


@pytest.mark.parametrize("name", [c[0] for c in COUNTS])
def test_every_link_end_is_a_known_node(name: str) -> None:
    graph = load(name)
    nodes = graph.switches.keys() | graph.cas.keys()
    assert all(link.a_guid in nodes and link.b_guid in nodes for link in graph.links)


def test_host_is_the_first_word_of_the_description() -> None:
    graph = load("ibtopotool__3")
    ca = graph.cas["0x0002c903003421b0"]
    assert (ca.host, ca.device) == ("r-ufm111", "HCA-1")


def test_unset_description_keeps_guid_without_host() -> None:
    ca = load("ibsim_quirks__1").cas["0xb8e92403009cb000"]
    assert (ca.host, ca.device, ca.description) == (
        None,
        None,
        "MT4129 ConnectX7 Mellanox Technologies",
    )


def test_old_infinihost_default_description_is_unset() -> None:
    assert all(ca.host is None for ca in load("ibtopotool__1").cas.values())


def test_sharp_aggregation_node() -> None:
    kinds = {ca.description: ca.kind for ca in load("ibsim_quirks__1").cas.values()}
    assert kinds["Mellanox Technologies Aggregation Node"] == "aggregation"


def test_mf0_switch_names() -> None:
    names = {sw.name for sw in load("ibsim_quirks__1").switches.values()}
    assert names == {"A09-P1-IBLEAF-04-04", "A09-P1-IBLEAF-04-05", "A09-P1-IBSPINE-01"}


def test_director_cards_get_distinct_names() -> None:
    names = {sw.name for sw in load("superbench__1").switches.values()}
    assert {
        "rmd70-0101-0908-01ib1-A-S01",
        "rmd70-0101-0908-01ib1-A-L01",
        "rmd70-0101-0908-01ib1-A-L02",
    } <= names


def test_enhanced_port_0_switch_description() -> None:
    sw = load("ibtopotool__3").switches["0xf4521403005764b0"]
    assert (sw.name, sw.ports) == ("switch-de779e", 12)


def test_host_with_hcas_on_two_leaves() -> None:
    leaves = load("ibsim_quirks__1").host_leaves()
    assert sorted(leaves["a08-p1-dgx-04-c01"]) == ["A09-P1-IBLEAF-04-04", "A09-P1-IBLEAF-04-05"]


def test_two_port_hca_links_both_ports() -> None:
    graph = load("ibsim_quirks__1")
    ports = sorted(
        (link.b_port if link.b_guid == "0x0002c903000e1000" else link.a_port)
        for link in graph.links
        if "0x0002c903000e1000" in (link.a_guid, link.b_guid)
    )
    assert graph.cas["0x0002c903000e1000"].ports == 2 and ports == [1, 2]


def test_mixed_speeds_and_widths() -> None:
    seen = {(link.width, link.speed, link.rate_gbps) for link in load("ibsim_quirks__1").links}
    assert {
        ("4x", "HDR", 200.0),
        ("4x", "EDR", 100.0),
        ("1x", "HDR", 50.0),
        ("4x", "QDR", 40.0),
    } <= seen


def test_degraded_width_in_old_fabric() -> None:
    assert sum(link.width == "1x" for link in load("ibtopotool__1").links) == 2


def test_self_looped_switch_ports_are_links() -> None:
    graph = load("ibtopotool__3")
    loops = [link for link in graph.links if link.a_guid == link.b_guid]
    assert sorted((link.a_port, link.b_port) for link in loops) == [(1, 2), (19, 21), (29, 30)]


def test_stderr_line_becomes_a_warning() -> None:
    warnings = load("ibtopotool__3").warnings
    assert len(warnings) == 1 and "Connection timed out" in warnings[0]


def test_full_suffixes_are_ignored() -> None:
    links = load("superbench__1").links
    assert {(link.width, link.speed) for link in links} == {("4x", "HDR")}


def test_isolated_ca() -> None:
    graph = load("topograph__2")
    assert list(graph.cas.values())[0].host == "dgx-gb200-n01-c1" and graph.links == []


def test_missing_hca_is_absent() -> None:
    hosts = {ca.host for ca in load("ibsim_lab__2").cas.values()}
    assert "gpu07" not in hosts and "gpu06" in hosts


def test_malformed_port_line_names_its_line() -> None:
    lines = (FIXTURES / "ibnetdiscover__ibtopotool__2.txt").read_text().splitlines()
    lines[10] = lines[10].replace("[1]", "[x]", 1)
    with pytest.raises(IbnetdiscoverError, match=r"line 11: expected a port line"):
        parse("\n".join(lines))


def test_unknown_line_names_its_line() -> None:
    text = (FIXTURES / "ibnetdiscover__ibtopotool__2.txt").read_text() + "hello world\n"
    with pytest.raises(ParseError, match=r"line 27"):
        parse(text)


def test_ports_report_format_is_rejected_with_a_line() -> None:
    with pytest.raises(IbnetdiscoverError, match=r"line 1: .* rerun ibnetdiscover without -p"):
        parse((FIXTURES / "ibnetdiscover_p__ibsim_quirks__1.txt").read_text())


def test_nodes_only_seen_from_port_lines_are_added() -> None:
    ca = load("superbench__1").cas["0x0ff08c43213b3f38"]
    assert (ca.kind, ca.description) == ("aggregation", "Mellanox Technologies Aggregation Node")


def test_model_dump_is_json_ready() -> None:
    dumped = load("ibsim_quirks__2").model_dump(mode="json")
    assert dumped["cas"]["0xb8e92403009cc000"]["host"] == "lonely" and dumped["links"] == []


def test_description_with_double_quotes_parses_like_any_other() -> None:
    text = (FIXTURES / "ibnetdiscover__ibtopotool__2.txt").read_text()
    plain = parse(text)
    quoted = parse(text.replace('"compute-00-00 HCA-1"', '"compute-00-00 "HCA-1""'))
    assert len(quoted.links) == len(plain.links) == 2
    assert {(k.width, k.speed) for k in quoted.links} == {(k.width, k.speed) for k in plain.links}


def test_malformed_tail_of_a_port_line_names_its_line() -> None:
    lines = (FIXTURES / "ibnetdiscover__ibsim_lab__1.txt").read_text().splitlines()
    lines[10] = lines[10].replace("lid 4 4xHDR", "lid x 4xHDR")
    with pytest.raises(IbnetdiscoverError, match=r"line 11: expected a port line"):
        parse("\n".join(lines))


def test_unknown_link_speed_names_its_line() -> None:
    lines = (FIXTURES / "ibnetdiscover__ibsim_lab__1.txt").read_text().splitlines()
    lines[10] = lines[10].replace("4xHDR", "4xZZZ")
    with pytest.raises(IbnetdiscoverError, match=r"line 11: expected a known link width and speed"):
        parse("\n".join(lines))


def test_garbage_between_port_fields_names_its_line() -> None:
    lines = (FIXTURES / "ibnetdiscover__ibsim_lab__1.txt").read_text().splitlines()
    lines[10] = lines[10].replace("[1](2c90302000001)", "[1](2c90302000001)zz")
    with pytest.raises(IbnetdiscoverError, match=r"line 11: expected a port line"):
        parse("\n".join(lines))


@pytest.mark.parametrize("name", [name for name, *_ in COUNTS])
def test_bulk_path_builds_the_same_graph_as_the_line_parser(name: str) -> None:
    from fabric.parsers.ibnetdiscover.lines import _parse
    from fabric.topology.slurm import tree_conf

    def conf(graph: FabricGraph) -> str:
        try:
            return tree_conf(graph)
        except GraphError as err:  # no host cabled to a switch: no topology.conf to give Slurm
            return str(err)

    text = (FIXTURES / f"ibnetdiscover__{name}.txt").read_text()
    graph = parse(text)
    fast_conf = conf(graph)  # from the switch ends, before links are built
    reference = _parse(text)
    assert graph == reference
    assert fast_conf == conf(reference)


def test_slower_end_is_kept_by_the_bulk_path_too() -> None:
    lines = (FIXTURES / "ibnetdiscover__ibsim_lab__1.txt").read_text().splitlines()
    ca_side = next(
        i for i, line in enumerate(lines) if line.startswith("[1](") and '"leaf01"' in line
    )
    lines[ca_side] = lines[ca_side].replace("4xHDR", "1xSDR")
    graph = parse("\n".join(lines))
    assert sorted((k.width, k.speed) for k in graph.links).count(("1x", "SDR")) == 1


def test_many_malformed_tails_fail_fast() -> None:
    lines = (FIXTURES / "ibnetdiscover__ibsim_lab__1.txt").read_text().splitlines()
    port = lines[10]
    assert "lid 4 4xHDR" in port
    ports = [port.replace("lid 4 4xHDR", f"lid {n} 4xHDR s=4 w=2 v=4 e=4") for n in range(40)]
    bad = lines[:10] + ports + [port.replace("lid 4 4xHDR", "lid x 4xHDR")]
    with pytest.raises(IbnetdiscoverError, match=r"line 51: expected a port line"):
        parse("\n".join(bad))  # the tail validator backtracked exponentially here (14 tails: 2.6 s)


# --- input a user can trust: empty, cut off (issue 16) ---------------------------------------


def _both(text: str) -> FabricGraph | str:
    """The bulk path's result and the line parser's must be the same graph, or the same error."""
    from fabric.parsers.ibnetdiscover.fast import _parse_fast
    from fabric.parsers.ibnetdiscover.lines import _parse

    try:
        reference: FabricGraph | str = _parse(text)
    except IbnetdiscoverError as err:
        reference = str(err)
    bulk = _parse_fast(text)
    assert bulk is None or bulk == reference
    try:
        assert parse(text) == reference
    except IbnetdiscoverError as err:
        assert str(err) == reference
    return reference


@pytest.mark.parametrize("text", ["", "\n\n", "#\n# Topology file: generated on x\n#\n\n"])
def test_empty_or_comments_only_is_refused(text: str) -> None:
    result = _both(text)
    assert isinstance(result, str) and "end of input: expected at least one node record" in result


def test_a_record_cut_short_is_named() -> None:
    """Cut after leaf02's first port line (line 40): spine01 lists 4 links to leaf02."""
    lines = (FIXTURES / "ibnetdiscover__ibsim_lab__1.txt").read_text().split("\n")
    assert lines[38].startswith('Switch\t64 "S-0002c90301000001"')
    result = _both("\n".join(lines[:40]) + "\n")
    assert isinstance(result, str)
    assert result.startswith('ibnetdiscover: line 39: expected all port lines of "leaf02"')
    assert "the other ends list 4 links to it, its record 1" in result
    assert "cut off" in result


def test_a_switch_without_a_record_is_named() -> None:
    """Cut inside leaf01's record: its port line names spine01, which never gets a record."""
    lines = (FIXTURES / "ibnetdiscover__ibsim_lab__1.txt").read_text().split("\n")
    result = _both("\n".join(lines[:20]) + "\n")
    assert isinstance(result, str)
    assert 'expected a record for "spine01" (S-0002c90301000002)' in result and "line 16" in result


def test_every_cut_of_every_fixture_is_refused_or_whole() -> None:
    """Cut each fixture after every line: the bulk path and the line parser agree, and a cut the
    text shows (a record short of what its peers list, a node named but not recorded while the
    capture ends in its switch records) is refused; what is accepted keeps every link between
    the switches it holds. The one cut no count can see: a record cut right after its header
    whose missing lines were all cabled to itself (a looped switch port, as ibtopotool__3
    has), since the lines naming it were its own."""
    refused = accepted = 0
    for path in sorted(FIXTURES.glob("ibnetdiscover__*.txt")):
        lines = path.read_text().split("\n")
        whole = parse(path.read_text())
        for n in range(len(lines)):
            result = _both("\n".join(lines[:n]) + "\n")
            if isinstance(result, str):
                refused += 1
                continue
            accepted += 1
            cut_switches = set(result.switches)
            # every switch's links are the whole fabric's (a cut never silently drops one)
            for link in whole.links:
                if link.a_guid in cut_switches and link.b_guid in cut_switches:
                    assert link in result.links or link.a_guid == link.b_guid, (path, n)
    assert refused > 400 and accepted > 250, (refused, accepted)


def test_a_cut_capture_followed_by_a_whole_one_is_refused() -> None:
    """Captures of several planes in one file: the last record of each capture is checked."""
    first = (FIXTURES / "ibnetdiscover__ibsim_lab__1.txt").read_text().split("\n")
    second = (FIXTURES / "ibnetdiscover__ibtopotool__2.txt").read_text()
    assert isinstance(_both("\n".join(first) + "\n" + second), FabricGraph)
    result = _both("\n".join(first[:40]) + "\n" + second)
    assert isinstance(result, str) and 'all port lines of "leaf02"' in result


def test_a_ca_without_a_record_is_a_warning_in_a_trimmed_capture() -> None:
    graph = load("superbench__1")
    assert any("H-0ff08c43213b3f38" in w and "no record" in w for w in graph.warnings)
