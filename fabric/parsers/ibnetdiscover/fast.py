"""The bulk path for the usual case: plain, well-formed ibnetdiscover output.

One scan of the whole text validates it and gives its columns (node ids, node headers' kinds,
port counts and descriptions): by the compiled scanner ``_ibnetdiscover_scan`` (C, this
package's ``_ibnetdiscover_scan.c``, built by ``pip install -e .``) when present, else by
``_scan_regex`` (one possessive regex pass, one split at double quotes), which is its reference;
both accept the same texts and give the same columns. Python work is then done per node header
only; the ``Link`` tuples are built on first read of ``graph.links`` (``DeferredLinks``), while
the switch ends that ``topology.conf`` needs come straight from the switch blocks.

``_parse_fast`` returns None for any text outside that case (stderr lines, quotes in
descriptions, missing or repeated records, one-sided switch-to-switch lines, errors); the
caller then uses the line parser (:mod:`fabric.parsers.ibnetdiscover.lines`), which gives the
same graph for every text this path accepts.
"""

from __future__ import annotations

import re
from collections import Counter
from functools import cache, partial
from itertools import compress, count, repeat
from operator import itemgetter, not_

from fabric.gcpause import gc_paused
from fabric.graph import (
    LANE_GBPS,
    WIDTH_LANES,
    Ca,
    DeferredLinks,
    FabricGraph,
    Link,
    Switch,
    SwitchEnds,
    link_rate,
)
from fabric.parsers.ibnetdiscover.common import (
    _HEADER_HEAD,
    _WIDTH_SPEED,
    _ca,
    _guid,
    _reconcile,
    _switch_names,
    last_records,
)

try:  # built by the install when a C compiler is present (setup.py); same results, ~6x faster
    from fabric.parsers.ibnetdiscover._ibnetdiscover_scan import scan as _scan_compiled
except ImportError:  # pragma: no cover - depends on the install
    _scan_compiled = None

#: Fast path: the whole text, when every line is a well-formed node header or port line
#: without quotes in its description and a known width/speed, an allowed comment/record line or
#: blank (possessive quantifiers: one pass, no backtracking). Anything else takes the line parser.
_FAST_RATE = r"(?=(?:{})(?:{})(?![A-Z\d]))".format(
    "|".join(sorted(WIDTH_LANES, key=len, reverse=True)),
    "|".join(sorted(LANE_GBPS, key=len, reverse=True)),
)
_FAST_LINE = (
    r'(?:\[\d++\](?:\([0-9a-fA-F]++\))?+[ \t]*+"[^"\n]++"\[\d++\](?:\([0-9a-fA-F]++\))?+[ \t]*+#[ \t]*+'
    r'(?:lid \d++ lmc \d++ )?+"[^"\n]*+"[ \t]++lid[ \t]++\d++[ \t]++'
    + _FAST_RATE
    + r'\d++x[A-Z]++\d*+[^"\n]*+'
    r'|Switch[ \t]++\d++[ \t]++"[^"\n]++"[ \t]*+#[ \t]*+"[^"\n]*+"[^"\n]*+'
    r'|Ca[ \t]++\d++[ \t]++"[^"\n]++"[ \t]*+#[ \t]*+"[^"\n]*+"[^"\n]*+'
    r'|Rt[ \t]++\d++[ \t]++"[^"\n]++"[ \t]*+#[ \t]*+"[^"\n]*+"[^"\n]*+'
    r'|vendid=[^"\n]*+|devid=[^"\n]*+|sysimgguid=[^"\n]*+|switchguid=[^"\n]*+|caguid=[^"\n]*+|rtguid=[^"\n]*+'
    r'|\#[^"\n]*+|Non-Chassis Nodes[^"\n]*+|Chassis [^"\n]*+|[ \t]*+)'
)


@cache
def _fast() -> re.Pattern[str]:
    """The whole-text pattern, compiled on the regex scanner's first use (not at import)."""
    return re.compile(rf"(?:{_FAST_LINE}\n)*+{_FAST_LINE}")


_PLAIN_IDS = re.compile(r"(?:[A-Z]-[0-9a-f]{16}\n)*+")
_WIDTHS = frozenset(WIDTH_LANES)
_SPEEDS = frozenset(LANE_GBPS)


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
    if not headers or headers[0] != 0 or not _whole(text, ids, headers):
        return None  # no node at all, or a capture cut off: the line parser says which
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


