"""Root causes: failing checks grouped by what most likely broke them.

One pulled cable fails the port-state checks of its HCA port, the declared-link check and every
reachability pair of its host; a stopped OpenSM fails its own SM checks, the single-master check
and every host's view of the master. :func:`diagnose` reads the checks' subjects (``port:``,
``link:``, ``pair:``, ``host:``, recorded by the check suite's conftest), their names and their
messages, and the declared fabric graph (cables by both ends), and files each failing check under
one cause, in this order:

1. a node unreachable: a check's SSH connection failed (testinfra raises on ssh's exit 255);
   everything about that node is filed under it, including checks that could not run;
2. a cable down: its HCA port's physical state is not LinkUp, its state is Down, or ibnetdiscover
   misses the declared link; it explains its port's and link's checks, its host's pairs and the
   host's SM/Slurm checks;
3. a subnet manager: an SM that does not answer (or runs at a wrong priority); the first one
   explains the single-master check, every host's "sees the master" check and ports left
   Initializing;
4. a cable with errors: its error counters rise (``test_port_error_counters``); it explains
   its port's other failing checks and its host's pairs;
5. a port: any other failing check of one HCA port or cable (rate, width, MTU, miscabled);
6. a RoCE hop (``hop:`` subjects, ``checks/test_roce_consistency.py``): a switch port that
   disagrees with the host netdev facing it explains its hop's checks and the paths that cross
   it (path MTU for an MTU mismatch, ``ib_write_bw -R`` for any); a hop whose switch side is at
   the fabric MTU and whose host side is not is the host netdev's, left to the MTU rule;
7. an MTU: a netdev at a wrong MTU explains its hop checks and the path-MTU pairs through its
   host; other failing paths are grouped by the host they share.

A check that could not run (pytest ``error``: a fixture or harness failure, a HarnessError) is
never filed under a fabric cause, except under an unreachable node; the rest stay apart as
errors. Failures no rule explains stay listed as such.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Literal

from pydantic import BaseModel

from fabric.graph import FabricGraph
from fabric.verify.results import CheckResult

Kind = Literal["node", "cable", "sm", "port", "hop", "mtu"]
KIND_ORDER: tuple[Kind, ...] = ("node", "cable", "sm", "port", "hop", "mtu")

#: Singular -> plural of each cause's ``what``, for the headlines.
PLURAL = {
    "node unreachable": "nodes unreachable",
    "cable down": "cables down",
    "cable with errors": "cables with errors",
    "subnet manager down": "subnet managers down",
    "subnet manager at a wrong priority": "subnet managers at a wrong priority",
    "no single master subnet manager": "no single master subnet manager",
    "port miscabled": "ports miscabled",
    "port degraded": "ports degraded",
    "switch port MTU mismatch": "switch port MTU mismatches",
    "switch port QoS mismatch": "switch port QoS mismatches",
    "MTU mismatch": "MTU mismatches",
    "path MTU too small": "paths with a too small MTU",
}
#: Checks about a host that fail when the host's fabric cable is down (or its SM is gone).
HOST_FABRIC_CHECKS = {
    "test_host_sees_master",
    "test_sm_answers",
    "test_sm_priority",
    "test_node_idle_or_allocated",
}
#: The error counter check (the fabric sweep's, ``checks/test_sweep.py``).
COUNTER_CHECK = "test_port_error_counters"
#: Checks of the master SM as the fabric sees it.
MASTER_CHECKS = {
    "test_single_master",
    "test_host_sees_master",
    "test_master_is_declared",
    "test_standbys_declared",
}
#: The RoCE checks that cross a hop's host: path MTU and ``ib_write_bw -R`` between pairs.
PATH_MTU_CHECK = "test_path_mtu"
ROCE_BW_CHECK = "test_roce_write_bandwidth"
#: How every RoCE hop check's message starts (``SwitchHop.where``).
_HOP = re.compile(
    r"^switch (?P<switch>\S+) port (?P<port>\S+) <-> host (?P<host>\S+) (?P<netdev>\S+): "
)
#: ``test_hop_mtu``'s sides: ``MTU 1500 on switch leaf1 port swp1, 9000 on host r1 fab0;
#: fabric.mtu is 9000``.
_HOP_MTU = re.compile(
    r"MTU (?P<switch>\d+) on switch .*, (?P<host>\d+) on host .*; fabric\.mtu is (?P<fabric>\d+)"
)
_STATE = re.compile(r": state (\w+), expected Active")
_SSH = re.compile(r"CommandResult\(.*exit_status=255.*_stderr=b?'(?P<stderr>[^']*)'")


def key(result: CheckResult) -> str:
    """The check's JUnit id: ``name[param]`` (``name`` without a parameter)."""
    return f"{result.name}[{result.param}]" if result.param else result.name


