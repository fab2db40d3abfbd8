"""The fabric graph: switches, channel adapters (CAs) and the links between their ports.

One model for every source: the declared fabric (``from_spec``), the discovered one
(``fabric.parsers.ibnetdiscover``) and the ibsim net file renderer all speak it.
GUIDs are ``0x`` + 16 lower-case hex digits. Link speeds use the IBTA names
(SDR ... XDR); ``rate_gbps`` is width lanes x per-lane signalling rate, as ``ibstat`` reports.
"""

from __future__ import annotations

from functools import cached_property
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

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


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Switch(_Model):
    """An InfiniBand switch."""

    guid: str
    name: str = Field(description="short name: leaf01, or A09-P1-IBLEAF-04-04 from MF0;...:MQM9701/U1")
    description: str = Field(description="the node description as the switch reports it")
    ports: int = Field(ge=1, le=255, description="external port count (port 0 not counted)")


class Ca(_Model):
    """A channel adapter (HCA) or other end node (e.g. a SHARP aggregation node)."""

    guid: str
    host: str | None = Field(description="host name (first word of the description); None if unset")
    device: str | None = Field(description="RDMA device or HCA label, e.g. mlx5_0 or HCA-1")
    description: str
    ports: int = Field(ge=1, le=255)
    kind: Literal["hca", "aggregation", "router"] = "hca"


class PortRef(_Model):
    """One end of a link: a node GUID and a port number."""

    guid: str
    port: int = Field(ge=0, le=255)


class Link(_Model):
    """A cable between two ports."""

    a: PortRef
    b: PortRef
    width: str = Field(description="e.g. 4x")
    speed: str = Field(description="e.g. NDR")
    rate_gbps: float


class LeafLoad(_Model):
    """Down- vs up-link bandwidth of one leaf switch."""

    switch: str
    down_gbps: float
    up_gbps: float
    oversubscription: float | None = Field(description="down/up; None when the leaf has no uplinks")


class FabricGraph(_Model):
    """Switches and CAs keyed by GUID, and the links between them (each link once)."""

    switches: dict[str, Switch] = Field(default_factory=dict)
    cas: dict[str, Ca] = Field(default_factory=dict)
    links: list[Link] = Field(default_factory=list)

    @cached_property
    def ca_by_name(self) -> dict[tuple[str, str], Ca]:
        """CAs with a known host, keyed by (host, device)."""
        return {(c.host, c.device or ""): c for c in self.cas.values() if c.host is not None}

    @cached_property
    def switch_by_name(self) -> dict[str, Switch]:
        """Switches keyed by their short name."""
        return {s.name: s for s in self.switches.values()}

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
            loads.append(LeafLoad(switch=sw.name, down_gbps=down[guid], up_gbps=u, oversubscription=ratio))
        return loads

    def to_networkx(self):  # type: ignore[no-untyped-def]
        """Return a ``networkx.MultiGraph``: node attrs from the models, edge attrs from links."""
        import networkx as nx

        g = nx.MultiGraph()
        for guid, sw in self.switches.items():
            g.add_node(guid, kind="switch", **sw.model_dump(exclude={"guid"}))
        for guid, ca in self.cas.items():
            g.add_node(guid, **ca.model_dump(exclude={"guid"}))
        for link in self.links:
            g.add_edge(link.a.guid, link.b.guid, a_port=link.a.port, b_port=link.b.port,
                       width=link.width, speed=link.speed, rate_gbps=link.rate_gbps)
        return g
