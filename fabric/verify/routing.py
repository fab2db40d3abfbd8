"""The ``routing`` family's judging: the switches' forwarding tables against the fat tree.

Pure functions over parsed tool output, no SSH. Inputs: every switch's unicast LFT
(``dump_fts``/``ibroute``, :mod:`fabric.parsers.ibroute`), the discovered fabric
(``ibnetdiscover``), the declared fabric (its switch levels, inferred from its cables
alone: 0 for a switch with hosts, then the distance in switch hops from the nearest one, so
leaves 0, spines 1, super-spines 2 in a fat tree, and any cabling, an imported one, levels the
same way: :func:`switch_levels`) and, where railyard runs the SM, OpenSM's log
(:mod:`fabric.parsers.opensm_log`).

Routes are destination-based, so every source host on one switch follows the same path to a
destination LID: the judge walks each destination's tree once per switch (memoised), not once
per host pair, and counts pairs by the number of source hosts on each switch. For each
destination LID owned by a host's HCA it checks, from every switch with hosts:

* the route arrives (no missing entry, no port without a cable, no loop);
* it is up/down in the declared tree (up-links, then down-links, never down then up, never
  across a level, save over a same-level cable the declared fabric has: that one is oriented
  by name) and minimal (as many switch hops as the shortest path in the discovered fabric).

Load: each switch-to-switch port carries the host pairs whose route leaves through it. Ports
of one switch facing the same way (a leaf's up-links, a spine's down-links) are peers; a port
fails above ``imbalance`` times its peers' mean, unless no spread could do better: a
destination-based table cannot split one entry's routes, so a port may carry the mean rounded
up to whole entries of the group's largest (5 hosts per leaf over 4 up-links put 2 of 5 LIDs
on one port, 1.6x the mean, as evenly as possible). The worst-loaded port is always named.
A LID belongs to the host the tool names for it (``dump_fts`` without ``-n``), else to the HCA
some switch delivers it to.
"""

from __future__ import annotations

import math
import shlex
from collections import deque
from dataclasses import dataclass, field
from itertools import compress
from operator import attrgetter

from fabric.graph import FabricGraph
from fabric.parsers.common import ParseError
from fabric.parsers.ibroute import IbrouteReport
from fabric.parsers.ibroute import parse as parse_ibroute
from fabric.parsers.opensm_log import OpensmLogReport
from fabric.parsers.opensm_log import parse as parse_opensm_log
from fabric.verify.sweep import Run, SweepConfig, SweepError, discover

#: Examples of failing host pairs shown in one message.
SHOWN = 5
#: Where the subnet_manager role has OpenSM log (``subnet_manager_log_file``).
OPENSM_LOG = "/var/log/opensm.log"
#: The log lines a routing pass is judged from (grepped, so a long log costs little).
LOG_PATTERN = (
    "tables configured on all switches|No routing engine able|cannot build|fat-tree|"
    "[Ff]alling back|Failed ranking|no valid compute nodes|Fabric rank is| ERR |-> OpenSM "
)


class RoutingHarnessError(RuntimeError):
    """A tool could not read the tables or the log: the harness's problem, not the fabric's."""


#: The discovery cache on the host (not the sweep's: both may run there at once).
CACHE = "/tmp/railyard-routing.cache"
#: Runs of a table or discovery tool before its failure is the harness's: under load ibsim
#: drops MADs ("discover failed"), so each retry waits 4x longer for each MAD.
ATTEMPTS = 3


def read_tables(
    run: Run, timeout_s: float = 120.0, mad_timeout_ms: int = 200, attempts: int = ATTEMPTS
) -> IbrouteReport:
    """Every switch's LFT: ``dump_fts -n`` (no destination names: at 2,048 hosts the named
    output is 15.6 MB, the plain one 2.5 MB; each LID's host is the HCA a switch delivers it
    to)."""
    why = "not run"
    for attempt in range(attempts):
        timeout_ms = mad_timeout_ms * 4**attempt
        done = run(["dump_fts", "-n", "-t", str(timeout_ms)], timeout_s)
        if done.rc != 0:
            last = (done.stderr.strip().splitlines() or ["no output"])[-1]
            why = f"exit {done.rc}: {last[:200]}"
            continue
        try:
            report = parse_ibroute(done.stdout + done.stderr)
        except ParseError as err:
            why = f"unreadable output: {err}"
            continue
        if report.ok:
            return report
        why = report.reason or "no tables"
    raise RoutingHarnessError(f"dump_fts failed {attempts} times: {why}")


