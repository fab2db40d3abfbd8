"""Parse ``ibnetdiscover`` (plain topology format) output into a ``FabricGraph``.

Handles what real fabrics print: ``S-``/``H-``/``R-`` node ids, port GUIDs in parentheses,
``base port 0`` / ``enhanced port 0`` switches, ``MF0;<name>:<model>/U1`` switch descriptions
(name = ``<name>``, or ``<name>-L01`` for a director's ``/L01/U1`` card), ``--full`` suffixes (``s=4 w=2 v=4 e=4``), whitespace collapsed by web
copies, multi-port HCAs, hosts with HCAs on several leaves, isolated CAs (no port lines),
mixed speeds and widths, and tool warnings on stderr mixed into the capture (kept in
``graph.warnings``). A CA's host is the first word of its node description (``"gpu01
mlx5_0"``, ``"node1 HCA-1"``); descriptions never set (``"MT4129 ConnectX7 Mellanox
Technologies"``) give ``host=None`` and keep the GUID; SHARP ``Aggregation Node`` CAs get
``kind="aggregation"``. Each link is reported once even though both ends list it. Nodes that
port lines reach but that have no record of their own (trimmed captures) are added from the
port line's id and description.

The whole text is scanned by one compiled regular expression (C speed); a line that looks like
a node header or port line but does not parse raises ``IbnetdiscoverError`` naming the line.
"""

from __future__ import annotations

import re

from fabric.parsers.common import ParseError
from fabric.topology.graph import Ca, FabricGraph, GraphError, Link, Switch, link_rate

TOOL = "ibnetdiscover"

_ITEM = re.compile(
    r'^(?:(?P<kind>Switch|Ca|Rt)[ \t]+(?P<nports>\d+)[ \t]+"(?P<id>[^"]+)"[ \t]*#[ \t]*"(?P<desc>[^\n]*)"'
    r"(?P<rest>[^\n]*)"
    r'|\[(?P<lp>\d+)\](?:\([0-9a-fA-F]+\))?[ \t]*"(?P<rid>[^"]+)"\[(?P<rp>\d+)\](?:\([0-9a-fA-F]+\))?'
    r'[ \t]*#[ \t]*(?:lid \d+ lmc \d+ )?"(?P<rdesc>[^\n]*)"[ \t]+lid[ \t]+\d+[ \t]+(?P<w>\d+x)(?P<s>[A-Z]+\d*)[^\n]*)$',
    re.MULTILINE,
)
#: Lines that are neither node headers, port lines, comments, blanks nor key=value lines.
_OTHER = re.compile(
    r"^(?![ \t]*$|#|vendid=|devid=|sysimgguid=|switchguid=|caguid=|rtguid=|Non-Chassis Nodes"
    r"|Chassis |Switch[ \t]|Ca[ \t]|Rt[ \t]|\[)[^\n]*$",
    re.MULTILINE,
)
#: stderr lines of the diags tools that end up in captures (kept as warnings).
_STDERR = re.compile(r"^(?:ibwarn:|ibpanic:|ibnetdiscover:|src/\S+\.c:\d+;|\S+\.c:\d+;)")
_SHAPED = re.compile(r"^(?:Switch|Ca|Rt)[ \t]|^\[", re.MULTILINE)
_PORTS_REPORT = re.compile(r"^(?:CA|SW|RT)\s+\d+\s+\d+\s+0x[0-9a-fA-F]+\s")
_MF0 = re.compile(r"^MF0;([^:;]+):[^/]*(?:/([^/]+))?/U\d+$")
_UNSET = re.compile(r"^MT\d+\b")


class IbnetdiscoverError(ParseError):
    """ibnetdiscover text that cannot be parsed: names the line and what was expected."""

    def __init__(self, line: int, expected: str, got: str | None = None) -> None:
        super().__init__(TOOL, line, expected, got)


def _guid(node_id: str, line: int) -> str:
    body = node_id[2:] if node_id[1:2] == "-" else node_id
    try:
        return f"0x{int(body, 16):016x}"
    except ValueError:
        raise IbnetdiscoverError(line, 'a node id such as "S-0002c903000e1000"', node_id) from None


def _line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def _first_bad_line(text: str) -> IbnetdiscoverError:
    """Locate the first header/port-shaped line the fast scan rejected (the slow path)."""
    for number, line in enumerate(text.splitlines(), 1):
        if _SHAPED.match(line) and not _ITEM.match(line):
            expected = (
                'a port line: [port] "remote id"[port] # "description" lid N <width><speed>'
                if line.startswith("[")
                else 'a node header: Switch|Ca|Rt <ports> "id" # "description"'
            )
            return IbnetdiscoverError(number, expected, line)
    return IbnetdiscoverError(0, "consistent ibnetdiscover output")