class Cause(BaseModel):
    """One root cause and the checks (by :func:`key`) it explains."""

    kind: Kind
    what: str
    subject: str
    evidence: str
    checks: list[str] = []
    errors: int = 0

    def line(self) -> str:
        """``cable down: leaf01 p3 ↔ gpu03 mlx5_0/1 (6 checks): <evidence>``."""
        return f"{self.what}: {self.subject} ({_count(self)}): {self.evidence}"


def _count(cause: Cause) -> str:
    failed = len(cause.checks) - cause.errors
    text = f"{failed} failing check{'s' if failed != 1 else ''}"
    return text + (f" and {cause.errors} that could not run" if cause.errors else "")


class Diagnosis(BaseModel):
    """Causes first, then failures no cause explains, then checks that could not run."""

    causes: list[Cause]
    unexplained: list[CheckResult]
    errors: list[CheckResult]

    def headlines(self) -> list[str]:
        """One line per kind of cause: ``1 cable down (leaf01 p3 ↔ gpu03 mlx5_0/1) explains
        6 failing checks``."""
        groups: dict[str, list[Cause]] = {}
        for cause in self.causes:
            groups.setdefault(cause.what, []).append(cause)
        lines = []
        for what, causes in groups.items():
            merged = Cause(
                kind=causes[0].kind,
                what=what,
                subject="",
                evidence="",
                checks=[c for cause in causes for c in cause.checks],
                errors=sum(cause.errors for cause in causes),
            )
            noun = what if len(causes) == 1 else PLURAL.get(what, what)
            verb = "explains" if len(causes) == 1 else "explain"
            subjects = "; ".join(cause.subject for cause in causes)
            lines.append(f"{len(causes)} {noun} ({subjects}) {verb} {_count(merged)}")
        return lines

    def cause_of(self) -> dict[str, Cause]:
        """Check key -> the cause that explains it."""
        return {check: cause for cause in self.causes for check in cause.checks}


def explained(results: Iterable[CheckResult], causes: list[Cause]) -> Diagnosis:
    """The diagnosis of ``results`` given ``causes`` found before (``RunOutcome.causes``)."""
    taken = {check for cause in causes for check in cause.checks}
    left = [r for r in results if r.failed and key(r) not in taken]
    return Diagnosis(
        causes=causes,
        unexplained=[r for r in left if r.outcome == "failed"],
        errors=[r for r in left if r.outcome == "error"],
    )


# -- subjects -----------------------------------------------------------------------------------


def _split_link(link_id: str) -> tuple[str, int, str, int] | None:
    """``leaf01/3-gpu03/mlx5_0/1`` -> (``leaf01``, 3, ``gpu03/mlx5_0``, 1); names may hold ``-``."""
    for i, char in enumerate(link_id):
        if char != "-":
            continue
        left, right = link_id[:i].rpartition("/"), link_id[i + 1 :].rpartition("/")
        if left[0] and left[2].isdigit() and right[0] and right[2].isdigit():
            return left[0], int(left[2]), right[0], int(right[2])
    return None