def read_fabric(
    run: Run, timeout_s: float = 120.0, mad_timeout_ms: int = 200, attempts: int = ATTEMPTS
) -> FabricGraph:
    """The discovered fabric: the sweep's discovery (``fabric.verify.sweep.discover``: reruns
    with longer MAD timeouts), with a cache file of its own on the host."""
    config = SweepConfig(
        timeout_ms=mad_timeout_ms, attempts=attempts, tool_timeout_s=timeout_s, cache=CACHE
    )
    try:
        return discover(run, config)[0]
    except SweepError as err:
        raise RoutingHarnessError(str(err)) from None


def read_log(run: Run, path: str = OPENSM_LOG, timeout_s: float = 60.0) -> OpensmLogReport:
    """The routing lines of OpenSM's log at ``path`` (its last 2,000; through ``sudo -n`` when
    the login cannot read the file)."""
    pattern, file = shlex.quote(LOG_PATTERN), shlex.quote(path)
    command = (  # a log only root reads (a site's login is not root): sudo, never a password
        f"if [ -r {file} ]; then grep -E {pattern} {file}; "
        f"else sudo -n grep -E {pattern} {file}; fi | tail -n 2000"
    )
    done = run(["sh", "-c", command], timeout_s)
    if done.rc != 0 or done.stderr.strip():
        why = (done.stderr.strip().splitlines() or [f"exit {done.rc}"])[-1]
        raise RoutingHarnessError(f"OpenSM's log {path}: {why[:200]}")
    if not done.stdout.strip():
        return OpensmLogReport()  # no routing line logged yet
    try:
        return parse_opensm_log(done.stdout)
    except ParseError as err:
        raise RoutingHarnessError(f"OpenSM's log {path}: unreadable: {err}") from None


@dataclass(frozen=True)
class PortLoad:
    """Host pairs routed out of one switch-to-switch port, against its peers' mean."""

    switch: str
    port: int
    peer: str
    direction: str  # "up" or "down"
    routes: int
    mean: float
    #: The most host pairs one forwarding-table entry sends through a port of this group: a
    #: destination-based table cannot split them, so no port need carry less than the mean
    #: rounded up to whole entries (5 hosts per leaf over 4 up-links: 2 of 5 LIDs on one port).
    chunk: int = 0

    @property
    def ratio(self) -> float:
        """Routes over the peers' mean (0 when the group carries nothing)."""
        return self.routes / self.mean if self.mean else 0.0

    def line(self) -> str:
        """``leaf01 p5 (up to spine02): 96 routes, 1.50x the mean 64.0 of its 4 peers``."""
        return (
            f"{self.switch} p{self.port} ({self.direction} to {self.peer}): {self.routes} routes, "
            f"{self.ratio:.2f}x the mean {self.mean:.1f} of its {self.direction}-link peers"
            f" (one table entry moves up to {self.chunk})"
        )

    @property
    def floor(self) -> int:
        """The least a port of this group can carry at most when every table entry moves
        ``chunk`` routes: the mean rounded up to whole entries."""
        return math.ceil(self.mean / self.chunk - 1e-9) * self.chunk if self.chunk else 0

    def over(self, imbalance: float) -> bool:
        """Above ``imbalance`` x the mean, and above the most even spread of whole entries."""
        return self.ratio > imbalance and self.routes > self.floor


