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
port line's id and description. When the two ends of a link report different widths or
speeds, the slower is kept.

The whole text is scanned by one compiled regular expression (C speed); a line that looks like
a node header or port line but does not parse raises ``IbnetdiscoverError`` naming the line.
"""

from __future__ import annotations

import re

from fabric.parsers.common import ParseError
from fabric.topology.graph import Ca, FabricGraph, GraphError, Link, Switch, link_rate

TOOL = "ibnetdiscover"

#: Node headers and port lines; groups: kind, ports, id, description | local port, remote id,
#: remote port, width, speed. Lines are matched after a newline (the text gets one prepended):
#: a literal first character lets the regex engine skip ahead quickly.
_ITEM = re.compile(
    r'\n(?:(Switch|Ca|Rt)[ \t]+(\d+)[ \t]+"([^"]+)"[ \t]*#[ \t]*"([^\n]*)"[^\n]*'
    r'|\[(\d+)\](?:\([0-9a-fA-F]+\))?[ \t]*"([^"]+)"\[(\d+)\](?:\([0-9a-fA-F]+\))?'
    r'[ \t]*#[ \t]*(?:lid \d+ lmc \d+ )?"[^\n]*"[ \t]+lid[ \t]+\d+[ \t]+(\d+x)([A-Z]+\d*)[^\n]*)(?=\n|$)'
)
#: A port line's remote id and description (slow path: nodes only port lines mention).
_REMOTE = re.compile(r'\n\[\d+\](?:\([0-9a-fA-F]+\))?[ \t]*"([^"]+)"\[\d+\][^#\n]*#[ \t]*(?:lid \d+ lmc \d+ )?"([^\n]*)"[ \t]+lid')
#: Lines that are neither node headers, port lines, comments, blanks nor key=value lines.
_OTHER = re.compile(
    r"\n(?![ \t]*(?:\n|$)|#|vendid=|devid=|sysimgguid=|switchguid=|caguid=|rtguid=|Non-Chassis Nodes"
    r"|Chassis |Switch[ \t]|Ca[ \t]|Rt[ \t]|\[)([^\n]*)"
)
_STDERR = re.compile(r"^(?:ibwarn:|ibpanic:|ibnetdiscover:|src/\S+\.c:\d+;|\S+\.c:\d+;)")
_SHAPED = re.compile(r"^(?:Switch|Ca|Rt)[ \t]|^\[", re.MULTILINE)
_PORTS_REPORT = re.compile(r"^(?:CA|SW|RT)\s+\d+\s+\d+\s+0x[0-9a-fA-F]+\s")
_MF0 = re.compile(r"^MF0;([^:;]+):[^/]*(?:/([^/]+))?/U\d+$")
_UNSET = re.compile(r"^MT\d+\b")


class IbnetdiscoverError(ParseError):
    """ibnetdiscover text that cannot be parsed: names the line and what was expected."""

    def __init__(self, line: int, expected: str, got: str | None = None) -> None:
        super().__init__(TOOL, line, expected, got)


def _guid(node_id: str) -> str | None:
    """``S-0002c903000e1000`` -> ``0x0002c903000e1000``; None if it is not hex."""
    body = node_id[2:] if node_id[1:2] == "-" else node_id
    try:
        return f"0x{int(body, 16):016x}"
    except ValueError:
        return None


def _line_of(text: str, pos: int) -> int:
    """Line number (from 1) of offset ``pos`` of the newline-prefixed ``text``."""
    return text.count("\n", 0, pos + 1)


def _line_with(text: str, needle: str) -> int:
    return _line_of(text, text.find(needle))


def _first_bad_line(text: str) -> IbnetdiscoverError | None:
    """Locate the first header/port-shaped line the fast scan rejected (the slow path)."""
    for number, line in enumerate(text.splitlines(), 1):
        if _SHAPED.match(line) and not _ITEM.match("\n" + line):
            expected = (
                'a port line: [port] "remote id"[port] # "description" lid N <width><speed>'
                if line.startswith("[")
                else 'a node header: Switch|Ca|Rt <ports> "id" # "description"'
            )
            return IbnetdiscoverError(number, expected, line)
    return None


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


def _add_unlisted(text: str, missing: dict[str, str], switches: dict[str, Switch], cas: dict[str, Ca]) -> None:
    """Add nodes that port lines reach but that have no record of their own (a trimmed capture),
    from the id and description the port lines give; ``missing`` maps GUID -> node id."""
    wanted = set(missing.values())
    for rid, desc in _REMOTE.findall(text):
        if rid not in wanted:
            continue
        wanted.discard(rid)
        guid = _guid(rid) or rid
        if rid.startswith("S-"):
            switches[guid] = Switch(guid, "", desc, 1)
        else:
            cas[guid] = _ca(guid, 1, desc, "Rt" if rid.startswith("R-") else "Ca")


def _reconcile(links: list[Link], deferred: list[tuple[str, int, str, int, str, str]]) -> None:
    """Where the two ends of a link report different widths or speeds (a degraded link, as in
    the 1xSDR lines of the ibnetdiscover man page example), keep the slower of the two."""
    index = {(link.a_guid, link.a_port): i for i, link in enumerate(links)}
    for _, _, remote, rport, width, speed in deferred:
        i = index.get((remote, rport))
        if i is None:
            continue
        link = links[i]
        if link.width != width or link.speed != speed:
            rate = link_rate(width, speed)
            if rate < link.rate_gbps:
                links[i] = link._replace(width=width, speed=speed, rate_gbps=rate)


def _check_lines(text: str) -> list[str]:
    """Raise on a line that is not ibnetdiscover output; return stderr lines as warnings."""
    warnings: list[str] = []
    for match in _OTHER.finditer(text):
        line = match.group(1)
        if _STDERR.match(line):
            warnings.append(line.strip())
            continue
        expected = "ibnetdiscover topology output (node records, # comments)"
        if _PORTS_REPORT.match(line):
            expected = ("plain ibnetdiscover output (this is the -p ports report, which lacks CA node GUIDs; "
                        "rerun ibnetdiscover without -p)")
        raise IbnetdiscoverError(_line_of(text, match.start()), expected, line)
    return warnings


def parse(text: str) -> FabricGraph:
    """Parse ``ibnetdiscover`` plain output; raise ``IbnetdiscoverError`` naming a bad line."""
    text = "\n" + text
    warnings = _check_lines(text)
    items = _ITEM.findall(text)
    shaped = sum(text.count(p) for p in ("\n[", "\nSwitch ", "\nSwitch\t", "\nCa ", "\nCa\t", "\nRt ", "\nRt\t"))
    if len(items) != shaped:
        bad = _first_bad_line(text[1:])
        if bad is not None:
            raise bad
    new = tuple.__new__
    ids: dict[str, str] = {}
    switches: dict[str, Switch] = {}
    cas: dict[str, Ca] = {}
    links: list[Link] = []
    deferred: list[tuple[str, int, str, int, str, str]] = []  # lines the other end should report
    rates: dict[str, float] = {}
    local = ""
    local_is_switch = False
    for kind, nports, nid, desc, lp, rid, rp, width, speed in items:
        if kind:
            guid = ids.get(nid)
            if guid is None:
                guid = ids[nid] = _guid(nid) or ""
                if not guid:
                    raise IbnetdiscoverError(_line_with(text, f'"{nid}"'), 'a node id such as "S-0002c903000e1000"', nid)
            local = guid
            local_is_switch = kind == "Switch"
            if local_is_switch:
                switches[guid] = new(Switch, (guid, "", desc, int(nports)))
            else:
                cas[guid] = _ca(guid, int(nports), desc, kind)
            continue
        if not local:
            raise IbnetdiscoverError(_line_with(text, f'"{rid}"[{rp}]'), "a node header before port lines", rid)
        remote = ids.get(rid)
        if remote is None:
            remote = ids[rid] = _guid(rid) or ""
            if not remote:
                raise IbnetdiscoverError(_line_with(text, f'"{rid}"'), 'a node id such as "S-0002c903000e1000"', rid)
        lport, rport = int(lp), int(rp)
        # Each link is printed from both ends: keep switch-side lines (switch-to-switch once, by
        # order) and defer the rest, which count only if the other end has no record.
        if (local_is_switch and (rid[0] != "S" or (local, lport) < (remote, rport))) or (
            not local_is_switch and rid[0] != "S" and (local, lport) < (remote, rport)
        ):
            key = width + speed
            rate = rates.get(key)
            if rate is None:
                try:
                    rate = rates[key] = link_rate(width, speed)
                except GraphError as err:
                    raise IbnetdiscoverError(_line_with(text, f'"{rid}"[{rp}]'), f"a known link width and speed ({err})",
                                             key) from None
            links.append(new(Link, (local, lport, remote, rport, width, speed, rate)))
        else:
            deferred.append((local, lport, remote, rport, width, speed))
    _reconcile(links, deferred)
    missing = {g: i for i, g in ids.items() if g not in switches and g not in cas}
    if missing:
        _add_unlisted(text, missing, switches, cas)
        for local, lport, remote, rport, width, speed in deferred:
            if remote in missing:
                links.append(Link(local, lport, remote, rport, width, speed, link_rate(width, speed)))
    return FabricGraph(switches=_switch_names(switches), cas=cas, links=links, warnings=warnings)