def _end_label(node: str, port: int, switch: bool) -> str:
    return f"{node} p{port}" if switch else f"{node.replace('/', ' ', 1)}/{port}"


class _Cables:
    """Declared cables: link id -> label (switch end first), HCA port id -> link id."""

    def __init__(self, graph: FabricGraph | None, results: list[CheckResult]) -> None:
        self.label: dict[str, str] = {}
        self.of_port: dict[str, str] = {}
        self.host_of: dict[str, str] = {}
        if graph is not None:
            for link in graph.links:
                a, b = graph.node_name(link.a_guid), graph.node_name(link.b_guid)
                ends = [
                    (a, link.a_port, link.a_guid in graph.switches),
                    (b, link.b_port, link.b_guid in graph.switches),
                ]
                self._add(f"{a}/{link.a_port}-{b}/{link.b_port}", ends)
        for r in results:  # without a graph: the declared-link checks name every cable
            for s in r.subjects:
                parts = _split_link(s[5:]) if s.startswith("link:") else None
                if parts and s[5:] not in self.label:
                    a, ap, b, bp = parts
                    self._add(s[5:], [(a, ap, "/" not in a), (b, bp, "/" not in b)])

    def _add(self, link_id: str, ends: list[tuple[str, int, bool]]) -> None:
        ends.sort(key=lambda end: not end[2])  # the switch end first
        self.label[link_id] = " ↔ ".join(_end_label(*end) for end in ends)
        for node, port, switch in ends:
            if not switch:
                self.of_port[f"{node}/{port}"] = link_id
                self.host_of[link_id] = node.split("/", 1)[0]

    def name(self, cable: str) -> str:
        """A cable's label, or an HCA port's (``gpu03 mlx5_0/1``) when no cable is declared."""
        return self.label.get(cable) or cable.replace("/", " ", 1)


def _host_of(cable: str, cables: _Cables) -> str:
    """The host at a cable's HCA end, or of an HCA port id; "" for a switch-to-switch cable."""
    if cable in cables.label:
        return cables.host_of.get(cable, "")
    return cable.split("/", 1)[0]


def _ports(r: CheckResult) -> list[str]:
    """HCA port ids a check is about (``port:`` and the counter check's ``counters:``)."""
    return [s.partition(":")[2] for s in r.subjects if s.startswith(("port:", "counters:"))]


def _links(r: CheckResult) -> list[str]:
    return [s[5:] for s in r.subjects if s.startswith("link:")]


def _pair(r: CheckResult) -> tuple[str, str] | None:
    for s in r.subjects:
        if s.startswith("pair:") and "->" in s:
            a, _, b = s[5:].partition("->")
            return a, b
    return None


def _hosts(r: CheckResult) -> set[str]:
    """Hosts a check is about: a port's host, ``host:`` subjects, both ends of a pair."""
    out = {p.split("/", 1)[0] for p in _ports(r)}
    out |= {s[5:] for s in r.subjects if s.startswith("host:")}
    return out | set(_pair(r) or ())


def _ssh_failure(r: CheckResult) -> str | None:
    """ssh's own complaint when the check's SSH connection failed (exit 255), else None."""
    match = _SSH.search(r.message)
    if match is None:
        return None
    return match["stderr"].replace("\\r", "").replace("\\n", " ").strip() or "ssh exit 255"


# -- the rules ----------------------------------------------------------------------------------


class _Work:
    """Failing checks not filed yet, and the causes found so far."""

    def __init__(self, results: list[CheckResult]) -> None:
        self.left = [r for r in results if r.failed]
        self.causes: list[Cause] = []

    def file(
        self, cause: Cause, match: Callable[[CheckResult], bool], errors: bool = False
    ) -> Cause:
        """File every unfiled check ``match`` accepts under ``cause`` (failures, and errors
        when ``errors``); add the cause once it explains something."""
        taken = [r for r in self.left if match(r) and (errors or r.outcome == "failed")]
        ids = {id(r) for r in taken}
        self.left = [r for r in self.left if id(r) not in ids]
        cause.checks += [key(r) for r in taken]
        cause.errors += sum(1 for r in taken if r.outcome == "error")
        if cause.checks and all(c is not cause for c in self.causes):
            self.causes.append(cause)
        return cause


