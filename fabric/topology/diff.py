"""Declared vs discovered fabric: the discrepancies a check report lists.

Nodes are matched by name, never by GUID (GUIDs differ between the spec and the hardware):
CAs by ``(host, device)`` from their node description, switches by switch name. Each
declared link is looked up from its CA end (or, for switch-to-switch links, from its first
switch end) and reported as ``missing``, ``miscabled`` (the port reaches another switch or
port), ``wrong_speed`` or ``wrong_width``; discovered links no declared link accounts for
are ``extra``. Compare against ``fabric.topology.ibsim.simulated(declared)`` when the
discovered side is ibsim, whose fastest speed is HDR.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from fabric.graph import FabricGraph, Link

Kind = Literal["missing", "extra", "miscabled", "wrong_speed", "wrong_width"]
#: A node as both sides can name it: ("sw", name), ("ca", host, device) or ("guid", guid).
NodeKey = tuple[str, ...]


class Discrepancy(BaseModel):
    """One difference between the declared and the discovered fabric."""

    model_config = ConfigDict(frozen=True)

    kind: Kind
    switch: str | None
    port: int | None
    host: str | None
    hca: str | None
    expected: str | None
    found: str | None
    message: str


def node_key(graph: FabricGraph, guid: str) -> NodeKey:
    """A node as both graphs name it: a switch by name, a CA by host and device, else (a
    description that is not ``<host> <device>``, as a ``guid:`` cable end) its GUID."""
    sw = graph.switches.get(guid)
    if sw is not None:
        return ("sw", sw.name)
    ca = graph.cas.get(guid)
    if ca is not None and ca.host is not None and ca.device is not None:
        return ("ca", ca.host, ca.device or "")
    return ("guid", guid)


def _label(key: NodeKey) -> str:
    return key[1] if key[0] != "ca" else f"{key[1]} {key[2]}".strip()


def port_ends(graph: FabricGraph) -> dict[tuple[NodeKey, int], tuple[NodeKey, int, Link]]:
    """Each cabled port (node key, port) -> the other end and the link."""
    keys = {g: node_key(graph, g) for g in (*graph.switches, *graph.cas)}
    out: dict[tuple[NodeKey, int], tuple[NodeKey, int, Link]] = {}
    for link in graph.links:
        a = keys.get(link.a_guid, ("guid", link.a_guid))
        b = keys.get(link.b_guid, ("guid", link.b_guid))
        out[(a, link.a_port)] = (b, link.b_port, link)
        out[(b, link.b_port)] = (a, link.a_port, link)
    return out


def _where(
    local: NodeKey, lport: int, remote: NodeKey, rport: int
) -> tuple[str | None, int | None, str | None, str | None]:
    """(switch, switch port, host, hca) of a link seen from ``local``."""
    for end, port, other in ((local, lport, remote), (remote, rport, local)):
        if end[0] == "sw":
            host, hca = (other[1], other[2]) if other[0] == "ca" else (None, None)
            return end[1], port, host, hca
    host, hca = (local[1], local[2]) if local[0] == "ca" else (None, None)
    return None, None, host, hca


def diff(declared: FabricGraph, discovered: FabricGraph) -> list[Discrepancy]:
    """Return every discrepancy between ``declared`` and ``discovered``, declared order first."""
    found_ports = port_ends(discovered)
    matched: set[tuple[NodeKey, int]] = set()
    out: list[Discrepancy] = []
    dkeys = {g: node_key(declared, g) for g in (*declared.switches, *declared.cas)}
    for link in declared.links:
        a, b = dkeys[link.a_guid], dkeys[link.b_guid]
        # Look the link up from its CA end: a miscabled HCA is named by host, not by switch port.
        local, lport, remote, rport = (
            (b, link.b_port, a, link.a_port) if b[0] == "ca" else (a, link.a_port, b, link.b_port)
        )
        switch, sport, host, hca = _where(local, lport, remote, rport)
        want = f"{_label(remote)} port {rport}"
        where = f"{_label(local)} port {lport}"
        seen = found_ports.get((local, lport))
        if seen is None:
            out.append(
                Discrepancy(
                    kind="missing",
                    switch=switch,
                    port=sport,
                    host=host,
                    hca=hca,
                    expected=want,
                    found=None,
                    message=f"missing link: {where} should reach {want} ({link.width}{link.speed}); "
                    "check the cable, both ports' state and the node description",
                )
            )
            continue
        got_node, got_port, got = seen
        matched.add((local, lport))
        matched.add((got_node, got_port))
        if (got_node, got_port) != (remote, rport):
            out.append(
                Discrepancy(
                    kind="miscabled",
                    switch=switch,
                    port=sport,
                    host=host,
                    hca=hca,
                    expected=want,
                    found=f"{_label(got_node)} port {got_port}",
                    message=f"miscabled: {where} reaches {_label(got_node)} port {got_port}, declared "
                    f"{want}; move the cable to {want}",
                )
            )
            continue
        if got.speed != link.speed:
            out.append(
                Discrepancy(
                    kind="wrong_speed",
                    switch=switch,
                    port=sport,
                    host=host,
                    hca=hca,
                    expected=link.speed,
                    found=got.speed,
                    message=f"wrong speed: {where} <-> {want} runs {got.width}{got.speed}, "
                    f"declared {link.width}{link.speed}; check cable type, firmware and port speed settings",
                )
            )
        if got.width != link.width:
            out.append(
                Discrepancy(
                    kind="wrong_width",
                    switch=switch,
                    port=sport,
                    host=host,
                    hca=hca,
                    expected=link.width,
                    found=got.width,
                    message=f"wrong width: {where} <-> {want} runs {got.width}{got.speed}, "
                    f"declared {link.width}{link.speed}; reseat or replace the cable (lanes down)",
                )
            )
    fkeys = {g: node_key(discovered, g) for g in (*discovered.switches, *discovered.cas)}
    for link in discovered.links:
        a, b = (
            fkeys.get(link.a_guid, ("guid", link.a_guid)),
            fkeys.get(link.b_guid, ("guid", link.b_guid)),
        )
        if (a, link.a_port) in matched or (b, link.b_port) in matched:
            continue
        switch, sport, host, hca = _where(a, link.a_port, b, link.b_port)
        text = f"{_label(a)} port {link.a_port} <-> {_label(b)} port {link.b_port}"
        out.append(
            Discrepancy(
                kind="extra",
                switch=switch,
                port=sport,
                host=host,
                hca=hca,
                expected=None,
                found=text,
                message=f"extra link: {text} ({link.width}{link.speed}) is not in the spec; "
                "declare it or unplug it",
            )
        )
    return out
