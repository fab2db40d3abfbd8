"""The fabric picture: graphviz DOT drawn in layers, spines on top, then leaves, then hosts
(super-spines above the spines in a three-level tree).

A switch's layer is 1 + its switch hops from the nearest switch with hosts (leaves are 1);
hosts are layer 0, at the bottom. Up to ``SUMMARY_HOSTS`` hosts every HCA and cable is drawn.
Above that the picture is a leaf-level summary: each leaf with its host count and failing
ports, and the links between two switches aggregated into one edge per pair (its cable count,
how many fail); when even the pairs are more than ``MAX_PAIRS``, each upper layer is drawn as
one node. Colours: red where a failing check names the cable, port, host or switch; orange
where a cable's only failure is its error counters (``counters:`` subjects); grey (dashed
cables) what no check named at all, e.g. the hosts ``check --limit`` left out. A legend says
what the colours and a cable's ``P:Q`` label mean, where the master SM is and the rates.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Iterable
from dataclasses import dataclass, field

from fabric.graph import FabricGraph, Link

RED, GREEN, GREY, ORANGE = "#d62728", "#2ca02c", "#7f7f7f", "#ff7f0e"
LINK, SWITCH_FILL = "#444444", "#e8e8e8"
#: Above this many hosts the picture is the leaf-level summary.
SUMMARY_HOSTS = 64
#: Above this many aggregated switch-to-switch edges, each upper layer is one node.
MAX_PAIRS = 600
#: Switches per row in the summary: a wider layer is drawn in several rows.
SUMMARY_ROW = 16
LAYER_NAMES = {1: "leaves", 2: "spines", 3: "super-spines"}
#: Characters per line of the legend.
LEGEND_WIDTH = 90


@dataclass(frozen=True)
class Marks:
    """What failing checks name: hosts, ports (``host/device/port`` or ``switch/port``),
    cables (``a/p-b/q``), switches, and ports whose only failure is error counters."""

    hosts: set[str] = field(default_factory=set)
    ports: set[str] = field(default_factory=set)
    links: set[str] = field(default_factory=set)
    switches: set[str] = field(default_factory=set)
    erring_ports: set[str] = field(default_factory=set)
    #: what any check named (subjects without their ``kind:``); None: everything was checked
    checked: set[str] | None = None

    @classmethod
    def of(cls, subjects: Iterable[str], checked: Iterable[str] | None = None) -> Marks:
        """Marks from failing checks' subjects (``port:``, ``link:``, ``host:``, ``switch:``,
        ``counters:``); ``checked``: the subjects of every check that ran, whatever its
        outcome (None: draw nothing as unchecked)."""
        by: dict[str, set[str]] = {}
        for subject in subjects:
            kind, _, what = subject.partition(":")
            by.setdefault(kind, set()).add(what)
        return cls(
            hosts=by.get("host", set()),
            ports=by.get("port", set()),
            links=by.get("link", set()),
            switches=by.get("switch", set()),
            erring_ports=by.get("counters", set()),
            checked=None if checked is None else {s.partition(":")[2] for s in checked},
        )

    def host_checked(self, host: str) -> bool:
        """Whether any check named ``host`` or one of its ports."""
        if self.checked is None:
            return True
        return host in self.checked or any(s.startswith(f"{host}/") for s in self.checked)


@dataclass(frozen=True)
class Legend:
    """What the picture's legend says beyond colours and labels: the master SM the spec
    expects, and a note on the numbers (a simulated fabric's rates and device names)."""

    master_sm: str | None = None
    note: str | None = None


def layers(graph: FabricGraph) -> dict[str, int]:
    """GUID -> layer: 0 for CAs, 1 for switches with CAs (or every switch when none has
    one), then 1 + hops from the nearest leaf for the switches above."""
    adj: dict[str, set[str]] = {g: set() for g in graph.switches}
    leaves: set[str] = set()
    for sw, others in graph.switch_ends():
        for other in others:
            if other in graph.switches:
                adj[sw].add(other)
            elif other in graph.cas:
                leaves.add(sw)
    out = {g: 0 for g in graph.cas}
    frontier = leaves or set(graph.switches)
    level = 1
    while frontier:
        for g in frontier:
            out[g] = level
        frontier = {n for g in frontier for n in adj[g]} - out.keys()
        level += 1
    for g in graph.switches:  # switches no path joins to a leaf: with the leaves
        out.setdefault(g, 1)
    return out


def _id(name: str) -> str:
    return '"' + name.replace('"', "'") + '"'


def _host(graph: FabricGraph, guid: str) -> str:
    ca = graph.cas[guid]
    return ca.host or ca.guid


class _Judge:
    """Colours of links and nodes from the marks."""

    def __init__(self, graph: FabricGraph, marks: Marks) -> None:
        self.graph, self.marks = graph, marks

    def link(self, link: Link) -> str | None:
        """RED, ORANGE, GREY (no check named it) or None (healthy) for one cable."""
        g, m = self.graph, self.marks
        a, b = g.node_name(link.a_guid), g.node_name(link.b_guid)
        ids = {f"{a}/{link.a_port}-{b}/{link.b_port}", f"{b}/{link.b_port}-{a}/{link.a_port}"}
        ports = {f"{a}/{link.a_port}", f"{b}/{link.b_port}"}
        if ids & m.links or ports & m.ports:
            return RED
        if ports & m.erring_ports:
            return ORANGE
        if m.checked is not None and not (ids | ports) & m.checked:
            return GREY
        return None

    def ca_failed(self, guid: str) -> bool:
        host = _host(self.graph, guid)
        return host in self.marks.hosts or any(p.startswith(f"{host}/") for p in self.marks.ports)

    def ca_color(self, guid: str) -> str:
        """RED (a failing check names it), GREY (no check named it) or GREEN."""
        if self.ca_failed(guid):
            return RED
        return GREEN if self.marks.host_checked(_host(self.graph, guid)) else GREY


def rates(graph: FabricGraph) -> list[str]:
    """``12 cables 4xHDR 200 Gb/s``: the cables of each width, speed and rate."""
    counted: dict[tuple[str, str, float], int] = {}
    for link in graph.links:
        key = (link.width, link.speed, link.rate_gbps)
        counted[key] = counted.get(key, 0) + 1
    return [
        f"{n} cable{'s' * (n != 1)} {width}{speed} {rate:g} Gb/s"
        for (width, speed, rate), n in sorted(counted.items(), key=lambda kv: -kv[1])
    ]


def legend_lines(graph: FabricGraph, legend: Legend | None, detailed: bool = True) -> list[str]:
    """The legend's lines, the same in the picture and under it in report.md."""
    legend = legend or Legend()
    lines = []
    if detailed:
        lines.append(
            "cable label P:Q: port P of the upper switch, port Q of the switch or HCA below"
        )
    lines += [
        "HCA green: its checks passed; red: a failing check names it; grey: not checked",
        "cable dark grey: passed; red: a failing check names it; orange: its error counters rise; "
        "dashed: not checked",
    ]
    if legend.master_sm:
        lines.append(f"master SM (double outline): {legend.master_sm}")
    lines.append("declared rates: " + ", ".join(rates(graph)))
    if legend.note:
        lines.append(legend.note)
    return lines


def _legend(graph: FabricGraph, legend: Legend | None, detailed: bool) -> str:
    """The legend, as left-justified lines of the graph's label under its title (a label of
    the graph, not a node: the layout and graphviz's plain output keep to the fabric)."""
    rows = [
        ("    " if i else "") + chunk
        for line in legend_lines(graph, legend, detailed)
        for i, chunk in enumerate(textwrap.wrap(line, LEGEND_WIDTH))
    ]
    return "".join(f"{_escape(row)}\\l" for row in rows)


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', "'")


def fabric_dot(
    graph: FabricGraph,
    marks: Marks,
    summary_hosts: int = SUMMARY_HOSTS,
    legend: Legend | None = None,
) -> str:
    """Graphviz DOT of ``graph`` in layers, with its legend; the leaf-level summary above
    ``summary_hosts``."""
    hosts = {ca.host or ca.guid for ca in graph.cas.values()}
    if len(hosts) > summary_hosts:
        return _summary(graph, marks, legend)
    return _detailed(graph, marks, legend)


def _head(title: str, legend: str = "") -> list[str]:
    return [
        "graph fabric {",
        f'  label="{title}\\n{legend}"; labelloc=t; labeljust=l; fontname=Helvetica;',
        "  rankdir=TB; newrank=true; splines=true; nodesep=0.25; ranksep=0.9;",
        "  node [fontname=Helvetica fontsize=10]; edge [fontsize=8];",
    ]


def _ranks(by_layer: dict[int, list[str]], per_row: int | None = None) -> list[str]:
    """One ``rank=same`` group per layer, top layer first. With ``per_row``, a layer of more
    nodes is drawn in rows of that many, stacked by invisible edges (still below the layer
    above and above the layer below)."""
    out = []
    for _, names in sorted(by_layer.items(), reverse=True):
        rows = (
            [names[i : i + per_row] for i in range(0, len(names), per_row)] if per_row else [names]
        )
        for row in rows:
            if row:
                out.append(f"  {{ rank=same; {' '.join(_id(n) for n in row)} }}")
        for upper, lower in zip(rows, rows[1:], strict=False):
            out += [
                f"  {_id(a)} -- {_id(b)} [style=invis weight=20];"
                for a, b in zip(upper, lower, strict=False)
            ]
    return out


def _upper_first(layer: dict[str, int], link: Link) -> tuple[str, int, str, int]:
    """(upper guid, its port, lower guid, its port): edges run top to bottom."""
    if layer[link.a_guid] >= layer[link.b_guid]:
        return link.a_guid, link.a_port, link.b_guid, link.b_port
    return link.b_guid, link.b_port, link.a_guid, link.a_port


def _detailed(graph: FabricGraph, marks: Marks, legend: Legend | None = None) -> str:
    layer, judge = layers(graph), _Judge(graph, marks)
    master = legend.master_sm if legend else None
    out = _head(
        f"{len(graph.cas)} HCAs, {len(graph.switches)} switches",
        _legend(graph, legend, detailed=True),
    )
    by_layer: dict[int, list[str]] = {}
    for guid, sw in sorted(graph.switches.items(), key=lambda kv: kv[1].name):
        color = RED if sw.name in marks.switches else GREY
        out.append(
            f'  {_id(sw.name)} [shape=box style=filled fillcolor="{SWITCH_FILL}" color="{color}"];'
        )
        by_layer.setdefault(layer[guid], []).append(sw.name)
    for guid, ca in sorted(graph.cas.items(), key=lambda kv: graph.node_name(kv[0])):
        name = graph.node_name(guid)
        color = judge.ca_color(guid)
        sm = " peripheries=2" if master and _host(graph, guid) == master else ""
        out.append(
            f'  {_id(name)} [label="{_host(graph, guid)}\\n{ca.device or ""}" shape=ellipse color="{color}"{sm}];'
        )
        by_layer.setdefault(0, []).append(name)
    out += _ranks(by_layer)
    for link in graph.links:
        up, up_port, down, down_port = _upper_first(layer, link)
        color = judge.link(link)
        style = (
            f'color="{GREY}" style=dashed penwidth=1.0'
            if color == GREY
            else f'color="{color}" penwidth=2.5'
            if color
            else f'color="{LINK}" penwidth=1.0'
        )
        out.append(
            f"  {_id(graph.node_name(up))} -- {_id(graph.node_name(down))} "
            f'[{style} label="{up_port}:{down_port}"];'
        )
    out.append("}")
    return "\n".join(out) + "\n"


def _summary(graph: FabricGraph, marks: Marks, legend: Legend | None = None) -> str:
    layer, judge = layers(graph), _Judge(graph, marks)
    hosts: dict[str, set[str]] = {}
    failing: dict[str, int] = {}
    erring: dict[str, int] = {}
    pairs: dict[tuple[str, str], list[int]] = {}  # (upper, lower) -> [cables, red, orange]
    for link in graph.links:
        up, _, down, _ = _upper_first(layer, link)
        color = judge.link(link)
        if down in graph.cas:
            hosts.setdefault(up, set()).add(_host(graph, down))
            if color == RED or judge.ca_failed(down):
                failing[up] = failing.get(up, 0) + 1
            elif color == ORANGE:
                erring[up] = erring.get(up, 0) + 1
            continue
        tally = pairs.setdefault((up, down), [0, 0, 0])
        tally[0] += 1
        tally[1] += color == RED
        tally[2] += color == ORANGE
    grouped = len(pairs) > MAX_PAIRS
    drawn = {
        g: (
            f"{LAYER_NAMES.get(layer[g], f'layer {layer[g]}')}"
            if grouped and layer[g] > 1
            else sw.name
        )
        for g, sw in graph.switches.items()
    }
    total_hosts = len({h for hs in hosts.values() for h in hs})
    out = _head(
        f"{total_hosts} hosts, {len(graph.cas)} HCAs, {len(graph.switches)} switches "
        "(leaf-level summary)",
        _legend(graph, legend, detailed=False),
    )
    by_layer: dict[int, list[str]] = {}
    members: dict[str, int] = {}
    for g in graph.switches:
        members[drawn[g]] = members.get(drawn[g], 0) + 1
    written: set[str] = set()
    for g, sw in sorted(graph.switches.items(), key=lambda kv: kv[1].name):
        name = drawn[g]
        if name in written:
            continue
        written.add(name)
        by_layer.setdefault(layer[g], []).append(name)
        if name != sw.name:  # a whole upper layer
            bad = sum(
                drawn[o] == name and x.name in marks.switches for o, x in graph.switches.items()
            )
            label = f"{name}\\n{members[name]} switches" + (f"\\n{bad} failing" if bad else "")
            color = RED if bad else GREY
            out.append(
                f'  {_id(name)} [label="{label}" shape=box3d style=filled fillcolor="{SWITCH_FILL}" color="{color}"];'
            )
            continue
        lines = [sw.name]
        if g in hosts:
            lines.append(f"{len(hosts[g])} hosts")
        if failing.get(g):
            lines.append(f"{failing[g]} failing port{'s' * (failing[g] != 1)}")
        if erring.get(g):
            lines.append(f"{erring[g]} port{'s' * (erring[g] != 1)} with errors")
        color = (
            RED
            if failing.get(g) or sw.name in marks.switches
            else ORANGE
            if erring.get(g)
            else GREY
        )
        width = 2.5 if color != GREY else 1.0
        label = "\\n".join(lines)
        out.append(
            f'  {_id(name)} [label="{label}" shape=box style=filled fillcolor="{SWITCH_FILL}" color="{color}" penwidth={width}];'
        )
    out += _ranks(by_layer, SUMMARY_ROW)
    edges: dict[tuple[str, str], list[int]] = {}
    for (up, down), (cables, red, orange) in pairs.items():
        key = (drawn[up], drawn[down])
        if key[0] == key[1]:
            continue  # cables inside one grouped layer
        tally = edges.setdefault(key, [0, 0, 0])
        tally[0] += cables
        tally[1] += red
        tally[2] += orange
    for (up, down), (cables, red, orange) in sorted(edges.items()):
        color = RED if red else ORANGE if orange else LINK
        label = (
            f"{cables}"
            + (f" ({red} failing)" if red else "")
            + (f" ({orange} with errors)" if orange else "")
        )
        width = 1.0 + math.log2(cables)
        out.append(
            f'  {_id(up)} -- {_id(down)} [color="{color}" penwidth={width:.1f} label="{label}"];'
        )
    out.append("}")
    return "\n".join(out) + "\n"
