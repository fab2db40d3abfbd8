"""ibtracert parser, on every ibtracert fixture (captured from ibsim)."""

import pytest

from fabric.parsers import ParseError
from fabric.parsers.ibtracert import parse
from fabric.state import REPO_ROOT

FIXTURES = REPO_ROOT / "tests" / "fixtures"


def read(name: str) -> str:
    return (FIXTURES / name).read_text()


@pytest.mark.parametrize(
    ("name", "path"),
    [
        ("ibtracert__ibsimparse__1.txt", [(1, "leaf01", 1), (3, "leaf02", 3), (1, "gpu03", 1)]),
        ("ibtracert__ibsimparse__2.txt", [(1, "leaf01", 1), (4, "leaf02", 4), (2, "gpu04", 1)]),
        ("ibtracert__ibsimparse__3.txt", [(1, "leaf01", 1), (2, "gpu02", 1)]),
    ],
)
def test_hops(name: str, path: list[tuple[int, str, int]]) -> None:
    assert [(h.out_port, h.name, h.in_port) for h in parse(read(name)).hops] == path


@pytest.mark.parametrize(
    ("name", "source", "destination"),
    [
        (
            "ibtracert__ibsimparse__1.txt",
            ("gpu01", 1, "0x0000000000100000"),
            ("gpu03", 5, "0x0000000000100004"),
        ),
        (
            "ibtracert__ibsimparse__3.txt",
            ("gpu01", 1, "0x0000000000100000"),
            ("gpu02", 4, "0x0000000000100002"),
        ),
    ],
)
def test_path_ends(name: str, source: tuple[object, ...], destination: tuple[object, ...]) -> None:
    r = parse(read(name))
    assert r.source is not None and r.destination is not None
    assert (
        (r.source.name, r.source.lid, r.source.guid),
        (r.destination.name, r.destination.lid, r.destination.guid),
    ) == (source, destination)


def test_switches_on_path() -> None:
    assert parse(read("ibtracert__ibsimparse__2.txt")).switches == ["leaf01", "leaf02"]


def test_hop_guid_and_kind() -> None:
    hop = parse(read("ibtracert__ibsimparse__1.txt")).hops[1]
    assert (hop.kind, hop.guid, hop.lid) == ("switch", "0x0000000000200001", 3)


@pytest.mark.parametrize(
    ("name", "warning"),
    [
        (
            "ibtracert__ibsimparse__4.txt",
            "ibwarn: [10201] mad_rpc: _do_madrpc failed; dport (Lid 99)",
        ),
        (
            "ibtracert__ibsimparse__5.txt",
            "ibwarn: [11774] mad_rpc: _do_madrpc failed; dport (Lid 6)",
        ),
        (
            "ibtracert__ibsimparse__6.txt",
            "ibwarn: [10203] get_route: invalid MLID; must be 0xc000 or larger",
        ),
    ],
)
def test_no_route_is_a_failed_result(name: str, warning: str) -> None:
    r = parse(read(name))
    assert (r.ok, r.reason, r.warnings[0], r.hops) == (
        False,
        "ibtracert: iberror: failed: Failed to get route information",
        warning,
        [],
    )


@pytest.mark.parametrize(
    "text", [read("ibstat__gpud__1.txt"), read("ibping__ibsimparse__1.txt"), ""]
)
def test_not_ibtracert_raises_parse_error(text: str) -> None:
    with pytest.raises(ParseError, match="^ibtracert: "):
        parse(text)