def diagnose(results: list[CheckResult], graph: FabricGraph | None = None) -> Diagnosis:
    """File every failing check of ``results`` under a root cause (module docstring)."""
    cables = _Cables(graph, results)
    work = _Work(results)
    _nodes(work)
    down = _cables_down(work, cables)
    _subnet_managers(work, down)
    _cables_with_errors(work, cables)
    _ports_degraded(work, cables)
    _hops(work)
    _mtu(work)
    work.causes.sort(key=lambda c: KIND_ORDER.index(c.kind))
    return explained(results, work.causes)


def _nodes(work: _Work) -> None:
    unreachable: dict[str, str] = {}
    for r in work.left:
        said = _ssh_failure(r)
        named = {p.split("/", 1)[0] for p in _ports(r)} | {
            s[5:] for s in r.subjects if s.startswith("host:")
        }
        if said and len(named) == 1:
            unreachable.setdefault(named.pop(), said)
    anonymous = len(unreachable) == 1  # an SSH failure naming no host is that node's
    for host, said in unreachable.items():
        cause = Cause(kind="node", what="node unreachable", subject=host, evidence=said)
        work.file(
            cause,
            lambda r, h=host: h in _hosts(r) or (anonymous and bool(_ssh_failure(r))),
            errors=True,
        )


def _cables_down(work: _Work, cables: _Cables) -> dict[str, Cause]:
    """Cable (or port, without a declared cable) -> its cause, for every cable found down."""
    found: dict[str, str] = {}
    for r in work.left:
        if r.outcome != "failed":
            continue
        state = _STATE.search(r.message)
        is_down = (
            r.name == "test_port_physical_state_linkup"
            or (r.name == "test_port_state_active" and state is not None and state[1] == "Down")
            or (r.name == "test_declared_link_discovered" and r.message.startswith("missing"))
        )
        if not is_down:
            continue
        for port in _ports(r):
            found.setdefault(cables.of_port.get(port, port), r.message)
        for link in _links(r):
            found.setdefault(link, r.message)
    causes = {}
    for cable, message in found.items():
        host = _host_of(cable, cables)
        ports = {p for p, c in cables.of_port.items() if c == cable} | {cable}

        def about(r: CheckResult, cable: str = cable, ports: set[str] = ports, host: str = host):
            return (
                cable in _links(r)
                or bool(ports & set(_ports(r)))
                or (host in set(_pair(r) or ()))
                or (host in _hosts(r) and r.name in HOST_FABRIC_CHECKS)
            )

        cause = Cause(kind="cable", what="cable down", subject=cables.name(cable), evidence=message)
        causes[host] = work.file(cause, about)
    return causes


def _param_host(r: CheckResult) -> str:
    return r.param.split("/", 1)[0]


def _subnet_managers(work: _Work, down: dict[str, Cause]) -> None:
    silent = [r for r in work.left if r.name == "test_sm_answers" and r.outcome == "failed"]
    first: Cause | None = next(iter(c for h, c in down.items() if h and _sm_host(h, down)), None)
    for r in silent:
        host = r.param
        cause = Cause(kind="sm", what="subnet manager down", subject=host, evidence=r.message)
        work.file(cause, lambda x, h=host: x.name in HOST_FABRIC_CHECKS and x.param == h)
        first = first or cause
    for r in [r for r in work.left if r.name == "test_sm_priority" and r.outcome == "failed"]:
        cause = Cause(
            kind="sm",
            what="subnet manager at a wrong priority",
            subject=r.param,
            evidence=r.message,
        )
        work.file(cause, lambda x, r=r: x is r)
    masterless = [r for r in work.left if r.name in MASTER_CHECKS and r.outcome == "failed"]
    if first is None and (
        any(r.name == "test_single_master" for r in masterless) or len(masterless) > 1
    ):
        first = Cause(
            kind="sm",
            what="no single master subnet manager",
            subject="fabric",
            evidence=masterless[0].message,
        )
    if first is not None:
        work.file(
            first,
            lambda r: (
                r.name in MASTER_CHECKS
                or (r.name == "test_port_state_active" and bool(_STATE.search(r.message)))
            ),
        )