@dataclass
class RouteVerdict:
    """What the forwarding tables show."""

    hosts: int = 0
    lids: int = 0
    pairs: int = 0
    unrouted: list[str] = field(default_factory=list)
    broken: list[str] = field(default_factory=list)
    broken_pairs: int = 0
    not_updown: list[str] = field(default_factory=list)
    not_updown_pairs: int = 0
    not_minimal: list[str] = field(default_factory=list)
    not_minimal_pairs: int = 0
    loads: list[PortLoad] = field(default_factory=list)
    missing_tables: list[str] = field(default_factory=list)
    #: Switch name -> its own LID (the entry forwarding to port 0).
    switch_lids: dict[str, int] = field(default_factory=dict)
    #: HCA (``host/device``) -> the LIDs delivered to it.
    hca_lids: dict[str, list[int]] = field(default_factory=dict)

    @property
    def worst(self) -> PortLoad | None:
        """The port with the highest load over its peers' mean."""
        return max(self.loads, key=lambda p: (p.ratio, p.routes), default=None)

    def over(self, imbalance: float) -> list[PortLoad]:
        """Ports above ``imbalance`` times their peers' mean, worst first."""
        return sorted((p for p in self.loads if p.over(imbalance)), key=lambda p: -p.ratio)

    @property
    def all_updown(self) -> bool:
        """Every pair arrives over a minimal up/down route."""
        return not (
            self.unrouted or self.broken_pairs or self.not_updown_pairs or self.not_minimal_pairs
        )


def host_switches(graph: FabricGraph) -> set[str]:
    """GUIDs of the switches with a host's HCA cabled: the bottom level. A CA with no host
    (a node description never set, a SHARP aggregation node) does not make a leaf."""
    hcas = {g for g, ca in graph.cas.items() if ca.kind == "hca" and ca.host}
    a_end = list(map(attrgetter("a_guid"), graph.links))
    b_end = list(map(attrgetter("b_guid"), graph.links))
    return {  # C-level selections: a Python test per link end took 0.2 s at 16,384 hosts
        *compress(a_end, map(hcas.__contains__, b_end)),
        *compress(b_end, map(hcas.__contains__, a_end)),
    } & graph.switches.keys()


def switch_levels(graph: FabricGraph) -> dict[str, int]:
    """Switch name -> level, inferred from the cables alone: 0 for a switch with a host's HCA
    cabled, then its distance in switch hops from the nearest such switch (BFS). A switch no
    host-bearing switch reaches has no level (it is not in the result)."""
    leaves = host_switches(graph)
    adj: dict[str, set[str]] = {}
    for sw, others in graph.switch_ends():
        adj.setdefault(sw, set()).update(o for o in others if o in graph.switches)
    level = dict.fromkeys(sorted(leaves), 0)
    queue = deque(level)
    while queue:
        sw = queue.popleft()
        for nxt in sorted(adj.get(sw, ())):
            if nxt not in level:
                level[nxt] = level[sw] + 1
                queue.append(nxt)
    return {graph.switches[s].name: v for s, v in level.items()}


def unjudged_levels(graph: FabricGraph) -> str | None:
    """Why the routes over ``graph`` cannot be judged up/down, or None when they can: the
    levels count from the hosts, so the fabric needs a switch with a host's HCA cabled."""
    if not graph.switches:
        return "the declared fabric holds no switch: no forwarding table to judge"
    if not host_switches(graph):
        return (
            f"no host's HCA is cabled to any of the declared fabric's {len(graph.switches)} "
            "switches (a switch-only capture or cabling): switch levels count from the hosts, "
            "so no route is judgeable"
        )
    return None


def _levels(graph: FabricGraph, declared: FabricGraph | None) -> dict[str, int]:
    """Switch GUID (discovered) -> level: the declared fabric's (:func:`switch_levels`: 0 for
    a switch with hosts, then the distance in switch hops from the nearest one). A switch the
    declared fabric does not name, or does not level, takes its level in the discovered
    fabric."""
    found = switch_levels(graph)
    named = switch_levels(declared) if declared is not None else {}
    return {guid: named.get(sw.name, found.get(sw.name, 0)) for guid, sw in graph.switches.items()}


def _level_peers(declared: FabricGraph | None) -> set[frozenset[str]]:
    """Pairs of switch names the declared fabric cables together on one level (two leaves
    cabled to each other in a single-level fabric): a route may cross such a cable."""
    if declared is None:
        return set()
    levels = switch_levels(declared)
    out: set[frozenset[str]] = set()
    for link in declared.links:
        a, b = declared.switches.get(link.a_guid), declared.switches.get(link.b_guid)
        if a and b and a.name != b.name and levels.get(a.name, -1) == levels.get(b.name, -2):
            out.add(frozenset((a.name, b.name)))
    return out


