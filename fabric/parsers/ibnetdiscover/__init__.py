"""Parse ``ibnetdiscover`` (plain topology format) output into a ``FabricGraph``.

Handles what real fabrics print: ``S-``/``H-``/``R-`` node ids, port GUIDs in parentheses,
``base port 0`` / ``enhanced port 0`` switches, ``MF0;<name>:<model>/U1`` switch descriptions
(name = ``<name>``, or ``<name>-L01`` for a director's ``/L01/U1`` card), ``--full`` suffixes
(``s=4 w=2 v=4 e=4``), whitespace collapsed by web copies, multi-port HCAs, hosts with HCAs on
several leaves, isolated CAs (no port lines), mixed speeds and widths, and tool warnings on
stderr mixed into the capture (kept in ``graph.warnings``). A CA's host is the first word of its
node description (``"gpu01 mlx5_0"``, ``"node1 HCA-1"``); descriptions never set (``"MT4129
ConnectX7 Mellanox Technologies"``) give ``host=None`` and keep the GUID; SHARP ``Aggregation
Node`` CAs get ``kind="aggregation"``. Each link is reported once even though both ends list
it. Nodes that port lines reach but that have no record of their own (trimmed captures) are
added from the port line's id and description. When the two ends of a link report different
widths or speeds, the slower is kept.

Two parsers, one result:

* :mod:`.fast` -- the bulk path for plain well-formed output (the usual case), with the compiled
  scanner ``_ibnetdiscover_scan.c`` and its pure-Python regex reference ``_scan_regex``;
* :mod:`.lines` -- the line parser, the reference: every text the bulk path declines goes
  through it, and it names the bad line of text that is not ibnetdiscover output.

And one shortcut: :mod:`.tree` writes Slurm's topology.conf straight from the text with the
compiled writer ``_ibnetdiscover_tree.c`` (what ``python -m fabric topology`` runs), falling
back to ``tree_conf(parse(text))``, its reference.

What :func:`parse` returns is a :class:`fabric.graph.FabricGraph`: a dataclass of
``Switch``/``Ca``/``Link`` named tuples, not a pydantic model (building 130,000 validated models
costs seconds). ``graph.model_dump(mode="json")`` gives the JSON-ready dict that ``python -m
fabric parse ibnetdiscover`` prints. To force the regex scanner (as the fallback install runs),
set ``fast._scan_compiled = None``: the bulk path reads it from :mod:`.fast`. The cyclic garbage
collector is paused during a parse (nothing it allocates forms cycles; it would otherwise rescan
the growing result repeatedly). The package imports its modules on first use, so that
``python -m fabric topology`` loads only what it runs.
"""

from __future__ import annotations

import importlib

#: ``typing.TYPE_CHECKING`` without importing ``typing`` (``python -m fabric topology`` loads
#: this package; see :mod:`fabric.parsers.parsed`).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from fabric.graph import FabricGraph
    from fabric.parsers.ibnetdiscover import fast
    from fabric.parsers.ibnetdiscover.common import TOOL, IbnetdiscoverError

__all__ = ["TOOL", "FabricGraph", "IbnetdiscoverError", "fast", "parse"]

#: Names this package gives on first use: name -> (module, attribute or None for the module).
_LAZY = {
    "TOOL": ("fabric.parsers.ibnetdiscover.common", "TOOL"),
    "IbnetdiscoverError": ("fabric.parsers.ibnetdiscover.common", "IbnetdiscoverError"),
    "FabricGraph": ("fabric.graph", "FabricGraph"),
    "fast": ("fabric.parsers.ibnetdiscover.fast", None),
}


def __getattr__(name: str) -> Any:
    """``TOOL``, ``IbnetdiscoverError``, ``FabricGraph`` and ``fast``, imported on first use."""
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, attr = _LAZY[name]
    value = importlib.import_module(module)
    return value if attr is None else getattr(value, attr)


def parse(text: str) -> FabricGraph:
    """Parse ``ibnetdiscover`` plain output; raise ``IbnetdiscoverError`` naming a bad line.

    The bulk path (:mod:`.fast`) first; the line parser (:mod:`.lines`) when it declines.
    """
    from fabric.gcpause import gc_paused
    from fabric.parsers.ibnetdiscover.fast import _parse_fast

    if "\r\n" in text:  # CRLF line endings (a capture saved on Windows), as every parser takes
        text = text.replace("\r\n", "\n")
    _check_ranges(text)
    with gc_paused():  # the parse allocates ~1 M tuples and strings that all live on: no cycles
        graph = _parse_fast(text)
        if graph is None:  # the line parser, imported only when the bulk path declines
            from fabric.parsers.ibnetdiscover.lines import _parse

            return _parse(text)
        return graph


#: The most a LID (unicast: 1 to 0xBFFF; multicast LIDs name no port), an LMC (3 bits) and a
#: port number (an 8-bit NumPorts) may be, as the InfiniBand spec sizes them.
MAX_UNICAST_LID = 0xBFFF
MAX_LMC = 7
MAX_PORT = 255


def _check_ranges(text: str) -> None:
    """Raise IbnetdiscoverError at the first LID, LMC or port number no fabric can have (LID
    70000, port 999): only numbers of several digits are looked at, so a capture costs one scan."""
    import re

    from fabric.parsers.ibnetdiscover.common import IbnetdiscoverError

    checks = (  # each starts with a literal, so the scan skips to it (no ^, no word boundary)
        (r"lid[ \t]+(\d{5,})", MAX_UNICAST_LID, "a unicast LID, 1 to 49151 (0xBFFF)"),
        (r"lmc[ \t]+(\d{2,}|[89])", MAX_LMC, "an LMC, 0 to 7"),
        (r"\n\[(\d{3,})\]", MAX_PORT, "a port number, 1 to 255"),
        (r'"\[(\d{3,})\]', MAX_PORT, "a remote port number, 1 to 255"),
        *(
            (rf"\n{kind}[ \t]+(\d{{3,}})[ \t]", MAX_PORT, "a port count, 1 to 255")
            for kind in ("Switch", "Ca", "Rt")
        ),
    )
    found: list[tuple[int, str, str]] = []
    for pattern, most, what in checks:
        for match in re.finditer(pattern, text):
            if int(match.group(1)[:12]) > most:  # the first beyond its bound
                found.append((match.start(1), what, match.group(1)[:12]))
                break
    if found:
        start, what, number = min(found)
        line = text.count("\n", 0, start) + 1
        raise IbnetdiscoverError(line, what, number)
