"""RDMA reachability between sampled host pairs (a half-shifted ring: every host once).

InfiniBand: ``ibping`` (MAD echo; the check starts an ``ibping -S`` server on the target and
stops it) and ``ibtracert`` along the declared switches. Real hardware adds verbs:
``ibv_rc_pingpong`` and ``ib_write_bw`` with a floor per link rate.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from fabric.parsers import PARSERS
from fabric.topology.ibsim_console import IbsimConsole
from fabric.verify.bandwidth import Exclusive, min_write_bw
from fabric.verify.facts import Facts
from fabric.verify.gids import roce_gid_index
from fabric.verify.harness import (
    HarnessError,
    Served,
    reap_quietly,
    server_started,
    sm_clients_quietly,
)
from fabric.verify.plan import CheckPlan, Pair

#: A server's own bound (s), against a leak if the check dies; the check stops it sooner. It
#: covers the server's wait for a slot and its settling, the client's own wait for an ibsim
#: slot (the lab shim's default 60 s) and the pings. With 30 s, 9 of 34 pairs at 32 nodes had
#: "100% packet loss" while a check took up to 37 s (likely: the server had already ended).
SERVER_SECONDS = 120
#: Seconds a server gets to register before it is used, where nothing says when it is ready
#: (in the lab, before ibsim's client list was read, an ibping server answered nothing when
#: pinged 1 s after it started, and always 2 s after).
SERVER_SETTLE = 2.0
#: Seconds after ibsim lists the server's client (the lab): its agent registers just after;
#: an echo still lost is asked again (``PING_ATTEMPTS``).
READY_SETTLE = 0.25
#: Seconds a lab ibping server may wait for one of ibsim's client slots (its shim's
#: RAILYARD_SIM_CONNECT_WAIT): at 32 nodes the check workers and every node's health program
#: share ibsim's 8 free slots, and a server refused at once failed the check.
LAB_SLOT_WAIT = 15


#: Echoes asked before a lost one counts: flood-mode echoes cost milliseconds, and a server
#: on a loaded node can register a few seconds late (pauses of 0.5 s, 1 s, ... between runs).
PING_ATTEMPTS = 5


#: Starts of a server before the check fails. In the lab a start can be refused while a dead
#: server's registration still holds the port's SM-class slot (dropped before each retry).
SERVER_ATTEMPTS = 3


def _serve(
    facts: Facts,
    plan: CheckPlan,
    target: str,
    command: str,
    env: str = "",
    before_retry: Callable[[], object] | None = None,
    readiness: Callable[[], Callable[[], bool]] | None = None,
) -> Iterator[Served]:
    """Run ``command`` detached on ``target`` for the duration of a check, then stop it.
    ``readiness()``, called before each start, returns the test that the server is ready."""
    remote = facts.connect(target)
    prefix = f"env {env} " if env else ""
    log = f"/tmp/railyard-server-{command.split()[0]}.log"
    for attempt in range(1, SERVER_ATTEMPTS + 1):
        ready = readiness() if readiness is not None else None
        started = remote.run(
            f"{prefix}nohup timeout {SERVER_SECONDS} {command} </dev/null >{log} 2>&1 & echo $!"
        )
        pid = started.stdout.strip()
        assert started.rc == 0 and pid.isdigit(), (
            f"{target}: could not start {command!r}: {started.stderr.strip()}"
        )
        served = Served(remote, target, command, pid, log, SERVER_SECONDS)
        settle = (READY_SETTLE if ready is not None else SERVER_SETTLE) * attempt
        if server_started(remote, pid, settle, LAB_SLOT_WAIT, ready):
            break
        if attempt == SERVER_ATTEMPTS:
            pytest.fail(f"{target}: {command!r} did not start, {attempt} times: {served.said()}")
        if before_retry is not None:
            before_retry()
    try:
        yield served
    finally:
        remote.run(
            f"kill {pid} 2>/dev/null; while kill -0 {pid} 2>/dev/null; do sleep 0.1; done; true"
        )


@pytest.fixture
def ibping_server(
    facts: Facts,
    plan: CheckPlan,
    ib_pair: Pair,
    ibsim_console: IbsimConsole | None,
    alive_ports: Callable[[str, list[int]], set[int]],
) -> Iterator[Served]:
    """An ``ibping -S`` responder on the pair's target, started and stopped around the check.

    In the lab the server registers with ibsim as the port's SM-class client (SIM_SET_ISSM=1:
    ibsim hands QP1 requests only to such a client), and ibsim's remote mode never notices a
    killed client: its registration would refuse every later server on that port. So the
    server's own registration is dropped through the console (``Attached``/``X``) after it
    stops, and a stale one (a run killed midway) when a start is refused, before the retry.
    """
    if not plan.simulated:
        yield from _serve(facts, plan, ib_pair.target, "ibping -S")
        return
    if ibsim_console is None or not ibsim_console.available():
        pytest.fail(
            f"{ib_pair.target}: the lab's ibsim console is missing, so stale ibping servers cannot be dropped"
        )
    console, target = ibsim_console, ib_pair.target

    def readiness() -> Callable[[], bool]:
        """Ready once ibsim lists an SM-class client of the target it did not list before."""
        before = sm_clients_quietly(console, target) or set()
        return lambda: bool((sm_clients_quietly(console, target) or set()) - before)

    try:
        yield from _serve(
            facts,
            plan,
            target,
            "ibping -S",
            # wait for a client slot; a stale registration that refuses it is reaped, retried
            env=f"SIM_SET_ISSM=1 RAILYARD_SIM_CONNECT_WAIT={LAB_SLOT_WAIT}",
            before_retry=lambda: reap_quietly(console, target, alive_ports),
            readiness=readiness,
        )
    finally:
        reap_quietly(ibsim_console, ib_pair.target, alive_ports)


@pytest.mark.family("ib_pairs")
def test_ibping(host, facts: Facts, ib_pair: Pair, ibping_server: Served) -> None:
    """The source reaches the target's port with MAD echo (ibping by port GUID)."""
    guid = facts.port_guid(ib_pair.target)
    assert guid, f"{ib_pair.target}: no InfiniBand port GUID in ibstat"
    # one echo, flood mode (-f: ibping otherwise waits 1 s after every echo, the last one
    # too); a lost one is asked again (at most PING_ATTEMPTS runs) while the server runs
    report = facts.judged(
        ib_pair.source,
        "ibping",
        f"ibping -f -c 1 -G {guid}",
        done=lambda r: r.answered > 0 or not ibping_server.running(),
        attempts=PING_ATTEMPTS,
    )
    if not report.answered and (gone := ibping_server.gone()) is not None:
        raise gone
    if not report.answered:
        # lost echoes while the target's port answers the source's LID-routed PerfMgt MADs:
        # the path works, the echo server did not answer (a loaded node), not the fabric
        lid = facts.lid(ib_pair.target)
        pma = facts.judged(ib_pair.source, "perfquery", f"perfquery {lid} 1") if lid else None
        if pma is not None and pma.ok:
            raise HarnessError(
                f"{ib_pair.source} -> {ib_pair.target} (port {guid}): no ibping reply in "
                f"{PING_ATTEMPTS} runs ({report.reason}), while the target's port (lid {lid}) "
                "answers PerfMgt MADs from the source: the echo server did not answer, the "
                "path works"
            )
    assert report.answered, (
        f"{ib_pair.source} -> {ib_pair.target} (port {guid}): no ibping reply: {report.reason}"
    )


