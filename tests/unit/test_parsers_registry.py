"""The PARSERS registry: every fixture of every registered tool parses or fails typed."""

import json

import pytest
from pydantic import BaseModel

from fabric.graph import FabricGraph
from fabric.parsers import PARSERS, Parsed, ParseError, UnknownToolError, parse
from fabric.state import REPO_ROOT

FIXTURES = REPO_ROOT / "tests" / "fixtures"

#: Fixture file prefix -> registered tool name.
PREFIX_TOOL = {"ibv_devinfo_v": "ibv_devinfo"}

OWN_TOOLS = sorted(set(PARSERS) - {"ibnetdiscover"})
FILES = sorted(
    path.name
    for path in FIXTURES.glob("*__*.txt")
    if PREFIX_TOOL.get(path.name.split("__")[0], path.name.split("__")[0]) in OWN_TOOLS
)


def tool_of(name: str) -> str:
    prefix = name.split("__")[0]
    return PREFIX_TOOL.get(prefix, prefix)


def test_registry_names() -> None:
    assert sorted(PARSERS) == sorted(
        [
            "ibstat",
            "ibstatus",
            "ibv_devinfo",
            "iblinkinfo",
            "ibnetdiscover",
            "mlnx_qos",
            "show_gids",
            "mlxconfig",
            "perftest",
            "ibv_rc_pingpong",
            "sysfs",
            "ethtool",
            "ethtool_i",
            "fi_info",
            "sminfo",
            "perfquery",
            "ibdiagnet",
            "ibping",
            "ibtracert",
            "smpquery",
            "saquery",
            "ibqueryerrors",
            "nccl",
            "nccl_tests",
            "nvidia_smi_topo",
            "ibroute",
            "opensm_log",
            "ibccquery",
            "dmesg_xid",
            "nvidia_smi_q",
            "nvidia_smi_nvlink",
        ]
    )


@pytest.mark.parametrize("tool", OWN_TOOLS)
def test_every_tool_has_fixtures(tool: str) -> None:
    assert any(tool_of(name) == tool for name in FILES)


@pytest.mark.parametrize("name", FILES)
def test_every_fixture_parses_to_a_model(name: str) -> None:
    result = parse(tool_of(name), (FIXTURES / name).read_text())
    assert isinstance(result, BaseModel)


@pytest.mark.parametrize("tool", OWN_TOOLS)
def test_empty_input_raises_parse_error(tool: str) -> None:
    with pytest.raises(ParseError, match=f"^{tool}: "):
        parse(tool, "")


def test_unknown_tool_lists_valid_ones() -> None:
    with pytest.raises(UnknownToolError, match="valid tools: dmesg_xid, ethtool, ethtool_i"):
        parse("ibnope", "")


IBNETDISCOVER_FILES = sorted(path.name for path in FIXTURES.glob("ibnetdiscover__*.txt"))


@pytest.mark.parametrize("name", IBNETDISCOVER_FILES)
def test_ibnetdiscover_gives_a_fabric_graph_not_a_pydantic_model(name: str) -> None:
    """The registry's one exception (fabric/parsers/__init__.py): a FabricGraph dataclass,
    which still has the ``model_dump(mode="json")`` every registered parser's result has."""
    result = parse("ibnetdiscover", (FIXTURES / name).read_text())
    assert isinstance(result, FabricGraph)
    assert not isinstance(result, BaseModel)
    assert isinstance(result, Parsed)
    dumped = result.model_dump(mode="json")
    assert json.loads(json.dumps(dumped)) == dumped


@pytest.mark.parametrize("name", FILES)
def test_every_own_tool_result_is_parsed(name: str) -> None:
    assert isinstance(parse(tool_of(name), (FIXTURES / name).read_text()), Parsed)