def _sm_host(host: str, down: dict[str, Cause]) -> bool:
    """True when the cable-down cause of ``host`` took that host's SM check."""
    return any(c.startswith("test_sm_answers[") for c in down[host].checks)


def _cables_with_errors(work: _Work, cables: _Cables) -> None:
    """A cable whose error counters rise (and that is not down): its counter check, and any
    other failing check of its port or its host's pairs."""
    for r in [r for r in work.left if r.name == COUNTER_CHECK and r.outcome == "failed"]:
        ports = _ports(r)
        if not ports:
            continue
        cable = cables.of_port.get(ports[0], ports[0])
        host = _host_of(cable, cables)
        cause = Cause(
            kind="cable", what="cable with errors", subject=cables.name(cable), evidence=r.message
        )
        work.file(
            cause,
            lambda x, r=r, p=set(ports), h=host: (
                x is r or bool(p & set(_ports(x))) or (bool(h) and h in (_pair(x) or ()))
            ),
        )


def _ports_degraded(work: _Work, cables: _Cables) -> None:
    by_cable: dict[str, list[CheckResult]] = {}
    for r in work.left:
        if r.outcome != "failed":
            continue
        for cable in [cables.of_port.get(p, p) for p in _ports(r)] + _links(r):
            by_cable.setdefault(cable, []).append(r)
            break
    for cable, found in by_cable.items():
        miscabled = any(
            r.name == "test_port_cabled_to_declared_switch_port" or r.message.startswith("miscab")
            for r in found
        )
        host = _host_of(cable, cables)
        cause = Cause(
            kind="port",
            what="port miscabled" if miscabled else "port degraded",
            subject=cables.name(cable),
            evidence=found[0].message,
        )
        work.file(cause, lambda r, f=found, h=host: r in f or (bool(h) and h in (_pair(r) or ())))


def _hop(r: CheckResult) -> str | None:
    """The hop id of a RoCE hop check (``r1/fab0-leaf1/swp1``), None for other checks."""
    return next((s[4:] for s in r.subjects if s.startswith("hop:")), None)


def _host_side_mtu(r: CheckResult) -> bool:
    """True when a failing ``test_hop_mtu`` has its switch side at the fabric MTU and its host
    side not: the host netdev is at fault, not the switch port."""
    sides = _HOP_MTU.search(r.message) if r.name == "test_hop_mtu" else None
    return sides is not None and sides["switch"] == sides["fabric"] != sides["host"]


def _hops(work: _Work) -> None:
    """One cause per RoCE hop whose switch port disagrees with its host: named by the switch
    port first; it explains its hop's failing checks and the pairs through the hop's host."""
    by_hop: dict[str, list[CheckResult]] = {}
    for r in work.left:
        hop = _hop(r)
        if hop is not None and r.outcome == "failed" and not _host_side_mtu(r):
            by_hop.setdefault(hop, []).append(r)
    for hop, found in by_hop.items():
        found.sort(key=lambda r: r.name != "test_hop_mtu")  # the MTU disagreement leads
        where = _HOP.match(found[0].message)
        if where is not None:
            host = where["host"]
            subject = (
                f"switch {where['switch']} port {where['port']} ↔ host {host} {where['netdev']}"
            )
        else:
            host, subject = hop.split("/", 1)[0], hop
        mtu = found[0].name == "test_hop_mtu"
        paths = {ROCE_BW_CHECK} | ({PATH_MTU_CHECK} if mtu else set())
        cause = Cause(
            kind="hop",
            what="switch port MTU mismatch" if mtu else "switch port QoS mismatch",
            subject=subject,
            evidence=found[0].message,
        )
        work.file(
            cause,
            lambda r, f=found, h=host, p=paths: (
                any(r is x for x in f) or (r.name in p and h in (_pair(r) or ()))
            ),
        )


