"""smpquery portinfo parser, on real output captured from ibsim + OpenSM.

Provenance of the fixtures (captured here, 2026-11-22): the lab's declared fabric
(``render_net(graph_from_spec(Pulumi.lab.yaml))``, all links 4xHDR) in a private
``fabric.topology.ibsim.IbsimSession``, swept once by ``opensm -o`` as ``sm1:mlx5_0``, then
with ``SIM_HOST=gpu01:mlx5_0``:

* ``smpquery__ibsim_lab__1.txt``: ``smpquery -D portinfo 0 1`` (direct route to the local port)
* ``smpquery__ibsim_lab__2.txt``: ``smpquery portinfo 1 1`` (LID 1: sm1's port)
* ``smpquery__ibsim_lab__3.txt``: ``smpquery portinfo 999 1`` (no such LID; exit 255)
"""

import pytest

from fabric.parsers import PARSERS, ParseError
from fabric.parsers.smpquery import parse
from fabric.state import REPO_ROOT

FIXTURES = REPO_ROOT / "tests" / "fixtures"


def read(n: int) -> str:
    return (FIXTURES / f"smpquery__ibsim_lab__{n}.txt").read_text()


@pytest.mark.parametrize(
    ("n", "expected"),
    [
        (
            1,
            {
                "ok": True,
                "where": "DR path slid 65535; dlid 65535; 0 port 1",
                "lid": 4,
                "sm_lid": 1,
                "state": "Active",
                "phys_state": "LinkUp",
                "width_active": "4x",
                "speed_active": "HDR",
                "neighbor_mtu": 2048,
                "mtu_cap": 2048,
            },
        ),
        (
            2,
            {
                "ok": True,
                "where": "Lid 1 port 1",
                "lid": 1,
                "sm_lid": 1,
                "state": "Active",
                "speed_active": "HDR",
                "neighbor_mtu": 2048,
            },
        ),
    ],
)
def test_portinfo_fields(n: int, expected: dict[str, object]) -> None:
    report = parse(read(n)).model_dump()
    assert {k: report[k] for k in expected} == expected


def test_every_key_value_line_is_kept_as_printed() -> None:
    fields = parse(read(1)).fields
    assert (fields["LinkSpeedActive"], fields["CapMask"], len(fields)) == (
        "10.0 Gbps",
        "0x50c048",
        51,
    )


def test_capability_names_are_not_fields() -> None:
    assert "IsTrapSupported" not in "".join(parse(read(1)).fields)


def test_failed_query_is_a_typed_failure() -> None:
    report = parse(read(3))
    assert (report.ok, report.reason) == (
        False,
        "smpquery: iberror: failed: operation portinfo: port info query failed",
    )


def test_registered_as_smpquery() -> None:
    assert PARSERS["smpquery"] is parse


@pytest.mark.parametrize("text", ["", "ibstat: nothing here\n"])
def test_other_text_raises_parse_error(text: str) -> None:
    with pytest.raises(ParseError):
        parse(text)
