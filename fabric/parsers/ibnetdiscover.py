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

Usual case (``_parse_fast``), in bulk: one scan of the whole text validates it and gives its
columns (node ids, node headers' kinds, port counts and descriptions): by the compiled scanner
``_ibnetdiscover_scan`` (C, built by the install) when present, else by ``_scan_regex`` (one
possessive regex pass, one split at double quotes), which is its reference; both accept the same
texts and give the same columns. Python work is then done per node header only;
the ``Link`` tuples are built on first read of ``graph.links`` (``DeferredLinks``), while the
switch ends that ``topology.conf`` needs come straight from the switch blocks. Any text outside
that case (stderr lines, quotes in descriptions, missing or repeated records, one-sided
switch-to-switch lines, errors) goes through the line parser below, which is the reference.

Line parser: node headers and port lines are split at their double quotes, the
repeating pieces (``[1]\t``, `` lid 5 4xNDR``) are parsed once and cached, and the pieces parsed
without a cache are checked against their regular expression in one pass per kind at the end
(a line with quotes inside its description falls back to the full line regex). A line that is
not ibnetdiscover output, or looks like a node header or port line but does not parse, raises
``IbnetdiscoverError`` naming the line. The cyclic garbage collector is paused during a parse
(nothing it allocates forms cycles; it would otherwise rescan the growing result repeatedly).
"""

from __future__ import annotations

import gc
import re
from functools import partial
from itertools import compress, count, repeat
from operator import itemgetter, not_

from fabric.parsers.common import ParseError
from fabric.topology.graph import (
    Ca,
    DeferredLinks,
    FabricGraph,
    GraphError,
    LANE_GBPS,
    Link,
    Switch,
    SwitchEnds,
    WIDTH_LANES,
    link_rate,
)

try:  # built by the install when a C compiler is present (setup.py); same results, ~6x faster
    from fabric.parsers._ibnetdiscover_scan import scan as _scan_compiled
except ImportError:  # pragma: no cover - depends on the install
    _scan_compiled = None

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
_STDERR = re.compile(r"^(?:ibwarn:|ibpanic:|ibnetdiscover:|src/\S+\.c:\d+;|\S+\.c:\d+;)")
_SHAPED = re.compile(r"^(?:Switch|Ca|Rt)[ \t]|^\[", re.MULTILINE)
_PORTS_REPORT = re.compile(r"^(?:CA|SW|RT)\s+\d+\s+\d+\s+0x[0-9a-fA-F]+\s")
_MF0 = re.compile(r"^MF0;([^:;]+):[^/]*(?:/([^/]+))?/U\d+$")
_UNSET = re.compile(r"^MT\d+\b")
#: Pieces of a port line split at its double quotes: ``[1](guid) \t`` | ``"id"`` | ``[5]\t\t# lid 9
#: lmc 0 `` | ``"description"`` | `` lid 2 4xNDR``; many at a time, one per line.
_HEADS_BLOCK = re.compile(r"(?:\[\d+\](?:\([0-9a-fA-F]+\))?[ \t]*(?:\n|$))*+")
_MIDS_BLOCK = re.compile(r"(?:\[\d+\](?:\([0-9a-fA-F]+\))?[ \t]*#[ \t]*(?:lid \d+ lmc \d+ )?(?:\n|$))*+")
_TAILS_BLOCK = re.compile(r"(?:[ \t]+lid[ \t]+\d+[ \t]+\d+x[A-Z]+\d*[^\n]*(?:\n|$))*+")
_WIDTH_SPEED = re.compile(r"(\d+x)([A-Z]+\d*)")
_HEADER_HEAD = re.compile(r"(Switch|Ca|Rt)[ \t]+(\d+)[ \t]+")
_HEADER_MID = re.compile(r"[ \t]*#[ \t]*")
_HEADER_MIDS = frozenset({"\t\t# ", " # ", "\t# "})
_HEADS = ("Switch ", "Switch\t", "Ca ", "Ca\t", "Rt ", "Rt\t")
_ALLOWED = ("#", "vendid=", "devid=", "sysimgguid=", "switchguid=", "caguid=", "rtguid=", "Non-Chassis Nodes",
            "Chassis ")
#: Fast path: the whole text, when every line is a well-formed node header or port line
#: without quotes in its description and a known width/speed, an allowed comment/record line or
#: blank (possessive quantifiers: one pass, no backtracking). Anything else takes the line parser.
_FAST_RATE = (r"(?=(?:%s)(?:%s)(?![A-Z\d]))" % ("|".join(sorted(WIDTH_LANES, key=len, reverse=True)),
                                                  "|".join(sorted(LANE_GBPS, key=len, reverse=True))))
_FAST_LINE = (
    r'(?:\[\d++\](?:\([0-9a-fA-F]++\))?+[ \t]*+"[^"\n]++"\[\d++\](?:\([0-9a-fA-F]++\))?+[ \t]*+#[ \t]*+'
    r'(?:lid \d++ lmc \d++ )?+"[^"\n]*+"[ \t]++lid[ \t]++\d++[ \t]++' + _FAST_RATE + r'\d++x[A-Z]++\d*+[^"\n]*+'
    r'|Switch[ \t]++\d++[ \t]++"[^"\n]++"[ \t]*+#[ \t]*+"[^"\n]*+"[^"\n]*+'
    r'|Ca[ \t]++\d++[ \t]++"[^"\n]++"[ \t]*+#[ \t]*+"[^"\n]*+"[^"\n]*+'
    r'|Rt[ \t]++\d++[ \t]++"[^"\n]++"[ \t]*+#[ \t]*+"[^"\n]*+"[^"\n]*+'
    r'|vendid=[^"\n]*+|devid=[^"\n]*+|sysimgguid=[^"\n]*+|switchguid=[^"\n]*+|caguid=[^"\n]*+|rtguid=[^"\n]*+'
    r'|\#[^"\n]*+|Non-Chassis Nodes[^"\n]*+|Chassis [^"\n]*+|[ \t]*+)'
)
_FAST = re.compile(r"(?:%s\n)*+%s" % (_FAST_LINE, _FAST_LINE))
_PLAIN_IDS = re.compile(r"(?:[A-Z]-[0-9a-f]{16}\n)*+")
_WIDTHS = frozenset(WIDTH_LANES)
_SPEEDS = frozenset(LANE_GBPS)
_HEADER_ERROR = 'a node header: Switch|Ca|Rt <ports> "id" # "description"'
_PORT_ERROR = 'a port line: [port] "remote id"[port] # "description" lid N <width><speed>'


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


def _reconcile(links: list[Link], deferred: list[tuple[str, int, str, int, str, str, float]]) -> None:
    """Where the two ends of a link report different widths or speeds (a degraded link, as in
    the 1xSDR lines of the ibnetdiscover man page example), keep the slower of the two."""
    if not deferred or not links or min(d[6] for d in deferred) >= max(link.rate_gbps for link in links):
        return  # no deferred end is slower than any kept link: nothing to lower (the usual case)
    index = {(link.a_guid, link.a_port): i for i, link in enumerate(links)}
    for _, _, remote, rport, width, speed, rate in deferred:
        i = index.get((remote, rport))
        if i is None:
            continue
        link = links[i]
        if (link.width != width or link.speed != speed) and rate < link.rate_gbps:
            links[i] = link._replace(width=width, speed=speed, rate_gbps=rate)


def _bad_line(lines: list[str], line: str, expected: str, got: str | None = None) -> IbnetdiscoverError:
    """The error for ``line``; the scan stops at the first bad line, so its first occurrence is it."""
    return IbnetdiscoverError(lines.index(line) + 1, expected, line if got is None else got)


def _other_line(lines: list[str], line: str, warnings: list[str]) -> None:
    """A line that is neither a node header nor a port line: allowed, a stderr warning, or an error."""
    if not line.strip(" \t") or line.startswith(_ALLOWED):
        return
    if _STDERR.match(line):
        warnings.append(line.strip())
        return
    expected = "ibnetdiscover topology output (node records, # comments)"
    if _PORTS_REPORT.match(line):
        expected = ("plain ibnetdiscover output (this is the -p ports report, which lacks CA node GUIDs; "
                    "rerun ibnetdiscover without -p)")
    raise _bad_line(lines, line, expected)


def _validate(lines: list[str], pieces: list[str], pattern: re.Pattern[str]) -> None:
    """Check in one regex pass the line pieces the scan took apart without a cached parse; on a
    mismatch, find and raise on the first malformed header or port line."""
    if pieces and not pattern.fullmatch("\n".join(pieces)):
        bad = _first_bad_line("\n".join(lines))
        raise bad if bad is not None else IbnetdiscoverError(0, "well-formed ibnetdiscover output")


def parse(text: str) -> FabricGraph:
    """Parse ``ibnetdiscover`` plain output; raise ``IbnetdiscoverError`` naming a bad line."""
    enabled = gc.isenabled()
    gc.disable()  # the parse allocates ~1 M tuples and strings that all live on: no cycles to find
    try:
        graph = _parse_fast(text)
        return _parse(text) if graph is None else graph
    finally:
        if enabled:
            gc.enable()


def _parse_fast(text: str) -> FabricGraph | None:
    """The usual case, in bulk: one scan of the text for its columns (``_scan``), Python work per
    node header only; links are built on first read (``DeferredLinks``), their switch ends are
    given now. None (use the line parser) unless the text is plain well-formed output whose
    every link end names a node with its own record, no node is listed twice, only switches have
    ``S-`` ids, and switch-to-switch port lines are listed from both ends (then the links'
    switch ends are exactly the switch blocks' port lines)."""
    columns = _scan(text)
    if columns is None:
        return None
    ids, headers, kinds, descs = columns
    if ids and (not headers or headers[0] != 0):
        return None
    guid_of = _guids(set(ids))
    if guid_of is None:
        return None
    nodes = _fast_nodes(ids, headers, kinds, descs, guid_of)
    if nodes is None:
        return None
    switches, cas, rows = nodes
    ends = _switch_blocks(ids, headers, rows, guid_of, switches)
    if ends is None:
        return None
    links = DeferredLinks(partial(_build_links, text, guid_of, headers, ends), ends)
    return FabricGraph(switches=_switch_names(switches), cas=cas, links=links, warnings=[])


#: Columns of the bulk path: every quoted line's node id, the quoted-line numbers of the node
#: headers, and each header's (kind, port count) and description.
Columns = tuple[list[str], list[int], list[tuple[str, int]], list[str]]


def _scan(text: str) -> Columns | None:
    """The bulk path's columns, or None if the text is outside its grammar (``_FAST``): by the
    compiled scanner when it is built and the text is ASCII, else by ``_scan_regex``."""
    if _scan_compiled is not None and text.isascii():
        return _scan_compiled(text, _WIDTHS, _SPEEDS)
    return _scan_regex(text)


def _scan_regex(text: str) -> Columns | None:
    """The reference scanner: one possessive regex pass validates the whole text, one split at
    double quotes gives each quoted line's pieces (before, id, middle, description)."""
    if _FAST.fullmatch(text) is None:
        return None
    pieces = text.split('"')
    ids = pieces[1::4]
    headers = list(compress(count(), map(not_, map(str.startswith, pieces[2::4], repeat("[")))))
    if not headers:
        return ids, [], [], []
    heads = [before[before.rfind("\n") + 1:] for before in _pick(pieces[0::4], headers)]
    kind_of = {head: _header_kind(head) for head in set(heads)}
    return ids, headers, list(map(kind_of.__getitem__, heads)), _pick(pieces[3::4], headers)


def _guids(node_ids: set[str]) -> dict[str, str] | None:
    """Node id -> GUID for every id, or None if one is not a GUID (the line parser names it)."""
    if _PLAIN_IDS.fullmatch("\n".join(node_ids) + "\n" if node_ids else ""):
        return {nid: "0x" + nid[2:] for nid in node_ids}  # X-<16 lower-case hex>: already canonical
    guid_of = {nid: _guid(nid) or "" for nid in node_ids}
    return None if "" in guid_of.values() else guid_of


def _pick(items: list[str], positions: list[int]) -> list[str]:
    """``[items[i] for i in positions]``, in C."""
    return [items[positions[0]]] if len(positions) == 1 else list(itemgetter(*positions)(items))


def _fast_nodes(ids: list[str], headers: list[int], kinds: list[tuple[str, int]], descs: list[str],
                guid_of: dict[str, str]) -> tuple[dict[str, Switch], dict[str, Ca], list[int]] | None:
    """Switches, CAs and the switches' rows in ``headers``, from the node headers' columns; None
    if a GUID repeats, an id is not a node header's (no record, or another spelling of a GUID)
    or ``S-`` ids are not switches."""
    if not headers:
        return ({}, {}, []) if not ids else None
    node_ids = _pick(ids, headers)
    guids = list(map(guid_of.__getitem__, node_ids))
    if not len(guid_of) == len(headers) == len(set(guids)):
        return None
    is_switch = [kind == "Switch" for kind, _ in kinds]
    if is_switch != [nid[0] == "S" for nid in node_ids]:
        return None
    rows = list(compress(count(), is_switch))
    switches = {guids[i]: Switch(guids[i], "", descs[i], kinds[i][1]) for i in rows}
    others = list(compress(count(), map(not_, is_switch)))
    return switches, _fast_cas(_pick(guids, others), _pick(descs, others), [kinds[i] for i in others]), rows


def _header_kind(head: str) -> tuple[str, int]:
    """``Switch\t36 `` -> ("Switch", 36), for a head the fast pattern matched."""
    match = _HEADER_HEAD.fullmatch(head)
    assert match is not None
    return match.group(1), int(match.group(2))


def _fast_cas(guids: list[str], descs: list[str], kinds: list[tuple[str, int]]) -> dict[str, Ca]:
    """CAs from their headers' columns; in C when all are ``Ca`` records whose descriptions are
    ``host device`` (else per CA, as ``_ca`` does)."""
    if not guids:
        return {}
    words = list(map(str.split, descs, repeat(None), repeat(1)))
    new = tuple.__new__
    if ({kind for kind, _ in kinds} == {"Ca"} and min(map(len, words)) == 2
            and not any(map(str.startswith, descs, repeat("MT"))) and "Aggregation Node" not in "\n".join(descs)):
        ports = map(itemgetter(1), kinds)
        rows = zip(guids, map(itemgetter(0), words), map(itemgetter(1), words), descs, ports, repeat("hca"))
        return dict(zip(guids, map(new, repeat(Ca), rows)))
    return {guid: _ca(guid, ports, desc, kind) for guid, desc, (kind, ports) in zip(guids, descs, kinds)}


def _switch_blocks(ids: list[str], headers: list[int], rows: list[int], guid_of: dict[str, str],
                   switches: dict[str, Switch]) -> list[SwitchEnds] | None:
    """Each switch (``headers[row]``) and the GUIDs its port lines reach, in order; None unless
    every switch lists each switch that lists it (then these are exactly the links' switch ends)."""
    ends: list[SwitchEnds] = []
    peers: dict[str, set[str]] = {}
    get = guid_of.__getitem__
    is_switch = switches.__contains__
    stops = headers[1:] + [len(ids)]
    for row in rows:
        j = headers[row]
        guid = guid_of[ids[j]]
        remotes = list(map(get, ids[j + 1:stops[row]]))
        ends.append((guid, remotes))
        peers[guid] = set(filter(is_switch, remotes))
    if not all(a in peers[b] for a, bs in peers.items() for b in bs):
        return None
    return ends


def _parse(text: str) -> FabricGraph:
    lines = text.split("\n")
    warnings: list[str] = []
    new = tuple.__new__
    ids: dict[str, str] = {}
    switches: dict[str, Switch] = {}
    cas: dict[str, Ca] = {}
    links: list[Link] = []
    deferred: list[tuple[str, int, str, int, str, str, float]] = []  # lines the other end should report
    # Caches of parsed line pieces (port fields repeat: "[1]\t", " lid 5 4xNDR"); pieces that
    # are parsed without one are collected and checked against their regex in one pass at the end.
    ports: dict[str, int] = {}
    rports: dict[str, int] = {}
    rates: dict[str, tuple[str, str, float]] = {}
    headers: dict[str, tuple[str, int]] = {}
    unchecked_heads: list[str] = []
    unchecked_mids: list[str] = []
    unchecked_tails: list[str] = []
    local = ""
    local_is_switch = False
    for line in lines:
        first = line[:1]
        if first == "[":
            parts = line.split('"')
            if len(parts) == 5:
                head, rid, mid, _, tail = parts
                lport = ports.get(head)
                if lport is None:
                    lport = _port_number(lines, line, head, ports, unchecked_heads)
                rport = rports.get(mid)
                if rport is None:
                    rport = _port_number(lines, line, mid, rports, unchecked_mids)
                rate = rates.get(tail)
                if rate is None:
                    rate = _tail_rate(lines, line, tail, rates, unchecked_tails)
            else:  # quotes inside a description: the full line regex decides
                lport, rid, rport, rate = _quoted_port_line(lines, line)
            if not local:
                raise _bad_line(lines, line, "a node header before port lines", rid)
            remote = ids.get(rid)
            if remote is None:
                remote = ids[rid] = _guid(rid) or ""
                if not remote:
                    raise _bad_line(lines, line, 'a node id such as "S-0002c903000e1000"', rid)
            # Each link is printed from both ends: keep switch-side lines (switch-to-switch once, by
            # order) and defer the rest, which count only if the other end has no record.
            if (local_is_switch and (rid[0] != "S" or (local, lport) < (remote, rport))) or (
                not local_is_switch and rid[0] != "S" and (local, lport) < (remote, rport)
            ):
                links.append(new(Link, (local, lport, remote, rport) + rate))
            else:
                deferred.append((local, lport, remote, rport) + rate)
        elif (first == "S" or first == "C" or first == "R") and line.startswith(_HEADS):
            parts = line.split('"')
            if len(parts) < 5 or not parts[1] or parts[2] not in _HEADER_MIDS and not _HEADER_MID.fullmatch(parts[2]):
                raise _bad_line(lines, line, _HEADER_ERROR)
            kind_ports = headers.get(parts[0])
            if kind_ports is None:
                match = _HEADER_HEAD.fullmatch(parts[0])
                if match is None:
                    raise _bad_line(lines, line, _HEADER_ERROR)
                kind_ports = headers[parts[0]] = (match.group(1), int(match.group(2)))
            nid = parts[1]
            desc = parts[3] if len(parts) == 5 else '"'.join(parts[3:-1])
            guid = ids.get(nid)
            if guid is None:
                guid = ids[nid] = _guid(nid) or ""
                if not guid:
                    raise _bad_line(lines, line, 'a node id such as "S-0002c903000e1000"', nid)
            local = guid
            kind, nports = kind_ports
            local_is_switch = kind == "Switch"
            if local_is_switch:
                switches[guid] = new(Switch, (guid, "", desc, nports))
            elif kind == "Ca" and desc[:2] != "MT" and "Aggregation Node" not in desc:
                words = desc.split(None, 1)
                if len(words) == 2:
                    cas[guid] = new(Ca, (guid, words[0], words[1], desc, nports, "hca"))
                else:
                    cas[guid] = _ca(guid, nports, desc, kind)
            else:
                cas[guid] = _ca(guid, nports, desc, kind)
        elif line and not line.startswith(_ALLOWED):
            _other_line(lines, line, warnings)
    _validate(lines, unchecked_heads, _HEADS_BLOCK)
    _validate(lines, unchecked_mids, _MIDS_BLOCK)
    _validate(lines, unchecked_tails, _TAILS_BLOCK)
    _reconcile(links, deferred)
    missing = {g: i for i, g in ids.items() if g not in switches and g not in cas}
    if missing:
        _add_unlisted("\n" + text, missing, switches, cas)
        for local, lport, remote, rport, width, speed, rate in deferred:
            if remote in missing:
                links.append(Link(local, lport, remote, rport, width, speed, rate))
    return FabricGraph(switches=_switch_names(switches), cas=cas, links=links, warnings=warnings)


class _PortNumbers(dict[str, int]):
    """``"[12"`` -> 12, parsed once per distinct key."""

    def __missing__(self, key: str) -> int:
        value = self[key] = int(key[1:])
        return value


class _Rates(dict[str, tuple[str, str, float]]):
    """``"4xNDR"`` -> ("4x", "NDR", 400.0), parsed once per distinct word."""

    def __missing__(self, key: str) -> tuple[str, str, float]:
        width, speed = _WIDTH_SPEED.match(key).groups()  # type: ignore[union-attr]
        value = self[key] = (width, speed, link_rate(width, speed))
        return value


def _build_links(text: str, guid_of: dict[str, str], headers: list[int], ends: list[SwitchEnds]) -> list[Link]:
    """The links of text that ``_parse_fast`` accepted, as the line parser builds them: one per
    port line kept by the same rule (switch side, else by order), slower end reconciled. The
    rule is decided per line from the node GUIDs (ports only when they tie); port numbers and
    rates are then taken out column-wise for the kept lines, and for the others only if a
    slower end could matter."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        pieces = text.split('"')
        ids = pieces[1::4]
        kept, others = _kept_lines(pieces, ids, headers, ends, guid_of)
        links = list(map(tuple.__new__, repeat(Link), _link_rows(pieces, ids, kept, guid_of)))
        rates = _Rates()
        if others and links:
            words = set(map(itemgetter(2), map(str.split, _tails(pieces, others), repeat(None), repeat(3))))
            if min(rates[w][2] for w in words) < max(link.rate_gbps for link in links):
                _reconcile(links, list(_link_rows(pieces, ids, others, guid_of)))
        return links
    finally:
        if enabled:
            gc.enable()


def _kept_lines(pieces: list[str], ids: list[str], headers: list[int], ends: list[SwitchEnds],
                guid_of: dict[str, str]) -> tuple[list[int], list[int]]:
    """Quoted-line numbers of the port lines whose link is kept, and of the other port lines: a
    switch's line to a non-switch, or to a switch with a higher GUID; a CA's line to a non-switch
    with a higher GUID (the port numbers decide between ends of one node)."""
    switches = {guid for guid, _ in ends}
    blocks = iter(ends)
    kept: list[int] = []
    others: list[int] = []
    for j, stop in zip(headers, headers[1:] + [len(ids)]):
        if ids[j][0] == "S":
            local, remotes = next(blocks)
            for line, remote in enumerate(remotes, j + 1):
                if remote not in switches or local < remote or local == remote and _ports_rise(pieces, line):
                    kept.append(line)
                else:
                    others.append(line)
            continue
        local = guid_of[ids[j]]
        for line in range(j + 1, stop):
            remote = guid_of[ids[line]]
            if ids[line][0] != "S" and (local < remote or local == remote and _ports_rise(pieces, line)):
                kept.append(line)
            else:
                others.append(line)
    return kept, others


def _ports_rise(pieces: list[str], line: int) -> bool:
    """Whether quoted ``line``'s local port is below its remote port."""
    return _port(pieces[4 * line]) < _port(pieces[4 * line + 2])


def _port(piece: str) -> int:
    """The port number of a port line's ``[N]`` piece (its last line, for the piece before it)."""
    head = piece[piece.rfind("\n") + 1:]
    return int(head[1:head.index("]")])


def _tails(pieces: list[str], lines: list[int]) -> list[str]:
    """The text after the last quote of each of quoted ``lines`` (`` lid 5 4xNDR``)."""
    return [] if not lines else list(map(itemgetter(0), map(
        str.partition, _pick(pieces, [4 * j + 4 for j in lines]), repeat("\n"))))


def _link_rows(pieces: list[str], ids: list[str], lines: list[int], guid_of: dict[str, str]
               ) -> "zip[tuple[str, int, str, int, str, str, float]]":
    """(local GUID, local port, remote GUID, remote port, width, speed, rate) of quoted ``lines``."""
    if not lines:
        return zip()
    ports = _PortNumbers()
    heads = map(itemgetter(2), map(str.rpartition, _pick(pieces, [4 * j for j in lines]), repeat("\n")))
    lports = map(ports.__getitem__, map(itemgetter(0), map(str.partition, heads, repeat("]"))))
    rports = map(ports.__getitem__, map(itemgetter(0), map(
        str.partition, _pick(pieces, [4 * j + 2 for j in lines]), repeat("]"))))
    rates = list(map(_Rates().__getitem__, map(itemgetter(2), map(str.split, _tails(pieces, lines), repeat(None), repeat(3)))))
    owners = _owners(pieces, ids, lines, guid_of)
    remotes = map(guid_of.__getitem__, _pick(ids, lines))
    return zip(owners, lports, remotes, rports, map(itemgetter(0), rates), map(itemgetter(1), rates),
               map(itemgetter(2), rates))


def _owners(pieces: list[str], ids: list[str], lines: list[int], guid_of: dict[str, str]) -> list[str]:
    """GUID of the node whose record holds each of quoted ``lines``."""
    owners: list[str] = []
    owner = ""
    last = -1
    for j in lines:
        for k in range(j - 1, last, -1):
            if pieces[4 * k + 2][:1] != "[":
                owner = guid_of[ids[k]]
                break
        last = j
        owners.append(owner)
    return owners


def _quoted_port_line(lines: list[str], line: str) -> tuple[int, str, int, tuple[str, str, float]]:
    """Local port, remote id, remote port and (width, speed, rate) of a port line with more or
    fewer than four double quotes, by the full port line regex."""
    match = _ITEM.match("\n" + line)
    if match is None or match.group(5) is None or match.end() != len(line) + 1:
        raise _bad_line(lines, line, _PORT_ERROR)
    lp, rid, rp, width, speed = match.group(5, 6, 7, 8, 9)
    try:
        return int(lp), rid, int(rp), (width, speed, link_rate(width, speed))
    except GraphError as err:
        raise _bad_line(lines, line, f"a known link width and speed ({err})", width + speed) from None


def _port_number(lines: list[str], line: str, piece: str, cache: dict[str, int], unchecked: list[str]) -> int:
    """The port number of a ``[N]...`` line piece; cached when it repeats (no GUID or LID in it)."""
    try:
        port = int(piece[1:piece.index("]")])
    except ValueError:
        raise _bad_line(lines, line, _PORT_ERROR) from None
    unchecked.append(piece)
    if "(" not in piece and "lid" not in piece:
        cache[piece] = port
    return port


def _tail_rate(lines: list[str], line: str, tail: str, cache: dict[str, tuple[str, str, float]],
               unchecked: list[str]) -> tuple[str, str, float]:
    """Width, speed and rate of a port line's ``lid N <width><speed>`` tail (cached per tail)."""
    words = tail.split(None, 3)
    match = _WIDTH_SPEED.match(words[2]) if len(words) > 2 else None
    if match is None:
        raise _bad_line(lines, line, _PORT_ERROR)
    width, speed = match.groups()
    try:
        rate = cache[tail] = (width, speed, link_rate(width, speed))
    except GraphError as err:
        raise _bad_line(lines, line, f"a known link width and speed ({err})", width + speed) from None
    unchecked.append(tail)
    return rate