def _whole(text: str, ids: list[str], headers: list[int]) -> bool:
    """Whether the last record of every capture lists as many port lines as there are port lines
    naming it (every cabled port is printed from both ends): else the text was cut off."""
    records = last_records(text)
    stops = headers[1:] + [len(ids)]
    if len(records) == 1 and ids[headers[-1]] == records[0].nid:  # one capture: its last header
        return stops[-1] - headers[-1] == ids.count(records[0].nid)  # own lines + header
    targets = {r.nid for r in records}
    refs = Counter(filter(targets.__contains__, ids))
    heads = _pick(ids, headers)
    for record in records:
        try:
            k = heads.index(record.nid)
        except ValueError:
            return False
        if stops[k] - headers[k] != refs[record.nid]:
            return False
    return True


#: Columns of the bulk path: every quoted line's node id, the quoted-line numbers of the node
#: headers, and each header's (kind, port count) and description.
Columns = tuple[list[str], list[int], list[tuple[str, int]], list[str]]


def _scan(text: str) -> Columns | None:
    """The bulk path's columns, or None if the text is outside its grammar (``_fast()``): by the
    compiled scanner when it is built and the text is ASCII, else by ``_scan_regex``."""
    if _scan_compiled is not None and text.isascii():
        return _scan_compiled(text, _WIDTHS, _SPEEDS)
    return _scan_regex(text)


def _scan_regex(text: str) -> Columns | None:
    """The reference scanner: one possessive regex pass validates the whole text, one split at
    double quotes gives each quoted line's pieces (before, id, middle, description)."""
    if _fast().fullmatch(text) is None:
        return None
    pieces = text.split('"')
    ids = pieces[1::4]
    headers = list(compress(count(), map(not_, map(str.startswith, pieces[2::4], repeat("[")))))
    if not headers:
        return ids, [], [], []
    heads = [before[before.rfind("\n") + 1 :] for before in _pick(pieces[0::4], headers)]
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
    if len(positions) < 2:
        return [items[positions[0]]] if positions else []
    return list(itemgetter(*positions)(items))


def _fast_nodes(
    ids: list[str],
    headers: list[int],
    kinds: list[tuple[str, int]],
    descs: list[str],
    guid_of: dict[str, str],
) -> tuple[dict[str, Switch], dict[str, Ca], list[int]] | None:
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
    return (
        switches,
        _fast_cas(_pick(guids, others), _pick(descs, others), [kinds[i] for i in others]),
        rows,
    )


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
    if (
        {kind for kind, _ in kinds} == {"Ca"}
        and min(map(len, words)) == 2
        and not any(map(str.startswith, descs, repeat("MT")))
        and "Aggregation Node" not in "\n".join(descs)
    ):
        ports = map(itemgetter(1), kinds)
        rows = zip(
            guids, map(itemgetter(0), words), map(itemgetter(1), words), descs, ports, repeat("hca")
        )
        return dict(zip(guids, map(new, repeat(Ca), rows), strict=False))
    return {
        guid: _ca(guid, ports, desc, kind)
        for guid, desc, (kind, ports) in zip(guids, descs, kinds, strict=False)
    }


def _switch_blocks(
    ids: list[str],
    headers: list[int],
    rows: list[int],
    guid_of: dict[str, str],
    switches: dict[str, Switch],
) -> list[SwitchEnds] | None:
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
        remotes = list(map(get, ids[j + 1 : stops[row]]))
        ends.append((guid, remotes))
        peers[guid] = set(filter(is_switch, remotes))
    lookup = peers.__getitem__
    for a, bs in peers.items():  # inner test in C: ``a`` among the peers of each of its peers
        if not all(map(set.__contains__, map(lookup, bs), repeat(a))):
            return None
    return ends


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


