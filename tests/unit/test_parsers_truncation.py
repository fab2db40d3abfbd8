"""Output cut at a line boundary is caught wherever the format makes it detectable: a count
that promises more, a block that ends early, a line the tool always prints. The whole capture
is ok; the same capture cut short keeps what parsed and reports ``ok=False`` with the reason.
(A cut in the middle of a line is caught for every tool by ``parse``: see test_cli_bad_input.)
"""

from __future__ import annotations

import pytest

from fabric.parsers import PARSERS
from fabric.state import REPO_ROOT

FIXTURES = REPO_ROOT / "tests" / "fixtures"


def _until(text: str, marker: str, nth: int = 1) -> str:
    """``text``'s whole lines before the ``nth`` line that starts with ``marker`` (stripped)."""
    kept: list[str] = []
    for line in text.splitlines(keepends=True):
        if line.strip().startswith(marker):
            nth -= 1
            if nth == 0:
                return "".join(kept)
        kept.append(line)
    raise AssertionError(f"no line {marker!r}")


CASES = [
    # tool, capture, cut before the nth line starting with marker, reason, what is kept
    (
        "ibstat",
        "ibstat__gpud__1.txt",
        ("Port 1:", 9),
        "ibstat: CA 'mlx5_bond_0' lists 0 of its 1 ports: the output was cut short",
        lambda r: len(r.devices) == 9 and len(r.devices[0].ports) == 1,
    ),
    (
        "ibv_devinfo",
        "ibv_devinfo__chestergillon__1.txt",
        ("port:", 2),
        "ibv_devinfo: mlx4_0 lists 1 of its 2 ports: the output was cut short",
        lambda r: len(r.devices[0].ports) == 1,
    ),
    (
        "ethtool",
        "ethtool__terrencemiao__1.txt",
        ("Link detected:", 1),
        "ethtool: no 'Link detected:' line (ethtool prints it last): the output was cut short",
        lambda r: r.interface and r.speed_mbps,
    ),
    (
        "smpquery",
        "smpquery__ibsim_lab__1.txt",
        ("NeighborMTU:", 1),
        "smpquery: no NeighborMTU line (PortInfo always has one): the output was cut short",
        lambda r: r.lid == 4 and r.neighbor_mtu is None,
    ),
    (
        "ibdiagnet",
        "ibdiagnet__openairecipe__2.txt",
        ("IB Aggregation Nodes", 1),
        "ibdiagnet: the Fabric Summary has no 'IB Routers' line: the output was cut short",
        lambda r: r.channel_adapters == 16,
    ),
    (
        "perftest",
        "perftest__chestergillon__1.txt",
        ("8388608", 1),
        "perftest: the results table has no closing '----' line: the output was cut short",
        lambda r: len(r.runs[0].bw) == 22,
    ),
    (
        "ibdiagnet",
        "ibdiagnet__magnate3__1.txt",
        ("Port=0", 1),
        "ibdiagnet: 'SM - master' lists no port: the output was cut short",
        lambda r: r.subnet_managers == [],
    ),
]


@pytest.mark.parametrize(("tool", "capture", "cut", "reason", "kept"), CASES)
def test_cut_at_a_line_is_not_ok(
    tool: str, capture: str, cut: tuple[str, int], reason: str, kept: object
) -> None:
    text = (FIXTURES / capture).read_text()
    assert PARSERS[tool](text).ok is True  # the whole capture
    result = PARSERS[tool](_until(text, *cut))
    assert (result.ok, result.reason) == (False, reason)
    assert kept(result)  # type: ignore[operator]


@pytest.mark.parametrize(
    ("tool", "records", "failure", "field"),
    [
        ("ibstat", "ibstat__ibsimparse__1.txt", "ibstat__ibsimparse__5.txt", "devices"),
        ("perfquery", "perfquery__ibsimparse__1.txt", "perfquery__ibsimparse__5.txt", "blocks"),
        ("ibstatus", "ibstatus__magnate3__1.txt", "ibstat__magnate3__3.txt", "ports"),
    ],
)
def test_failure_line_after_records(tool: str, records: str, failure: str, field: str) -> None:
    """A tool's own failure line after valid records (two real captures joined: the records,
    then a real failure of the same tool family): the records stay, ok=False, the line is the
    reason."""
    whole = PARSERS[tool]((FIXTURES / records).read_text())
    tail = (FIXTURES / failure).read_text()
    result = PARSERS[tool]((FIXTURES / records).read_text() + tail)
    reason = next(
        line.strip() for line in tail.splitlines() if "iberror" in line or "ibpanic" in line
    )
    assert (result.ok, result.reason) == (False, reason)
    assert getattr(result, field) == getattr(whole, field) != []
