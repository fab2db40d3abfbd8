"""The line parser: the reference for every ibnetdiscover text, and the path for any text the
bulk path (:mod:`fabric.parsers.ibnetdiscover.fast`) declines.

Node headers and port lines are split at their double quotes, the repeating pieces (``[1]\\t``,
`` lid 5 4xNDR``) are parsed once and cached, and the pieces parsed without a cache are checked
against their regular expression in one pass per kind at the end (a line with quotes inside its
description falls back to the full line regex). A line that is not ibnetdiscover output, or
looks like a node header or port line but does not parse, raises ``IbnetdiscoverError`` naming
the line. Stderr lines mixed into the capture are kept in ``graph.warnings``; nodes that port
lines reach but that have no record of their own (trimmed captures) are added from the port
line's id and description.
"""

from __future__ import annotations

import re

from fabric.graph import Ca, FabricGraph, GraphError, Link, Switch, link_rate
from fabric.parsers.ibnetdiscover.common import (
    _HEADER_HEAD,
    _WIDTH_SPEED,
    IbnetdiscoverError,
    LastRecord,
    _ca,
    _guid,
    _reconcile,
    _switch_names,
    cut_off_error,
    empty_error,
    last_records,
    unrecorded_error,
)

#: Node headers and port lines; groups: kind, ports, id, description | local port, remote id,
#: remote port, width, speed. Lines are matched after a newline (the text gets one prepended):
#: a literal first character lets the regex engine skip ahead quickly.
_ITEM = re.compile(
    r'\n(?:(Switch|Ca|Rt)[ \t]+(\d+)[ \t]+"([^"]+)"[ \t]*#[ \t]*"([^\n]*)"[^\n]*'
    r'|\[(\d+)\](?:\([0-9a-fA-F]+\))?[ \t]*"([^"]+)"\[(\d+)\](?:\([0-9a-fA-F]+\))?'
    r'[ \t]*#[ \t]*(?:lid \d+ lmc \d+ )?"[^\n]*"[ \t]+lid[ \t]+\d+[ \t]+(\d+x)([A-Z]+\d*)[^\n]*)(?=\n|$)'
)
#: A port line's remote id and description (slow path: nodes only port lines mention).
_REMOTE = re.compile(
    r'\n\[\d+\](?:\([0-9a-fA-F]+\))?[ \t]*"([^"]+)"\[\d+\][^#\n]*#[ \t]*(?:lid \d+ lmc \d+ )?"([^\n]*)"[ \t]+lid'
)
_STDERR = re.compile(r"^(?:ibwarn:|ibpanic:|ibnetdiscover:|src/\S+\.c:\d+;|\S+\.c:\d+;)")
_SHAPED = re.compile(r"^(?:Switch|Ca|Rt)[ \t]|^\[", re.MULTILINE)
_PORTS_REPORT = re.compile(r"^(?:CA|SW|RT)\s+\d+\s+\d+\s+0x[0-9a-fA-F]+\s")
#: Pieces of a port line split at its double quotes: ``[1](guid) \t`` | ``"id"`` | ``[5]\t\t# lid 9
#: lmc 0 `` | ``"description"`` | `` lid 2 4xNDR``; many at a time, one per line.
_HEADS_BLOCK = re.compile(r"(?:\[\d+\](?:\([0-9a-fA-F]+\))?[ \t]*(?:\n|$))*+")
_MIDS_BLOCK = re.compile(
    r"(?:\[\d+\](?:\([0-9a-fA-F]+\))?[ \t]*#[ \t]*(?:lid \d+ lmc \d+ )?(?:\n|$))*+"
)
_TAILS_BLOCK = re.compile(r"(?:[ \t]+lid[ \t]+\d+[ \t]+\d+x[A-Z]+\d*[^\n]*(?:\n|$))*+")
_HEADER_MID = re.compile(r"[ \t]*#[ \t]*")
_HEADER_MIDS = frozenset({"\t\t# ", " # ", "\t# "})
_HEADS = ("Switch ", "Switch\t", "Ca ", "Ca\t", "Rt ", "Rt\t")
_ALLOWED = (
    "#",
    "vendid=",
    "devid=",
    "sysimgguid=",
    "switchguid=",
    "caguid=",
    "rtguid=",
    "Non-Chassis Nodes",
    "Chassis ",
)
_HEADER_ERROR = 'a node header: Switch|Ca|Rt <ports> "id" # "description"'
_PORT_ERROR = 'a port line: [port] "remote id"[port] # "description" lid N <width><speed>'


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


def _add_unlisted(
    text: str, missing: dict[str, str], switches: dict[str, Switch], cas: dict[str, Ca]
) -> None:
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


def _bad_line(
    lines: list[str], line: str, expected: str, got: str | None = None
) -> IbnetdiscoverError:
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
        expected = (
            "plain ibnetdiscover output (this is the -p ports report, which lacks CA node GUIDs; "
            "rerun ibnetdiscover without -p)"
        )
    raise _bad_line(lines, line, expected)


def _validate(lines: list[str], pieces: list[str], pattern: re.Pattern[str]) -> None:
    """Check in one regex pass the line pieces the scan took apart without a cached parse; on a
    mismatch, find and raise on the first malformed header or port line."""
    if pieces and not pattern.fullmatch("\n".join(pieces)):
        bad = _first_bad_line("\n".join(lines))
        raise bad if bad is not None else IbnetdiscoverError(0, "well-formed ibnetdiscover output")