def _build_links(
    text: str, guid_of: dict[str, str], headers: list[int], ends: list[SwitchEnds]
) -> list[Link]:
    """The links of text that ``_parse_fast`` accepted, as the line parser builds them: one per
    port line kept by the same rule (switch side, else by order), slower end reconciled. The
    rule is decided per line from the node GUIDs (ports only when they tie); port numbers and
    rates are then taken out column-wise for the kept lines, and for the others only if a
    slower end could matter."""
    with gc_paused():
        pieces = text.split('"')
        ids = pieces[1::4]
        kept, others = _kept_lines(pieces, ids, headers, ends, guid_of)
        links = list(map(tuple.__new__, repeat(Link), _link_rows(pieces, ids, kept, guid_of)))
        rates = _Rates()
        if others and links:
            words = set(
                map(itemgetter(2), map(str.split, _tails(pieces, others), repeat(None), repeat(3)))
            )
            if min(rates[w][2] for w in words) < max(link.rate_gbps for link in links):
                _reconcile(links, list(_link_rows(pieces, ids, others, guid_of)))
        return links


def _kept_lines(
    pieces: list[str],
    ids: list[str],
    headers: list[int],
    ends: list[SwitchEnds],
    guid_of: dict[str, str],
) -> tuple[list[int], list[int]]:
    """Quoted-line numbers of the port lines whose link is kept, and of the other port lines: a
    switch's line to a non-switch, or to a switch with a higher GUID; a CA's line to a non-switch
    with a higher GUID (the port numbers decide between ends of one node)."""
    switches = {guid for guid, _ in ends}
    blocks = iter(ends)
    kept: list[int] = []
    others: list[int] = []
    for j, stop in zip(headers, headers[1:] + [len(ids)], strict=False):
        if ids[j][0] == "S":
            local, remotes = next(blocks)
            for line, remote in enumerate(remotes, j + 1):
                if (
                    remote not in switches
                    or local < remote
                    or local == remote
                    and _ports_rise(pieces, line)
                ):
                    kept.append(line)
                else:
                    others.append(line)
            continue
        local = guid_of[ids[j]]
        for line in range(j + 1, stop):
            remote = guid_of[ids[line]]
            if ids[line][0] != "S" and (
                local < remote or local == remote and _ports_rise(pieces, line)
            ):
                kept.append(line)
            else:
                others.append(line)
    return kept, others


def _ports_rise(pieces: list[str], line: int) -> bool:
    """Whether quoted ``line``'s local port is below its remote port."""
    return _port(pieces[4 * line]) < _port(pieces[4 * line + 2])


def _port(piece: str) -> int:
    """The port number of a port line's ``[N]`` piece (its last line, for the piece before it)."""
    head = piece[piece.rfind("\n") + 1 :]
    return int(head[1 : head.index("]")])


def _tails(pieces: list[str], lines: list[int]) -> list[str]:
    """The text after the last quote of each of quoted ``lines`` (`` lid 5 4xNDR``)."""
    return (
        []
        if not lines
        else list(
            map(
                itemgetter(0),
                map(str.partition, _pick(pieces, [4 * j + 4 for j in lines]), repeat("\n")),
            )
        )
    )


def _link_rows(
    pieces: list[str], ids: list[str], lines: list[int], guid_of: dict[str, str]
) -> zip[tuple[str, int, str, int, str, str, float]]:
    """(local GUID, local port, remote GUID, remote port, width, speed, rate) of quoted ``lines``."""
    if not lines:
        return zip()
    ports = _PortNumbers()
    heads = map(
        itemgetter(2), map(str.rpartition, _pick(pieces, [4 * j for j in lines]), repeat("\n"))
    )
    lports = map(ports.__getitem__, map(itemgetter(0), map(str.partition, heads, repeat("]"))))
    rports = map(
        ports.__getitem__,
        map(
            itemgetter(0),
            map(str.partition, _pick(pieces, [4 * j + 2 for j in lines]), repeat("]")),
        ),
    )
    rates = list(
        map(
            _Rates().__getitem__,
            map(itemgetter(2), map(str.split, _tails(pieces, lines), repeat(None), repeat(3))),
        )
    )
    owners = _owners(pieces, ids, lines, guid_of)
    remotes = map(guid_of.__getitem__, _pick(ids, lines))
    return zip(
        owners,
        lports,
        remotes,
        rports,
        map(itemgetter(0), rates),
        map(itemgetter(1), rates),
        map(itemgetter(2), rates),
        strict=False,
    )


def _owners(
    pieces: list[str], ids: list[str], lines: list[int], guid_of: dict[str, str]
) -> list[str]:
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