def _switch_distances(graph: FabricGraph, sources: list[str]) -> dict[str, dict[str, int]]:
    """Shortest switch-hop distances from each of ``sources`` to every switch."""
    adj: dict[str, set[str]] = {}
    for sw, others in graph.switch_ends():
        adj.setdefault(sw, set()).update(o for o in others if o in graph.switches)
    out: dict[str, dict[str, int]] = {}
    for src in sources:
        dist = {src: 0}
        queue = deque([src])
        while queue:
            sw = queue.popleft()
            for nxt in adj.get(sw, ()):
                if nxt not in dist:
                    dist[nxt] = dist[sw] + 1
                    queue.append(nxt)
        out[src] = dist
    return out


def judge_routes(
    lfts: IbrouteReport, discovered: FabricGraph, declared: FabricGraph | None = None
) -> RouteVerdict:
    """Judge every host pair's route and every switch port's load (module docstring).

    Switches and HCAs are numbered and the tables held as lists indexed by LID, so the walk
    per destination is list indexing (measured in bench/routing)."""
    verdict = RouteVerdict()
    guids = list(discovered.switches)
    index = {g: i for i, g in enumerate(guids)}
    n_sw = len(guids)
    name = [discovered.switches[g].name for g in guids]
    hca_guids = [g for g, c in discovered.cas.items() if c.kind == "hca" and c.host]
    hca_index = {g: n_sw + i for i, g in enumerate(hca_guids)}
    verdict.hosts = len({discovered.cas[g].host for g in hca_guids})

    def node_name(code: int) -> str:
        return name[code] if code < n_sw else discovered.node_name(hca_guids[code - n_sw])

    # nb[s][port]: the node at the far end (switch index, n_sw + HCA index, -1 none, -2 other)
    nb: list[dict[int, int]] = [{} for _ in guids]
    below = [0] * n_sw
    for link in discovered.links:
        for a, ap, b in (
            (link.a_guid, link.a_port, link.b_guid),
            (link.b_guid, link.b_port, link.a_guid),
        ):
            i = index.get(a)
            if i is None:
                continue
            code = index.get(b, hca_index.get(b, -2))
            nb[i][ap] = code
            if code >= n_sw:
                below[i] += 1
    by_guid = {t.guid: t for t in lfts.switches}
    verdict.missing_tables = sorted(name[i] for i, g in enumerate(guids) if g not in by_guid)
    max_lid = max((max(t.ports, default=0) for t in lfts.switches), default=0)
    tbl: list[list[int]] = []
    for g in guids:
        row = [-1] * (max_lid + 1)
        t = by_guid.get(g)
        if t is not None:
            for lid, port in t.ports.items():
                row[lid] = port
        tbl.append(row)
    # Destination LIDs: named by the tool, else the HCA a switch delivers them to.
    by_name = discovered.ca_by_name
    owner: dict[int, int] = {}
    for t in lfts.switches:
        for lid, (kind, _guid, desc) in t.destinations.items():
            if kind == "Channel Adapter":
                host, _, device = desc.partition(" ")
                ca = by_name.get((host, device))
                if ca is not None and ca.guid in hca_index:
                    owner.setdefault(lid, hca_index[ca.guid])
    for i in range(n_sw):
        if not below[i]:
            continue
        peers = nb[i]
        for lid, port in enumerate(tbl[i]):
            if port > 0 and lid not in owner and peers.get(port, -1) >= n_sw:
                owner[lid] = peers[port]
    verdict.unrouted = sorted(node_name(c) for c in set(hca_index.values()) - set(owner.values()))
    for lid, code in sorted(owner.items()):
        verdict.hca_lids.setdefault(node_name(code), []).append(lid)
    for t in lfts.switches:
        own = next((lid for lid, port in t.ports.items() if port == 0), None)
        if own is not None:
            verdict.switch_lids[t.name] = own
    verdict.lids = len(owner)
    lv = _levels(discovered, declared)
    level = [lv[g] for g in guids]
    # A same-level cable the declared fabric has (leaves cabled to each other) is oriented by
    # name, as up/down routing orders switches of one rank: up towards the greater name.
    at = {name[i]: i for i in range(n_sw)}
    up_across = {
        (at[a], at[b])
        for a, b in (sorted(pair) for pair in _level_peers(declared))
        if a in at and b in at and level[at[a]] == level[at[b]]
    }
    sources = [i for i in range(n_sw) if below[i]]
    dist = _switch_distances(discovered, [guids[i] for i in sources])
    dist_to = {i: [dist[guids[i]].get(g, -1) for g in guids] for i in sources}
    ca_switch: dict[int, int] = {}
    for i in range(n_sw):
        for code in nb[i].values():
            if code >= n_sw:
                ca_switch[code] = i
    load: dict[tuple[int, int], int] = {}
    chunk: dict[tuple[int, int], int] = {}
    examples = {
        "broken": verdict.broken,
        "updown": verdict.not_updown,
        "minimal": verdict.not_minimal,
    }
    counts = {"broken": 0, "updown": 0, "minimal": 0}
    NONE = -1

    for lid, dest in owner.items():
        target = ca_switch.get(dest, NONE)
        nxt = [NONE] * n_sw  # next switch (NONE: delivered, or broken)
        out = [0] * n_sw  # out port
        hops = [-1] * n_sw  # -1: not walked yet
        updown = [False] * n_sw
        alldown = [False] * n_sw
        why: dict[int, str] = {}
        order: list[int] = []
        for src in sources:
            stack: list[int] = []
            sw = src
            while hops[sw] < 0:
                if sw in stack:  # a loop: every switch on it is broken
                    at = stack.index(sw)
                    loop = " -> ".join(name[s] for s in stack[at:] + [sw])
                    for s in stack[at:]:
                        hops[s], why[s] = 0, f"loops {loop}"
                        order.append(s)
                    del stack[at:]
                    break
                port = tbl[sw][lid]
                far = nb[sw].get(port, NONE) if port > 0 else NONE
                out[sw] = port
                if far == dest:
                    hops[sw], updown[sw], alldown[sw] = 0, True, True
                    order.append(sw)
                    break
                if 0 <= far < n_sw:
                    stack.append(sw)
                    sw = far
                    continue
                if guids[sw] not in by_guid:
                    why[sw] = f"no forwarding table read from {name[sw]}"
                elif port < 0:
                    why[sw] = f"{name[sw]} has no entry for LID {lid}"
                elif far == NONE:
                    why[sw] = f"{name[sw]} forwards LID {lid} to port {port}, which has no cable"
                else:
                    why[sw] = (
                        f"{name[sw]} forwards LID {lid} to port {port}, which leads to "
                        f"{node_name(far) if far >= 0 else 'a node not in the fabric'}"
                    )
                hops[sw] = 0
                order.append(sw)
                break
            while stack:  # unwind: each switch's verdict from its next hop's
                sw = stack.pop()
                n = nb[sw][out[sw]]
                nxt[sw], hops[sw] = n, hops[n] + 1
                if n in why:
                    why[sw] = why[n]
                elif level[n] > level[sw] or (sw, n) in up_across:
                    updown[sw] = updown[n]
                elif level[n] < level[sw] or (n, sw) in up_across:
                    updown[sw] = alldown[sw] = alldown[n]
                order.append(sw)
        # Load: pairs carried by each switch, from the farthest switch towards the destination.
        carried = below[:]
        if target != NONE:
            carried[target] -= 1
        for sw in reversed(order):
            n = nxt[sw]
            if n != NONE and carried[sw] and sw not in why:
                key = (sw, out[sw])
                load[key] = load.get(key, 0) + carried[sw]
                if carried[sw] > chunk.get(key, 0):
                    chunk[key] = carried[sw]
                carried[n] += carried[sw]
        for src in sources:
            pairs = below[src] - (1 if src == target else 0)
            if pairs <= 0:
                continue
            verdict.pairs += pairs
            kind = None
            if src in why:
                kind, detail = "broken", why[src]
            elif not updown[src]:
                kind, detail = "updown", "not up/down: " + _path(nxt, out, src, name)
            elif target != NONE and hops[src] != dist_to[src][target]:
                kind = "minimal"
                detail = (
                    f"{hops[src]} switch hops ({_path(nxt, out, src, name)}), "
                    f"the shortest is {dist_to[src][target]}"
                )
            if kind is not None:
                counts[kind] += pairs
                if len(examples[kind]) < SHOWN:
                    examples[kind].append(f"{name[src]} -> {node_name(dest)} (LID {lid}): {detail}")
    verdict.broken_pairs = counts["broken"]
    verdict.not_updown_pairs = counts["updown"]
    verdict.not_minimal_pairs = counts["minimal"]
    verdict.loads = _loads(load, chunk, nb, level, name, n_sw)
    return verdict