def _parse(text: str) -> FabricGraph:
    lines = text.split("\n")
    warnings: list[str] = []
    new = tuple.__new__
    ids: dict[str, str] = {}
    switches: dict[str, Switch] = {}
    cas: dict[str, Ca] = {}
    links: list[Link] = []
    deferred: list[
        tuple[str, int, str, int, str, str, float]
    ] = []  # lines the other end should report
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
            if (
                len(parts) < 5
                or not parts[1]
                or parts[2] not in _HEADER_MIDS
                and not _HEADER_MID.fullmatch(parts[2])
            ):
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
    if not switches and not cas:
        raise empty_error()
    missing = {g: i for i, g in ids.items() if g not in switches and g not in cas}
    _check_whole(text, links + deferred, ids, missing, {**cas, **switches})
    _reconcile(links, deferred)
    if missing:
        _add_unlisted("\n" + text, missing, switches, cas)
        warnings.extend(
            f"{missing[guid]} ({cas[guid].description}) is cabled in but has no record of its "
            "own (a trimmed capture?)"
            for guid in missing
            if guid in cas
        )
        for local, lport, remote, rport, width, speed, rate in deferred:
            if remote in missing:
                links.append(Link(local, lport, remote, rport, width, speed, rate))
    return FabricGraph(switches=_switch_names(switches), cas=cas, links=links, warnings=warnings)


def _check_whole(
    text: str,
    ends: list[tuple[str, int, str, int, str, str, float]],
    ids: dict[str, str],
    missing: dict[str, str],
    nodes: dict[str, Switch | Ca],
) -> None:
    """Refuse a capture cut off at a line boundary, where the text itself says more was coming:
    a capture's last record listing fewer port lines than the other ends list to it (every
    cabled port is printed from both ends; unconnected ports are not printed at all, so a
    record's port count promises nothing), or a switch that port lines name but that has no
    record (ibnetdiscover prints a record for every node it found, switches first). A CA without
    a record is a cut too when a capture ends with a switch record (ibnetdiscover prints the CAs
    after every switch), else only a warning: trimmed captures drop them, and the switch side
    still gives their links."""
    records = {ids[r.nid]: r for r in last_records(text) if r.nid in ids}
    if records:
        _check_last_records(records, ends, ids, nodes)
    ends_on_switch = any(r.is_switch for r in records.values())
    for nid in sorted(missing.values(), key=lambda nid: not nid.startswith("S-")):
        if nid.startswith("S-") or ends_on_switch:
            at = text.find(f'"{nid}"')
            end = text.find("\n", at)
            line = text[text.rfind("\n", 0, at) + 1 : len(text) if end < 0 else end]
            desc = line.rsplit('"', 2)[-2] if line.count('"') >= 4 else ""
            why = (
                ""
                if nid.startswith("S-")
                else " (ibnetdiscover prints the CA records after the switches', and a capture "
                "here ends with a switch record)"
            )
            raise unrecorded_error(text.count("\n", 0, at) + 1, nid, desc, why)


def _check_last_records(
    records: dict[str, LastRecord],
    ends: list[tuple[str, int, str, int, str, str, float]],
    ids: dict[str, str],
    nodes: dict[str, Switch | Ca],
) -> None:
    """Raise if a capture's last record has fewer port lines than port lines name it (the bulk
    path's rule, by count); name the first port its peers list that it lacks."""
    own: dict[str, set[int]] = {guid: set() for guid in records}
    refs: dict[str, list[tuple[str, int, int]]] = {guid: [] for guid in records}
    counts = dict.fromkeys(records, 0)
    for local, lport, remote, rport, *_ in ends:
        if local in own:
            own[local].add(lport)
            counts[local] += 1
        if remote in refs:
            refs[remote].append((local, lport, rport))
    for guid, record in records.items():
        if len(refs[guid]) > counts[guid]:
            gone = [r for r in refs[guid] if r[2] not in own[guid]]
            what = "some ports are listed twice"
            if gone:
                local, lport, rport = gone[0]
                nid = next((n for n, g in ids.items() if g == local), local)
                peer = f'"{nodes[local].description}" ({nid})' if local in nodes else nid
                what = f"port {rport} is missing, which {peer} port {lport} lists"
            raise cut_off_error(record, counts[guid], len(refs[guid]), what)


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
        raise _bad_line(
            lines, line, f"a known link width and speed ({err})", width + speed
        ) from None


def _port_number(
    lines: list[str], line: str, piece: str, cache: dict[str, int], unchecked: list[str]
) -> int:
    """The port number of a ``[N]...`` line piece; cached when it repeats (no GUID or LID in it)."""
    try:
        port = int(piece[1 : piece.index("]")])
    except ValueError:
        raise _bad_line(lines, line, _PORT_ERROR) from None
    unchecked.append(piece)
    if "(" not in piece and "lid" not in piece:
        cache[piece] = port
    return port


def _tail_rate(
    lines: list[str],
    line: str,
    tail: str,
    cache: dict[str, tuple[str, str, float]],
    unchecked: list[str],
) -> tuple[str, str, float]:
    """Width, speed and rate of a port line's ``lid N <width><speed>`` tail (cached per tail)."""
    words = tail.split(None, 3)
    match = _WIDTH_SPEED.match(words[2]) if len(words) > 2 else None
    if match is None:
        raise _bad_line(lines, line, _PORT_ERROR)
    width, speed = match.groups()
    try:
        rate = cache[tail] = (width, speed, link_rate(width, speed))
    except GraphError as err:
        raise _bad_line(
            lines, line, f"a known link width and speed ({err})", width + speed
        ) from None
    unchecked.append(tail)
    return rate
