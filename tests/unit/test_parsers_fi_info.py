"""fi_info parser, on every fi_info fixture."""

import pytest

from fabric.parsers import ParseError
from fabric.parsers.fi_info import parse
from fabric.state import REPO_ROOT

FIXTURES = REPO_ROOT / "tests" / "fixtures"


def read(name: str) -> str:
    return (FIXTURES / name).read_text()


@pytest.mark.parametrize(
    ("name", "domains"),
    [
        ("fi_info__perfstudy__1.txt", ["rdmap0s31-rdm", "rdmap0s31-dgrm"]),
        ("fi_info__libfabric5689__1.txt", ["efa_0-rdm", "efa_0-dgrm"]),
    ],
)
def test_domains(name: str, domains: list[str]) -> None:
    assert parse(read(name)).domains == domains


@pytest.mark.parametrize(
    ("name", "index", "expected"),
    [
        (
            "fi_info__perfstudy__1.txt",
            0,
            {
                "provider": "efa",
                "fabric": "efa",
                "version": "121.0",
                "type": "FI_EP_RDM",
                "protocol": "FI_PROTO_EFA",
            },
        ),
        ("fi_info__perfstudy__1.txt", 1, {"type": "FI_EP_DGRAM"}),
        (
            "fi_info__libfabric5689__1.txt",
            0,
            {"fabric": "EFA-fe80::39:beff:fe6e:c23", "version": "2.0"},
        ),
        (
            "fi_info__libfabric5689__1.txt",
            2,
            {"provider": "efa;ofi_rxd", "protocol": "FI_PROTO_RXD", "type": "FI_EP_RDM"},
        ),
    ],
)
def test_entry_fields(name: str, index: int, expected: dict[str, str]) -> None:
    entry = parse(read(name)).entries[index].model_dump()
    assert {key: entry[key] for key in expected} == expected


@pytest.mark.parametrize(
    "text", [read("ibstat__gpud__1.txt"), read("sminfo__ibsimparse__1.txt"), ""]
)
def test_not_fi_info_raises_parse_error(text: str) -> None:
    with pytest.raises(ParseError, match="^fi_info: "):
        parse(text)


def test_providers_and_efa_rdm_domains() -> None:
    report = parse((FIXTURES / "fi_info__libfabric5689__1.txt").read_text())
    assert report.providers == ["efa", "efa;ofi_rxd"]
    assert report.efa_rdm_domains == ["efa_0-rdm"]