def _mtu(work: _Work) -> None:
    for r in [r for r in work.left if r.name == "test_netdev_mtu" and r.outcome == "failed"]:
        host = _param_host(r)
        cause = Cause(
            kind="mtu",
            what="MTU mismatch",
            subject=r.param.replace("/", " ", 1),
            evidence=r.message,
        )
        work.file(
            cause,
            lambda x, r=r, h=host: (
                x is r
                or (x.name == PATH_MTU_CHECK and h in (_pair(x) or ()))
                or (_host_side_mtu(x) and (_hop(x) or "").split("/", 1)[0] == h)
            ),
        )
    while paths := [r for r in work.left if r.name == "test_path_mtu" and r.outcome == "failed"]:
        shared = Counter(h for r in paths for h in set(_pair(r) or ())).most_common(1)
        host = shared[0][0] if shared and shared[0][1] > 1 else None
        subject = f"paths through {host}" if host else paths[0].param
        cause = Cause(
            kind="mtu", what="path MTU too small", subject=subject, evidence=paths[0].message
        )
        first = key(paths[0])
        work.file(
            cause,
            lambda x, h=host, k=first: (
                x.name == "test_path_mtu" and (h in (_pair(x) or ()) if h else key(x) == k)
            ),
        )


#: What :func:`summary` says when nothing failed or errored (skipped checks counted apart).
ALL_PASSED = re.compile(r"all \d+ checks passed(, \d+ skipped \(not applicable here\))?")


def summary(results: list[CheckResult], causes: list | None = None) -> str:
    """Root causes first, then failures no cause explains, then checks that could not run
    (harness or tool errors, never counted as fabric failures); for Pulumi and the CLI.

    ``causes``: the :class:`Cause` list found with the declared graph; found here from the
    results alone when not given.
    """
    failed = [r for r in results if r.outcome == "failed"]
    errors = [r for r in results if r.outcome == "error"]
    if not failed and not errors:
        skipped = sum(r.outcome == "skipped" for r in results)
        passed = f"all {len(results) - skipped} checks passed"
        return passed + (f", {skipped} skipped (not applicable here)" if skipped else "")
    found = explained(results, causes) if causes is not None else diagnose(results)
    by_key = {key(r): r for r in results}
    head = f"{len(failed)} of {len(results)} checks failed"
    lines = [head + (f", {len(errors)} could not run (harness or tool error)" if errors else "")]
    if found.causes:
        lines.append("root causes:")
        lines += [f"  {line}" for line in found.headlines()]
        lines.append("failed checks, by cause:")
        for cause in found.causes:
            lines.append(f"  {cause.what}: {cause.subject}")
            lines += [f"    {k}: {_first_line(by_key[k])}" for k in cause.checks if k in by_key]
    if found.unexplained:
        indent = "    " if found.causes else "  "
        lines.append("  no cause found:" if found.causes else "failed checks:")
        lines += [f"{indent}{key(r)}: {_first_line(r)}" for r in found.unexplained]
    if found.errors:
        lines.append("could not run (harness or tool error, not a fabric failure):")
        lines += [f"  {key(r)}: {_first_line(r)}" for r in found.errors]
    return "\n".join(lines)


def _first_line(r: CheckResult) -> str:
    return r.message.splitlines()[0] if r.message else r.outcome
