"""sminfo parser, on every sminfo fixture (captured from ibsim + OpenSM)."""

import pytest

from fabric.parsers import ParseError
from fabric.parsers.sminfo import parse
from fabric.state import REPO_ROOT

FIXTURES = REPO_ROOT / "tests" / "fixtures"


def read(name: str) -> str:
    return (FIXTURES / name).read_text()


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        (
            "sminfo__ibsimparse__1.txt",
            {
                "ok": True,
                "sm_lid": 1,
                "sm_guid": "0x0000000000100001",
                "activity_count": 118,
                "priority": 14,
                "state": "MASTER",
                "state_code": 3,
            },
        ),
        (
            "sminfo__ibsimparse__2.txt",
            {
                "ok": True,
                "sm_lid": 6,
                "sm_guid": "0x0000000000100007",
                "priority": 1,
                "state": "DISCOVER",
                "state_code": 1,
            },
        ),
    ],
)
def test_sminfo_record(name: str, expected: dict[str, object]) -> None:
    data = parse(read(name)).model_dump()
    assert {key: data[key] for key in expected} == expected


def test_no_sm_is_a_failed_result() -> None:
    report = parse(read("sminfo__ibsimparse__3.txt"))
    assert (report.ok, report.reason, report.sm_lid) == (
        False,
        "sminfo: iberror: failed: query",
        None,
    )


@pytest.mark.parametrize(
    "text", [read("ibstat__gpud__1.txt"), read("fi_info__perfstudy__1.txt"), ""]
)
def test_not_sminfo_raises_parse_error(text: str) -> None:
    with pytest.raises(ParseError, match="^sminfo: "):
        parse(text)