@pytest.mark.family("ib_pairs")
def test_pma_reachable(host, facts: Facts, ib_pair: Pair) -> None:
    """A LID-routed PerfMgt MAD from the source reaches the target's port (perfquery <lid>)."""
    lid = facts.lid(ib_pair.target)
    assert lid, f"{ib_pair.target}: no LID on its InfiniBand port (ibstat)"
    report = facts.judged(ib_pair.source, "perfquery", f"perfquery {lid} 1")
    assert report.ok, (
        f"{ib_pair.source} -> {ib_pair.target} (lid {lid}): perfquery got no answer: {report.reason}"
    )


def _expected_switches(plan: CheckPlan, pair: Pair) -> tuple[str, str] | None:
    graph = plan.declared_graph
    if graph is None:
        return None
    leaves = graph.host_leaves()
    src, dst = leaves.get(pair.source), leaves.get(pair.target)
    return (src[0], dst[0]) if src and dst else None


@pytest.mark.family("ib_pairs")
def test_ibtracert_declared_path(host, facts: Facts, plan: CheckPlan, ib_pair: Pair) -> None:
    """The routed path leaves the source's declared leaf and enters the target's declared leaf,
    crossing as many upper switches as a shortest path of the declared tree (one spine, or
    spine, super-spine, spine between pods)."""
    ends = _expected_switches(plan, ib_pair)
    if ends is None:
        pytest.skip("no declared fat tree to compare the path with")
    src_lid, dst_lid = facts.lid(ib_pair.source), facts.lid(ib_pair.target)
    assert src_lid and dst_lid, f"{ib_pair.id}: missing LID (source {src_lid}, target {dst_lid})"
    report = facts.judged(ib_pair.source, "ibtracert", f"ibtracert {src_lid} {dst_lid}")
    assert report.ok, (
        f"{ib_pair.source} -> {ib_pair.target}: ibtracert lid {src_lid} -> {dst_lid} failed: {report.reason}"
    )
    switches = [name.strip() for name in report.switches]
    leaves = {load.switch for load in plan.declared_graph.leaf_loads()}  # type: ignore[union-attr]
    # a shortest path through the declared tree: 3 switches over a spine, 5 over a super-spine
    hops = plan.declared_graph.switch_hops(*ends)  # type: ignore[union-attr]
    expected_len = 1 + (hops if hops is not None else 2)
    ok = (
        bool(switches)
        and (switches[0], switches[-1]) == ends
        and len(switches) == expected_len
        and all(s not in leaves for s in switches[1:-1])
    )
    middle = " -> ".join(["<upper switch>"] * (expected_len - 2))
    assert ok, (
        f"{ib_pair.source} -> {ib_pair.target}: path crosses {switches}, expected {ends[0]}"
        f"{' -> ' + middle + ' -> ' + ends[1] if expected_len > 1 else ''}"
    )