def _path(nxt: list[int], out: list[int], src: int, name: list[str]) -> str:
    """``leaf01 p5 -> spine02 p3 -> leaf04 p2``: the route from ``src``, switch and out port."""
    parts, sw, seen = [], src, set()
    while sw >= 0 and sw not in seen:
        seen.add(sw)
        parts.append(f"{name[sw]} p{out[sw]}")
        sw = nxt[sw]
    return " -> ".join(parts)


def _loads(
    load: dict[tuple[int, int], int],
    chunk: dict[tuple[int, int], int],
    nb: list[dict[int, int]],
    level: list[int],
    name: list[str],
    n_sw: int,
) -> list[PortLoad]:
    """Every switch-to-switch port's load against the ports of its switch facing the same way."""
    out = []
    for sw, peers in enumerate(nb):
        groups: dict[str, list[tuple[int, int]]] = {}
        for port, far in peers.items():
            if 0 <= far < n_sw and far != sw and level[far] != level[sw]:
                groups.setdefault("up" if level[far] > level[sw] else "down", []).append(
                    (port, far)
                )
        for direction, ports in groups.items():
            if len(ports) < 2:
                continue
            mean = sum(load.get((sw, p), 0) for p, _ in ports) / len(ports)
            most = max(chunk.get((sw, p), 0) for p, _ in ports)
            out += [
                PortLoad(name[sw], p, name[far], direction, load.get((sw, p), 0), mean, most)
                for p, far in sorted(ports)
            ]
    return out


