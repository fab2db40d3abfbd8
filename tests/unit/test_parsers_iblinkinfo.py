"""iblinkinfo parser, on every iblinkinfo fixture."""

import pytest

from fabric.parsers import ParseError
from fabric.parsers.iblinkinfo import parse
from fabric.state import REPO_ROOT

FIXTURES = REPO_ROOT / "tests" / "fixtures"


def read(name: str) -> str:
    return (FIXTURES / name).read_text()


@pytest.mark.parametrize(
    ("name", "nodes"),
    [
        ("iblinkinfo__magnate3__1.txt", [("switch", "Quantum Mellanox Technologies", 41)]),
        (
            "iblinkinfo__ibsimparse__1.txt",
            [
                ("ca", "gpu04", 1),
                ("ca", "gpu03", 1),
                ("switch", "leaf02", 8),
                ("ca", "gpu01", 1),
                ("switch", "leaf01", 8),
                ("ca", "gpu02", 1),
            ],
        ),
        (
            "iblinkinfo__ibsimparse__2.txt",
            [
                (None, "gpu04", 1),
                (None, "gpu03", 1),
                (None, "leaf02", 8),
                (None, "gpu01", 1),
                (None, "leaf01", 8),
                (None, "gpu02", 1),
            ],
        ),
        (
            "iblinkinfo__ibsimparse__3.txt",
            [
                ("ca", "gpu03", 1),
                ("switch", "leaf02", 8),
                ("ca", "gpu02", 1),
                ("switch", "leaf01", 8),
                ("ca", "gpu01", 1),
            ],
        ),
        ("iblinkinfo__ibsimparse__4.txt", [("switch", "leaf02", 8), ("switch", "leaf01", 8)]),
        (
            "iblinkinfo__ibsimparse__5.txt",
            [
                ("ca", "Hca4", 1),
                ("ca", "Hca2", 1),
                ("switch", "Switch2", 8),
                ("ca", "Hca3", 1),
                ("switch", "Switch1", 8),
                ("ca", "Hca1", 1),
            ],
        ),
    ],
)
def test_nodes_in_order(name: str, nodes: list[tuple[str | None, str, int]]) -> None:
    report = parse(read(name))
    assert [(n.kind, n.name, len(n.links)) for n in report.nodes] == nodes


@pytest.mark.parametrize(
    ("name", "node", "port", "expected"),
    [
        (
            "iblinkinfo__magnate3__1.txt",
            "Quantum Mellanox Technologies",
            21,
            {
                "width": "4X",
                "lane_gbps": 25.78125,
                "speed": "EDR",
                "state": "Active",
                "peer_lid": 40,
                "peer_port": 1,
                "peer_description": "node3 HCA-2",
                "note": "Could be 53.125 Gbps",
            },
        ),
        (
            "iblinkinfo__magnate3__1.txt",
            "Quantum Mellanox Technologies",
            40,
            {
                "speed": "HDR",
                "peer_lid": 4,
                "peer_port": 40,
                "peer_description": "MF0;d32-03-1:MQM8700/U1",
            },
        ),
        (
            "iblinkinfo__magnate3__1.txt",
            "Quantum Mellanox Technologies",
            1,
            {
                "state": "Down",
                "physical_state": "Polling",
                "width": None,
                "peer_lid": None,
                "peer_description": None,
            },
        ),
        (
            "iblinkinfo__ibsimparse__1.txt",
            "leaf02",
            2,
            {"width": "1X", "speed": "HDR", "peer_lid": 6, "peer_description": "gpu04"},
        ),
        (
            "iblinkinfo__ibsimparse__1.txt",
            "leaf01",
            4,
            {
                "width": "4X",
                "speed": "EDR",
                "peer_port": 4,
                "note": "Could be 12X Could be 53.125 Gbps",
            },
        ),
        (
            "iblinkinfo__ibsimparse__1.txt",
            "gpu04",
            1,
            {"lid": 6, "port_guid": "0x0000000000100007", "peer_description": "leaf02"},
        ),
        (
            "iblinkinfo__ibsimparse__2.txt",
            "leaf02",
            1,
            {"peer_guid": "0x0000000000100005", "peer_lid": 5, "speed": "HDR"},
        ),
        (
            "iblinkinfo__ibsimparse__3.txt",
            "leaf02",
            2,
            {"state": "Down", "physical_state": "Polling"},
        ),
        (
            "iblinkinfo__ibsimparse__4.txt",
            "leaf01",
            3,
            {"peer_description": "leaf02", "peer_lid": 3},
        ),
        (
            "iblinkinfo__ibsimparse__5.txt",
            "Switch1",
            1,
            {"lane_gbps": 2.5, "speed": "SDR", "note": "Could be 12X Could be 10.0 Gbps"},
        ),
    ],
)
def test_link_fields(name: str, node: str, port: int, expected: dict[str, object]) -> None:
    found = next(n for n in parse(read(name)).nodes if n.name == node)
    link = next(link for link in found.links if link.port == port).model_dump()
    assert {key: link[key] for key in expected} == expected


@pytest.mark.parametrize(
    ("name", "node", "guid"),
    [
        ("iblinkinfo__magnate3__1.txt", "Quantum Mellanox Technologies", "0x08c0eb0300add04e"),
        ("iblinkinfo__ibsimparse__2.txt", "gpu01", "0x0000000000100001"),
    ],
)
def test_node_guid(name: str, node: str, guid: str) -> None:
    assert next(n for n in parse(read(name)).nodes if n.name == node).guid == guid


@pytest.mark.parametrize(
    "text", [read("ibstat__gpud__1.txt"), read("ibtracert__ibsimparse__1.txt"), ""]
)
def test_not_iblinkinfo_raises_parse_error(text: str) -> None:
    with pytest.raises(ParseError, match="^iblinkinfo: "):
        parse(text)
