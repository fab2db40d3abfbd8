"""Pure parsers: RDMA tool output text -> typed results.

``PARSERS`` maps a tool name to its ``parse(text)`` function; ``parse(tool, text)`` looks the
tool up. Every parser returns a pydantic model (``fabric.parsers.common.ToolResult`` and
friends) except ``ibnetdiscover``, which returns a :class:`fabric.topology.graph.FabricGraph`:
a dataclass of ``Switch``/``Ca``/``Link`` named tuples, kept out of pydantic because building
one validated model per node and link of a large fabric costs seconds. Both kinds satisfy
:class:`Parsed`: ``model_dump(mode="json")`` gives a JSON-ready dict (what ``python -m fabric
parse`` prints). ``ibnetdiscover`` lives in :mod:`fabric.parsers.ibnetdiscover` (owned by the
topology code) and is imported only when it is first called.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

from fabric.parsers import (
    ethtool,
    fi_info,
    ibdiagnet,
    iblinkinfo,
    ibping,
    ibstat,
    ibstatus,
    ibtracert,
    ibv_devinfo,
    ibv_rc_pingpong,
    mlnx_qos,
    mlxconfig,
    perfquery,
    perftest,
    show_gids,
    sminfo,
    smpquery,
    sysfs,
)
from fabric.parsers.common import ParseError

__all__ = ["PARSERS", "ParseError", "Parsed", "UnknownToolError", "parse"]


@runtime_checkable
class Parsed(Protocol):
    """What every registered parser returns: a pydantic model, or ibnetdiscover's FabricGraph."""

    def model_dump(self, *, mode: str = ...) -> dict[str, Any]:
        """A plain dict; ``mode="json"`` makes it JSON-ready."""
        ...


def _ibnetdiscover(text: str) -> Parsed:
    """Parse ``ibnetdiscover`` output into a FabricGraph (not a pydantic model; imported on
    first use)."""
    from fabric.parsers.ibnetdiscover import parse as parse_ibnetdiscover

    return parse_ibnetdiscover(text)


PARSERS: dict[str, Callable[[str], Parsed]] = {
    "ibstat": ibstat.parse,
    "ibstatus": ibstatus.parse,
    "ibv_devinfo": ibv_devinfo.parse,
    "iblinkinfo": iblinkinfo.parse,
    "ibnetdiscover": _ibnetdiscover,
    "mlnx_qos": mlnx_qos.parse,
    "show_gids": show_gids.parse,
    "mlxconfig": mlxconfig.parse,
    "perftest": perftest.parse,
    "ibv_rc_pingpong": ibv_rc_pingpong.parse,
    "sysfs": sysfs.parse,
    "ethtool": ethtool.parse,
    "fi_info": fi_info.parse,
    "sminfo": sminfo.parse,
    "perfquery": perfquery.parse,
    "ibdiagnet": ibdiagnet.parse,
    "ibping": ibping.parse,
    "ibtracert": ibtracert.parse,
    "smpquery": smpquery.parse,
}


class UnknownToolError(KeyError):
    """No parser is registered under that tool name."""

    def __init__(self, tool: str) -> None:
        self.tool = tool
        super().__init__(f"unknown tool {tool!r}; valid tools: {', '.join(sorted(PARSERS))}")

    def __str__(self) -> str:
        return str(self.args[0])


def parse(tool: str, text: str) -> Parsed:
    """Parse ``text`` as the output of ``tool``: a pydantic model, or a FabricGraph for
    ``ibnetdiscover``."""
    try:
        parser = PARSERS[tool]
    except KeyError:
        raise UnknownToolError(tool) from None
    return parser(text)