@dataclass(frozen=True)
class EngineVerdict:
    """The routing engine in use against the declared one."""

    ok: bool
    message: str
    engine: str | None = None
    source: str = "log"


def judge_engine(
    declared: str, log: OpensmLogReport | None, routes: RouteVerdict | None = None
) -> EngineVerdict:
    """The engine OpenSM last routed with (its log) is ``declared``; without a log (an SM
    railyard does not run), what the forwarding tables show: minimal up/down routes are what
    ftree and updn give a fat tree (they cannot tell those engines apart)."""
    if log is not None:
        if not log.ok:
            return EngineVerdict(
                False, f"OpenSM's log could not be read: {log.reason}", source="log"
            )
        last = log.last
        if last is None:
            return EngineVerdict(
                False,
                "OpenSM's log holds no routing pass yet (no 'tables configured' line)",
                source="log",
            )
        why = "; ".join(m.message for m in (last.errors[-2:] + last.reasons[-2:]))
        if last.engine is None:
            return EngineVerdict(
                False,
                f"no routing engine could configure the switches (log line {last.ended.line}): {why}",
                source="log",
            )
        if last.engine not in declared.split(","):  # a chain: OpenSM takes the first that routes
            where = f"(log line {last.ended.line}: {last.ended.message})"
            if last.failed_engines:
                said = f"OpenSM fell back from {', '.join(last.failed_engines)} to {last.engine}"
            else:  # no engine failed: OpenSM was told another one
                said = f"OpenSM routes with {last.engine}, not the declared {declared}"
            return EngineVerdict(
                False,
                f"{said} {where}" + (f"; why: {why}" if why else ""),
                engine=last.engine,
            )
        return EngineVerdict(
            True,
            f"{declared} configured every switch (log line {last.ended.line})",
            engine=declared,
        )
    if routes is None:
        return EngineVerdict(
            False, "neither OpenSM's log nor the forwarding tables were read", source="lft"
        )
    if routes.all_updown:
        return EngineVerdict(
            True,
            f"every route is minimal up/down, as {declared} routes a fat tree (the tables "
            "cannot tell ftree from updn)",
            engine=declared,
            source="lft",
        )
    return EngineVerdict(
        False,
        f"routes are not what {declared} gives a fat tree: {routes.not_updown_pairs} pairs not "
        f"up/down, {routes.not_minimal_pairs} not minimal, {routes.broken_pairs} broken",
        source="lft",
    )
