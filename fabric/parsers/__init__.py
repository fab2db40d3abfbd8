"""Pure parsers: RDMA tool output text -> typed results.

``PARSERS`` maps a tool name to its ``parse(text)`` function; ``parse(tool, text)`` looks the
tool up. Every parser returns a pydantic model (``fabric.parsers.common.ToolResult`` and
friends) except ``ibnetdiscover``, which returns a :class:`fabric.graph.FabricGraph`:
a dataclass of ``Switch``/``Ca``/``Link`` named tuples, kept out of pydantic because building
one validated model per node and link of a large fabric costs seconds. Both kinds satisfy
:class:`Parsed`: ``model_dump(mode="json")`` gives a JSON-ready dict (what ``python -m fabric
parse`` prints). ``ibnetdiscover`` lives in :mod:`fabric.parsers.ibnetdiscover` (owned by the
topology code) and is imported only when it is first called.
"""

from __future__ import annotations

import importlib

from fabric.parsers.errors import ParseError

#: ``typing.TYPE_CHECKING`` without importing ``typing`` (see :mod:`.parsed`).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from fabric.parsers.parsed import Parsed

__all__ = ["PARSERS", "ParseError", "Parsed", "UnknownToolError", "parse"]


def _ibnetdiscover(text: str) -> Parsed:
    """Parse ``ibnetdiscover`` output into a FabricGraph (not a pydantic model; imported on
    first use)."""
    from fabric.parsers.ibnetdiscover import parse as parse_ibnetdiscover

    return parse_ibnetdiscover(text)


#: Tool name -> the module of ``fabric.parsers`` that parses its output, imported on first
#: use of ``PARSERS`` (``None``: ``ibnetdiscover``, its own package).
_MODULES: dict[str, str | None] = {
    "ibstat": "ibstat",
    "ibstatus": "ibstatus",
    "ibv_devinfo": "ibv_devinfo",
    "iblinkinfo": "iblinkinfo",
    "ibnetdiscover": None,
    "mlnx_qos": "mlnx_qos",
    "show_gids": "show_gids",
    "mlxconfig": "mlxconfig",
    "perftest": "perftest",
    "ibv_rc_pingpong": "ibv_rc_pingpong",
    "sysfs": "sysfs",
    "ethtool": "ethtool",
    "ethtool_i": "ethtool_driver",
    "fi_info": "fi_info",
    "sminfo": "sminfo",
    "perfquery": "perfquery",
    "ibdiagnet": "ibdiagnet",
    "ibping": "ibping",
    "ibtracert": "ibtracert",
    "smpquery": "smpquery",
    "saquery": "saquery",
    "ibqueryerrors": "ibqueryerrors",
    "nccl": "nccl",
    "nccl_tests": "nccl_tests",
    "nvidia_smi_topo": "nvidia_smi_topo",
    "ibroute": "ibroute",
    "opensm_log": "opensm_log",
    "ibccquery": "ibccquery",
    "dmesg_xid": "dmesg_xid",
    "nvidia_smi_q": "nvidia_smi_q",
    "nvidia_smi_nvlink": "nvidia_smi_nvlink",
}


def _registry() -> dict[str, Callable[[str], Parsed]]:
    """Tool name -> parse function, importing each parser module (the registry's first use)."""
    return {
        tool: _ibnetdiscover
        if module is None
        else importlib.import_module(f"fabric.parsers.{module}").parse
        for tool, module in _MODULES.items()
    }


#: Tool name -> parse function; bound by ``__getattr__`` on first access.
PARSERS: dict[str, Callable[[str], Parsed]]


def __getattr__(name: str) -> Any:
    """``PARSERS``, built on first access (so importing one parser loads only that one), and
    ``Parsed`` (:mod:`.parsed`), imported on first use."""
    if name == "PARSERS":
        parsers = globals()["PARSERS"] = _registry()
        return parsers
    if name == "Parsed":
        from fabric.parsers.parsed import Parsed

        return Parsed
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class UnknownToolError(KeyError):
    """No parser is registered under that tool name."""

    def __init__(self, tool: str) -> None:
        self.tool = tool
        super().__init__(f"unknown tool {tool!r}; valid tools: {', '.join(sorted(_MODULES))}")

    def __str__(self) -> str:
        return str(self.args[0])


def parse(tool: str, text: str) -> Parsed:
    """Parse ``text`` as the output of ``tool``: a pydantic model, or a FabricGraph for
    ``ibnetdiscover``."""
    try:
        parser = (globals().get("PARSERS") or __getattr__("PARSERS"))[tool]
    except KeyError:
        raise UnknownToolError(tool) from None
    return parser(text)
