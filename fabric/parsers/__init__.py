"""Pure parsers: RDMA tool output text -> pydantic models.

``PARSERS`` maps a tool name to its ``parse(text)`` function; ``parse(tool, text)``
looks the tool up. ``ibnetdiscover`` lives in :mod:`fabric.parsers.ibnetdiscover`
(owned by the topology code) and is imported only when it is first called.
"""

from __future__ import annotations

from collections.abc import Callable

from pydantic import BaseModel

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

__all__ = ["PARSERS", "ParseError", "UnknownToolError", "parse"]


def _ibnetdiscover(text: str) -> BaseModel:
    """Parse ``ibnetdiscover`` output into a FabricGraph (imported on first use)."""
    from fabric.parsers.ibnetdiscover import parse as parse_ibnetdiscover

    return parse_ibnetdiscover(text)


PARSERS: dict[str, Callable[[str], BaseModel]] = {
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


def parse(tool: str, text: str) -> BaseModel:
    """Parse ``text`` as the output of ``tool``."""
    try:
        parser = PARSERS[tool]
    except KeyError:
        raise UnknownToolError(tool) from None
    return parser(text)
