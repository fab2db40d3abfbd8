"""The fabric graph: switches, channel adapters (CAs) and the links between their ports.

One model for every source: the declared fabric (``from_spec``), the discovered one
(``fabric.parsers.ibnetdiscover``) and the ibsim net file renderer all speak it.
GUIDs are ``0x`` + 16 lower-case hex digits. Link speeds use the IBTA names
(SDR ... XDR); ``rate_gbps`` is width lanes x per-lane signalling rate, as ``ibstat`` reports.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal, NamedTuple

#: Gb/s per lane for each IBTA link speed, as ``ibstat`` reports rates (4xNDR = 400).
LANE_GBPS: dict[str, float] = {
    "SDR": 2.5,
    "DDR": 5.0,
    "QDR": 10.0,
    "FDR10": 10.0,
    "FDR": 14.0,
    "EDR": 25.0,
    "HDR": 50.0,
    "NDR": 100.0,
    "XDR": 200.0,
}
#: Number of lanes for each link width.
WIDTH_LANES: dict[str, int] = {"1x": 1, "2x": 2, "4x": 4, "8x": 8, "12x": 12}


class GraphError(ValueError):
    """A fabric graph that cannot be built: names the offending element and the fix."""


def link_rate(width: str, speed: str) -> float:
    """Return the rate in Gb/s of a ``width`` x ``speed`` link (``4x``, ``NDR`` -> 400.0)."""
    try:
        return WIDTH_LANES[width] * LANE_GBPS[speed]
    except KeyError as exc:
        raise GraphError(
            f"unknown link width/speed {width}{speed}: width is one of {sorted(WIDTH_LANES)}, "
            f"speed one of {list(LANE_GBPS)}"
        ) from exc


def speed_for(width: str, rate_gbps: float) -> str:
    """Return the IBTA speed name of a ``width`` link running at ``rate_gbps`` (4x, 400 -> NDR)."""
    lanes = WIDTH_LANES.get(width)
    if lanes is None:
        raise GraphError(f"unknown link width {width!r}; use one of {sorted(WIDTH_LANES)}")
    per_lane = rate_gbps / lanes
    for name, gbps in LANE_GBPS.items():
        if name != "FDR10" and abs(gbps - per_lane) < 1e-9:
            return name
    raise GraphError(
        f"rate {rate_gbps} Gb/s over {width} is {per_lane} Gb/s per lane, not an IBTA speed; "
        f"use one of {', '.join(f'{lanes * g:g}' for n, g in LANE_GBPS.items() if n != 'FDR10')}"
    )


class Switch(NamedTuple):
    """An InfiniBand switch. ``name`` is the short name (``leaf01``, or ``A09-P1-IBLEAF-04-04``
    from ``MF0;A09-P1-IBLEAF-04-04:MQM9701/U1``); ``ports`` the external port count."""

    guid: str
    name: str
    description: str
    ports: int


class Ca(NamedTuple):
    """A channel adapter (HCA), SHARP aggregation node or router.

    ``host`` is the first word of the node description and ``device`` the rest (``mlx5_0``,
    ``HCA-1``); both are None when the description was never set (``MT4129 ConnectX7 Mellanox
    Technologies``) or the node is not a host's HCA (``kind`` ``aggregation``/``router``).
    """

    guid: str
    host: str | None
    device: str | None
    description: str
    ports: int
    kind: Literal["hca", "aggregation", "router"] = "hca"


class PortRef(NamedTuple):
    """One end of a link: a node GUID and a port number."""

    guid: str
    port: int


class Link(NamedTuple):
    """A cable between port ``a_port`` of ``a_guid`` and port ``b_port`` of ``b_guid``."""

    a_guid: str
    a_port: int
    b_guid: str
    b_port: int
    width: str
    speed: str
    rate_gbps: float

    @property
    def a(self) -> PortRef:
        """The first end."""
        return PortRef(self.a_guid, self.a_port)

    @property
    def b(self) -> PortRef:
        """The second end."""
        return PortRef(self.b_guid, self.b_port)


class LeafLoad(NamedTuple):
    """Down- vs up-link bandwidth of one leaf switch; ``oversubscription`` is down/up
    (None when the leaf has no uplinks). A typed tuple: the topology path imports no pydantic."""

    switch: str
    down_gbps: float
    up_gbps: float
    oversubscription: float | None


#: A switch and the GUIDs at the far end of some of its links, in link order.
SwitchEnds = tuple[str, list[str]]


class DeferredLinks:
    """A link list built on first read of ``FabricGraph.links`` (``build()`` returns it).

    ``ends`` is what ``FabricGraph.switch_ends`` returns meanwhile, so a consumer that only needs
    which node each switch is cabled to (``topology.conf``) never builds the Link tuples."""

    __slots__ = ("build", "ends")

    def __init__(self, build: Callable[[], list[Link]], ends: list[SwitchEnds]) -> None:
        self.build = build
        self.ends = ends


class _LinksField:
    """Descriptor behind ``FabricGraph.links``: holds a list, or a ``DeferredLinks`` that is
    replaced by its built list on first read (so later reads and edits see one list)."""

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        if obj is None:
            return None  # the dataclass default: no links
        value = obj.__dict__["_links"]
        if isinstance(value, DeferredLinks):
            value = obj.__dict__["_links"] = value.build()
        return value

    def __set__(self, obj: Any, value: Any) -> None:
        obj.__dict__["_links"] = [] if value is None else value


@dataclass(frozen=True)
class FabricGraph:
    """Switches and CAs keyed by GUID, and the links between them (each link once).

    Plain typed tuples rather than pydantic models: building a 130,000-HCA fabric from pydantic
    models costs seconds (measured ~14 us per validated model here). ``model_dump()`` gives the
    JSON-ready dict that ``python -m fabric parse ibnetdiscover`` prints.
    ``warnings`` holds non-fatal notes from the source (e.g. ibnetdiscover's stderr lines).
    ``links`` may be given as ``DeferredLinks``: they are then built on first read.
    """

    switches: dict[str, Switch] = field(default_factory=dict)
    cas: dict[str, Ca] = field(default_factory=dict)
    links: list[Link] = _LinksField()  # type: ignore[assignment]
    warnings: list[str] = field(default_factory=list)

    def switch_ends(self) -> list[SwitchEnds]:
        """(switch GUID, [GUIDs at the far end]) for every link end on a switch, in link order
        (a switch-to-switch link appears from both ends). Taken from ``DeferredLinks.ends``
        while the links are not built yet, else from ``links``."""
        value = self.__dict__["_links"]
        if isinstance(value, DeferredLinks):
            return value.ends
        switches = self.switches
        ends: list[SwitchEnds] = []
        for link in value:
            if link.a_guid in switches:
                ends.append((link.a_guid, [link.b_guid]))
            if link.b_guid in switches:
                ends.append((link.b_guid, [link.a_guid]))
        return ends

    @cached_property
    def ca_by_name(self) -> dict[tuple[str, str], Ca]:
        """CAs with a known host, keyed by (host, device)."""
        return {(c.host, c.device or ""): c for c in self.cas.values() if c.host is not None}

    @cached_property
    def switch_by_name(self) -> dict[str, Switch]:
        """Switches keyed by their short name."""
        return {s.name: s for s in self.switches.values()}

    @cached_property
    def ca_cables(self) -> dict[tuple[str, str, int], tuple[str, Link, str, int]]:
        """(host, device, CA port) -> (CA GUID, link, switch name, switch port) for every
        host HCA port cabled to a switch: computed once per graph (the HCA ports, the NCCL
        groups and the health configuration all read it; 131,072 cables at 16,384 hosts)."""
        out: dict[tuple[str, str, int], tuple[str, Link, str, int]] = {}
        cas, switches = self.cas, self.switches
        for link in self.links:
            ca, sw = cas.get(link.b_guid), switches.get(link.a_guid)  # the usual orientation
            if ca is not None and sw is not None and ca.host and ca.device:
                out[(ca.host, ca.device, link.b_port)] = (ca.guid, link, sw.name, link.a_port)
            ca, sw = cas.get(link.a_guid), switches.get(link.b_guid)
            if ca is not None and sw is not None and ca.host and ca.device:
                out[(ca.host, ca.device, link.a_port)] = (ca.guid, link, sw.name, link.b_port)
        return out

    def node_name(self, guid: str) -> str:
        """A readable name for node ``guid``: a switch name or ``host/device``."""
        if guid in self.switches:
            return self.switches[guid].name
        ca = self.cas.get(guid)
        if ca is None:
            return guid
        return f"{ca.host}/{ca.device}" if ca.host else f"{ca.description} ({guid})"

    def neighbours(self) -> dict[str, list[tuple[int, str, int, Link]]]:
        """Adjacency: node GUID -> [(local port, remote GUID, remote port, link)]."""
        adj: dict[str, list[tuple[int, str, int, Link]]] = {}
        for link in self.links:
            adj.setdefault(link.a.guid, []).append((link.a.port, link.b.guid, link.b.port, link))
            adj.setdefault(link.b.guid, []).append((link.b.port, link.a.guid, link.a.port, link))
        return adj

    def host_leaves(self) -> dict[str, list[str]]:
        """Host name -> names of the switches its HCAs are cabled to, first-seen order."""
        out: dict[str, list[str]] = {}
        for link in self.links:
            for ca_end, other in ((link.a, link.b), (link.b, link.a)):
                ca = self.cas.get(ca_end.guid)
                sw = self.switches.get(other.guid)
                if ca is None or sw is None or ca.host is None or ca.kind != "hca":
                    continue
                leaves = out.setdefault(ca.host, [])
                if sw.name not in leaves:
                    leaves.append(sw.name)
        return out

    def switch_hops(self, a: str, b: str) -> int | None:
        """Switch-to-switch links on a shortest path from switch ``a`` to switch ``b`` (by
        name): 0 for one switch, 2 across a two-level tree's spine, 4 across a super-spine;
        None when no path joins them."""
        by_name = {sw.name: guid for guid, sw in self.switches.items()}
        start, goal = by_name.get(a), by_name.get(b)
        if start is None or goal is None:
            return None
        adj: dict[str, set[str]] = {}
        for sw, others in self.switch_ends():
            adj.setdefault(sw, set()).update(o for o in others if o in self.switches)
        seen, frontier, hops = {start}, {start}, 0
        while frontier:
            if goal in frontier:
                return hops
            frontier = {n for g in frontier for n in adj.get(g, ())} - seen
            seen |= frontier
            hops += 1
        return None

    def leaf_loads(self) -> list[LeafLoad]:
        """Oversubscription of every switch with CAs attached (down = to CAs, up = to switches)."""
        down: dict[str, float] = {}
        up: dict[str, float] = {}
        for link in self.links:
            for end, other in ((link.a, link.b), (link.b, link.a)):
                if end.guid not in self.switches:
                    continue
                if other.guid in self.cas:
                    down[end.guid] = down.get(end.guid, 0.0) + link.rate_gbps
                elif other.guid in self.switches and other.guid != end.guid:
                    up[end.guid] = up.get(end.guid, 0.0) + link.rate_gbps
        loads = []
        for guid, sw in self.switches.items():
            if guid not in down:
                continue
            u = up.get(guid, 0.0)
            ratio = down[guid] / u if u else None
            loads.append(
                LeafLoad(switch=sw.name, down_gbps=down[guid], up_gbps=u, oversubscription=ratio)
            )
        return loads

    def model_dump(self, mode: str = "python") -> dict[str, object]:
        """A plain dict (JSON-ready): nodes and links as field -> value mappings."""
        del mode  # values are already JSON types
        return {
            "switches": {g: s._asdict() for g, s in self.switches.items()},
            "cas": {g: c._asdict() for g, c in self.cas.items()},
            "links": [link._asdict() for link in self.links],
            "warnings": list(self.warnings),
        }

    def to_networkx(self):  # type: ignore[no-untyped-def]
        """Return a ``networkx.MultiGraph``: node attrs from the models, edge attrs from links."""
        import networkx as nx

        g = nx.MultiGraph()
        for guid, sw in self.switches.items():
            g.add_node(
                guid, kind="switch", name=sw.name, description=sw.description, ports=sw.ports
            )
        for guid, ca in self.cas.items():
            g.add_node(
                guid,
                kind=ca.kind,
                host=ca.host,
                device=ca.device,
                description=ca.description,
                ports=ca.ports,
            )
        for link in self.links:
            g.add_edge(
                link.a_guid,
                link.b_guid,
                a_port=link.a_port,
                b_port=link.b_port,
                width=link.width,
                speed=link.speed,
                rate_gbps=link.rate_gbps,
            )
        return g