def _ca(guid: str, ports: int, desc: str, kind: str) -> Ca:
    if kind == "Rt":
        return Ca(guid, None, None, desc, ports, "router")
    if "Aggregation Node" in desc:
        return Ca(guid, None, None, desc, ports, "aggregation")
    words = desc.split(None, 1)
    if not words or _UNSET.match(desc):
        return Ca(guid, None, None, desc, ports, "hca")
    return Ca(guid, words[0], words[1] if len(words) > 1 else None, desc, ports, "hca")


def _switch_names(switches: dict[str, Switch]) -> dict[str, Switch]:
    """Name = MF0 name, else a one-word description, else S-<guid>; made unique by GUID."""
    named: dict[str, Switch] = {}
    counts: dict[str, int] = {}
    for guid, sw in switches.items():
        match = _MF0.match(sw.description)
        if match:  # MF0;name:model/U1, or MF0;name:model/L01/U1 for a director's line/spine card
            name = match.group(1) if match.group(2) is None else f"{match.group(1)}-{match.group(2)}"
        elif sw.description and " " not in sw.description.strip():
            name = sw.description.strip()
        else:
            name = f"S-{guid[2:]}"
        named[guid] = sw._replace(name=name)
        counts[name] = counts.get(name, 0) + 1
    return {
        g: (s if counts[s.name] == 1 else s._replace(name=f"{s.name}-{g[2:]}")) for g, s in named.items()
    }


def _add_unlisted(
    text: str, ports: list[tuple[str, int, str, int, str, str]], switches: dict[str, Switch], cas: dict[str, Ca]
) -> None:
    """Add nodes that port lines reach but that have no record of their own (a trimmed capture),
    from the id and description the port lines give; their port count is the highest port seen."""
    missing: dict[str, int] = {}
    for _, _, remote, rport, _, _ in ports:
        if remote not in switches and remote not in cas:
            missing[remote] = max(rport, missing.get(remote, 0))
    if not missing:
        return
    for match in _ITEM.finditer(text):
        rid = match.group("rid")
        if rid is None:
            continue
        guid = _guid(rid, 0)
        if guid in missing and guid not in switches and guid not in cas:
            desc = match.group("rdesc")
            if rid.startswith("S-"):
                switches[guid] = Switch(guid, "", desc, missing[guid])
            else:
                cas[guid] = _ca(guid, missing[guid], desc, "Rt" if rid.startswith("R-") else "Ca")


def parse(text: str) -> FabricGraph:
    """Parse ``ibnetdiscover`` plain output; raise ``IbnetdiscoverError`` naming a bad line."""
    warnings: list[str] = []
    for match in _OTHER.finditer(text):
        line = match.group(0)
        if _STDERR.match(line):
            warnings.append(line.strip())
            continue
        if _PORTS_REPORT.match(line):
            raise IbnetdiscoverError(
                _line_of(text, match.start()),
                "plain ibnetdiscover output (this is the -p ports report, which lacks CA node GUIDs; "
                "rerun ibnetdiscover without -p)",
                line,
            )
        raise IbnetdiscoverError(
            _line_of(text, match.start()), "ibnetdiscover topology output (node records, # comments)", line
        )
    switches: dict[str, Switch] = {}
    cas: dict[str, Ca] = {}
    ports: list[tuple[str, int, str, int, str, str]] = []
    current: str | None = None
    items = 0
    for match in _ITEM.finditer(text):
        items += 1
        kind = match.group("kind")
        if kind is not None:
            nports = int(match.group("nports"))
            current = _guid(match.group("id"), _line_of(text, match.start()))
            desc = match.group("desc")
            if kind == "Switch":
                switches[current] = Switch(current, "", desc, nports)
            else:
                cas[current] = _ca(current, nports, desc, kind)
            continue
        if current is None:
            raise IbnetdiscoverError(_line_of(text, match.start()), "a node header before port lines", match.group(0))
        rid = match.group("rid")
        remote = _guid(rid, _line_of(text, match.start()))
        ports.append((current, int(match.group("lp")), remote, int(match.group("rp")), match.group("w"), match.group("s")))
    if items != len(_SHAPED.findall(text)):
        raise _first_bad_line(text)
    _add_unlisted(text, ports, switches, cas)
    rates: dict[tuple[str, str], float] = {}
    links: list[Link] = []
    for local, lport, remote, rport, width, speed in ports:
        if (local, lport) > (remote, rport) and (remote in switches or remote in cas):
            continue  # the remote node's own port line reports this link
        rate = rates.get((width, speed))
        if rate is None:
            try:
                rate = rates[(width, speed)] = link_rate(width, speed)
            except GraphError as err:
                raise IbnetdiscoverError(0, f"a known link width and speed ({err})", f"{width}{speed}") from None
        links.append(Link(local, lport, remote, rport, width, speed, rate))
    return FabricGraph(switches=_switch_names(switches), cas=cas, links=links, warnings=warnings)