@pytest.fixture
def pingpong_server(
    facts: Facts, plan: CheckPlan, verbs_pair: Pair, exclusive: Exclusive
) -> Iterator[Served]:
    """``ibv_rc_pingpong`` server on the target, both hosts held (its port, 18515, is
    ib_write_bw's too)."""
    with exclusive((verbs_pair.source, verbs_pair.target)):
        yield from _serve(
            facts,
            plan,
            verbs_pair.target,
            _verbs_args(plan, facts, verbs_pair.target, "ibv_rc_pingpong"),
        )


@pytest.fixture
def write_bw_server(
    facts: Facts, plan: CheckPlan, verbs_pair: Pair, exclusive: Exclusive
) -> Iterator[Served]:
    """``ib_write_bw`` server on the target, both hosts held for the test (no other
    bandwidth test on either meanwhile)."""
    with exclusive((verbs_pair.source, verbs_pair.target)):
        yield from _serve(
            facts,
            plan,
            verbs_pair.target,
            _verbs_args(plan, facts, verbs_pair.target, "ib_write_bw --report_gbits"),
        )


def _verbs_args(plan: CheckPlan, facts: Facts, host_name: str, tool: str) -> str:
    """``tool`` on the host's first HCA; on RoCE with the GID index ``show_gids`` lists for
    RoCE v2 over IPv4 (``fabric.verify.gids``), not a fixed one."""
    hca = plan.spec.hosts[host_name].hcas[0]
    gid = ""
    if hca.link_layer == "Ethernet":
        index = roce_gid_index(facts.parsed(host_name, "show_gids", "show_gids"), hca.device)
        if index is None:
            raise HarnessError(f"{host_name}: show_gids lists no RoCE v2 IPv4 GID on {hca.device}")
        gid = f" -x {index}"
    return f"{tool} -d {shlex.quote(hca.device)}{gid}"


def _address(facts: Facts, name: str) -> Any:
    return facts.connect(name).backend.host.name


@pytest.mark.family("verbs")
def test_rc_pingpong(
    host, facts: Facts, plan: CheckPlan, verbs_pair: Pair, pingpong_server: Served
) -> None:
    """An RC queue pair exchanges messages from source to target (verbs data path)."""
    cmd = f"{_verbs_args(plan, facts, verbs_pair.source, 'ibv_rc_pingpong')} {_address(facts, verbs_pair.target)}"
    result = host.run(cmd)
    report = PARSERS["ibv_rc_pingpong"](result.stdout + result.stderr)
    assert report.ok and report.iterations, (
        f"{verbs_pair.id}: ibv_rc_pingpong failed: {report.reason or report.errors}"
    )


@pytest.mark.family("verbs")
def test_write_bandwidth(
    host, facts: Facts, plan: CheckPlan, verbs_pair: Pair, write_bw_server: Served
) -> None:
    """ib_write_bw from source to target reaches the floor for the declared link rate."""
    rate = plan.spec.hosts[verbs_pair.source].hcas[0].rate_gbps
    floor = min_write_bw(rate)
    cmd = f"{_verbs_args(plan, facts, verbs_pair.source, 'ib_write_bw --report_gbits')} {_address(facts, verbs_pair.target)}"
    result = host.run(cmd)
    report = PARSERS["perftest"](result.stdout + result.stderr)
    rows = [row.bw_average for run in report.runs for row in run.bw]
    assert rows, f"{verbs_pair.id}: ib_write_bw gave no result: {report.reason}"
    assert max(rows) >= floor, (
        f"{verbs_pair.id}: ib_write_bw {max(rows):.1f} Gb/s < floor {floor} Gb/s for {rate} Gb/s links"
    )
