"""Root causes (fabric.verify.causes) over results read back from JUnit that pytest itself writes.

The check module below stands in for the check suite on the lab's declared fabric
(``Pulumi.lab.yaml``: gpu01-08, sm1, sm2 on leaf01/leaf02): it is parametrised from the real
``CheckPlan`` with the ids and subjects the suite's conftest records, and fails with the messages
the real checks assert (their format strings; the declared-link message from the real
``fabric.topology.diff`` against the declared graph less the pulled cables; tool-output tails
are left out, none is invented). A fault comes in through an environment variable. An
unreachable node is a real SSH failure: testinfra's SSH backend against a closed loopback port,
raising on ssh's exit 255 as it does in the suite. A harness error is a real ``FaultError`` from
``IbsimConsole`` on a FIFO nobody answers, in a fixture's setup, and a real ``HarnessError``
through the real hook of ``fabric.verify.harness``.
"""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from conftest import junit_of
from rich.console import Console

from fabric.spec import load_spec
from fabric.state import REPO_ROOT
from fabric.topology.from_spec import graph_from_spec
from fabric.verify.causes import ALL_PASSED, Diagnosis, diagnose, key, summary
from fabric.verify.report import annotate_junit, markdown, terminal_table
from fabric.verify.results import CheckResult, read_junit

LAB = REPO_ROOT / "Pulumi.lab.yaml"

CONFTEST = """
from fabric.verify.harness import pytest_runtest_makereport  # noqa: F401  (the real hook)
"""

CHECKS = '''
import json
import os
from pathlib import Path

import pytest
import testinfra

from fabric.topology.ibsim_console import IbsimConsole
from fabric.spec import load_spec
from fabric.topology.diff import diff
from fabric.topology.from_spec import graph_from_spec
from fabric.graph import FabricGraph
from fabric.model.pairs import ring_pairs
from fabric.verify import counters
from fabric.verify.discovery import describe, group
from fabric.verify.harness import HarnessError
from fabric.verify.plan import CheckPlan, SwitchHop

FAULT = json.loads(os.environ["RAILYARD_FAKE_FAULT"])
SPEC = load_spec(os.environ["RAILYARD_FAKE_SPEC"])
PLAN = CheckPlan(spec=SPEC, hosts=list(SPEC.hosts))
DOWN = set(FAULT.get("cables_down", []))
STOPPED = set(FAULT.get("sm_stopped", []))
UNREACHABLE = set(FAULT.get("unreachable", []))
HARNESS = set(FAULT.get("harness_error", []))
SLOW = set(FAULT.get("slow", []))
MTU = FAULT.get("mtu", {})
PRIORITY = FAULT.get("priority", {})
TWO_MASTERS = FAULT.get("two_masters", False)
ERRORS = set(FAULT.get("errors", []))
MISCABLED = FAULT.get("miscabled", {})
LIDS = {h: n + 1 for n, h in enumerate(PLAN.fabric_hosts)}


def ssh(host):
    """An unreachable node: testinfra's SSH backend raises on ssh's exit 255."""
    if host in UNREACHABLE:
        testinfra.get_host("ssh://root@127.0.0.1:1", ssh_config="/dev/null").run("ibstat")


def findings():
    declared = graph_from_spec(SPEC)
    pulled = {ca.guid for ca in declared.cas.values() if ca.host in DOWN}
    slow = {ca.guid for ca in declared.cas.values() if ca.host in SLOW}
    found = FabricGraph(
        switches=declared.switches,
        cas=declared.cas,
        links=[
            l._replace(speed="EDR", rate_gbps=100.0) if {l.a_guid, l.b_guid} & slow else l
            for l in declared.links
            if l.a_guid not in pulled and l.b_guid not in pulled
        ],
    )
    return group(declared, diff(declared, found))


def up(host):
    return host not in DOWN


@pytest.fixture(autouse=True)
def _subject(request, record_property):
    params = request.node.callspec.params if hasattr(request.node, "callspec") else {}
    for name, value in params.items():
        subject = {
            "hca_port": lambda p: f"port:{p.id}",
            "ib_port": lambda p: f"port:{p.id}",
            "counter_port": lambda p: f"counters:{p.id}",
            "ib_pair": lambda p: f"pair:{p.id}",
            "declared_link": lambda l: f"link:{l.id}",
            "sm": lambda s: f"host:{s.host}",
            "fabric_host": lambda h: f"host:{h}",
            "slurm_node": lambda h: f"host:{h}",
            "netdev": lambda n: f"host:{n[0]}",
            "netdev_pair": lambda p: f"pair:{p[0]}->{p[1]}",
            "roce_hop": lambda h: f"hop:{h.id}",
            "observer": lambda _: "fabric",
        }[name](value)
        record_property("subject", subject)


PORTS = pytest.mark.parametrize("hca_port", PLAN.hca_ports, ids=[p.id for p in PLAN.hca_ports])
PAIRS = pytest.mark.parametrize("ib_pair", PLAN.ib_pairs, ids=[p.id for p in PLAN.ib_pairs])
SMS = pytest.mark.parametrize("sm", PLAN.subnet_managers, ids=[s.host for s in PLAN.subnet_managers])


@PORTS
def test_port_state_active(hca_port):
    ssh(hca_port.host)
    state = "Active" if up(hca_port.host) else "Down"
    assert state == "Active", f"{hca_port.where}: state {state}, expected Active"


@PORTS
def test_port_physical_state_linkup(hca_port):
    ssh(hca_port.host)
    phys = "LinkUp" if up(hca_port.host) else "Polling"
    assert phys == "LinkUp", f"{hca_port.where}: physical state {phys}, expected LinkUp"


@PORTS
def test_port_rate(hca_port):
    ssh(hca_port.host)
    rate, source = hca_port.rate_gbps, "PortInfo 4xHDR via iblinkinfo"
    if hca_port.host in SLOW:
        rate, source = 100.0, "PortInfo 4xEDR via iblinkinfo"
    if not up(hca_port.host):
        rate, source = 0.0, "no active link in iblinkinfo"
    assert rate == hca_port.rate_gbps, (
        f"{hca_port.where}: rate {rate:g} Gb/s ({source}), expected {hca_port.rate_gbps:g}"
    )


@PORTS
def test_port_width(hca_port):
    ssh(hca_port.host)
    assert up(hca_port.host), (
        f"{hca_port.where}: no active link to a switch (iblinkinfo -D 0,{hca_port.port})"
    )


@pytest.mark.parametrize("ib_port", PLAN.ib_ports, ids=[p.id for p in PLAN.ib_ports])
def test_port_cabled_to_declared_switch_port(ib_port):
    switch, port = MISCABLED.get(ib_port.host, (ib_port.switch, ib_port.switch_port))
    assert (switch, port) == (ib_port.switch, ib_port.switch_port), (
        f"{ib_port.host} HCA {ib_port.device} port {ib_port.port}: cabled to {switch} port {port}, "
        f"expected {ib_port.switch} port {ib_port.switch_port}"
    )


@pytest.mark.parametrize(
    "counter_port", PLAN.counter_ports, ids=[p.id for p in PLAN.counter_ports]
)
def test_port_error_counters(counter_port):
    """The real judgment (fabric.verify.counters) of two readings 60 s apart."""
    cable = counters.cable_label(
        str(counter_port.switch), counter_port.switch_port, counter_port.host,
        counter_port.device, counter_port.port,
    )
    limits = counters.thresholds(counter_port.rate_gbps)
    rise = 40 if counter_port.host in ERRORS else 0
    bad = [
        f"{counter_port.host} {counter_port.device}/{counter_port.port} {breach.text()}"
        for breach in counters.judge(
            {"SymbolErrorCounter": 0}, {"SymbolErrorCounter": rise}, 60.0, limits
        )
        if breach.failing
    ]
    assert not bad, f"cable {cable}: errors rising: {'; '.join(bad)}"


@pytest.mark.parametrize(
    "declared_link", PLAN.declared_links, ids=[l.id for l in PLAN.declared_links]
)
def test_declared_link_discovered(declared_link):
    problems = findings().get(declared_link.id, [])
    assert not problems, describe(problems)


@SMS
def test_sm_answers(sm):
    ssh(PLAN.observer)
    lid = LIDS[sm.host]
    assert sm.host not in STOPPED and up(sm.host), f"SM on {sm.host} (lid {lid}): no SMInfo answer"


@SMS
def test_sm_priority(sm):
    ssh(PLAN.observer)
    lid = LIDS[sm.host]
    assert sm.host not in STOPPED and up(sm.host), f"SM on {sm.host} (lid {lid}): no SMInfo answer"
    priority = PRIORITY.get(sm.host, sm.priority)
    assert priority == sm.priority, f"SM on {sm.host}: priority {priority}, declared {sm.priority}"


def _master():
    sm = PLAN.subnet_managers[0]
    return None if sm.host in STOPPED or not up(sm.host) else sm.host


@pytest.mark.parametrize("observer", [PLAN.observer], ids=[PLAN.observer])
def test_single_master(observer):
    ssh(observer)
    states = {
        s.host: ("MASTER" if s.host == _master() or TWO_MASTERS else "STANDBY")
        if s.host not in STOPPED
        else None
        for s in PLAN.subnet_managers
    }
    masters = [h for h, s in states.items() if s == "MASTER"]
    assert len(masters) == 1, f"seen from {observer}: {len(masters)} MASTER SMs; states {states}"


@pytest.mark.parametrize("fabric_host", PLAN.fabric_hosts, ids=PLAN.fabric_hosts)
def test_host_sees_master(fabric_host):
    ssh(fabric_host)
    assert up(fabric_host) and _master(), f"{fabric_host}: sminfo: no MASTER answers"


@pytest.fixture
def ibping_server(ib_pair, tmp_path):
    ssh(ib_pair.target)
    if ib_pair.id in HARNESS:  # ibsim's console never answers: the real console times out
        fifo, log = tmp_path / "ibsim.console", tmp_path / "ibsim.log"
        os.mkfifo(fifo)
        log.write_text("")
        reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
        try:
            IbsimConsole(fifo, log).send("Attached", timeout=0.2)
        finally:
            os.close(reader)
    yield


@PAIRS
def test_ibping(ib_pair, ibping_server):
    ssh(ib_pair.source)
    assert up(ib_pair.source) and up(ib_pair.target), (
        f"{ib_pair.source} -> {ib_pair.target}: no ibping reply"
    )


@PAIRS
def test_ibtracert_declared_path(ib_pair):
    ssh(ib_pair.source)
    if ib_pair.id in HARNESS:
        raise HarnessError(f"{ib_pair.source}: ibtracert printed nothing the parser can read")
    assert up(ib_pair.source) and up(ib_pair.target), (
        f"{ib_pair.source} -> {ib_pair.target}: ibtracert failed"
    )


@pytest.mark.parametrize("slurm_node", PLAN.slurm_nodes, ids=PLAN.slurm_nodes)
def test_node_idle_or_allocated(slurm_node):
    state = "down*" if slurm_node in UNREACHABLE else "idle"
    assert state == "idle", f"Slurm node {slurm_node}: state {state}, expected idle or allocated"


DEV = MTU.get("dev", "eth0")
NETDEVS = [(h, DEV) for h in MTU.get("hosts", [])]
NETDEV_PAIRS = ring_pairs([h for h, _ in NETDEVS])
HOPS = [
    SwitchHop(host=h, netdev=DEV, switch="leaf1", port=p) for h, p in MTU.get("hops", {}).items()
]
PORT_OF = {h.host: h.port for h in HOPS}


def _switch_mtu(port):
    return MTU.get("switch_port", {}).get(port, MTU["fabric"])


@pytest.mark.parametrize("netdev", NETDEVS, ids=[f"{h}/{d}" for h, d in NETDEVS])
def test_netdev_mtu(netdev):
    mtu = MTU["netdev"].get(netdev[0], MTU["fabric"])
    assert mtu == MTU["fabric"], f"{netdev[0]}: netdev {DEV} MTU {mtu}, expected {MTU['fabric']}"


@pytest.mark.parametrize("roce_hop", HOPS, ids=[h.id for h in HOPS])
def test_hop_mtu(roce_hop):
    want = MTU["fabric"]
    host_mtu = MTU["netdev"].get(roce_hop.host, want)
    switch_mtu = _switch_mtu(roce_hop.port)
    assert host_mtu == switch_mtu == want, (
        f"{roce_hop.where}: MTU {switch_mtu} on switch {roce_hop.switch} port {roce_hop.port}, "
        f"{host_mtu} on host {roce_hop.host} {roce_hop.netdev}; fabric.mtu is {want}"
    )


@pytest.mark.parametrize("roce_hop", HOPS, ids=[h.id for h in HOPS])
def test_hop_dscp_map(roce_hop):
    dscp, prio, expected = 26, 3, "1:20"
    live = MTU.get("dscp_class", {}).get(roce_hop.port, expected)
    assert live == expected, (
        f"{roce_hop.where}: DSCP {dscp} -> priority {prio} on host {roce_hop.host}, but "
        f"switch {roce_hop.switch} port {roce_hop.port} sends it to class {live} "
        f"(priority {prio}'s class is {expected})"
    )


@pytest.mark.parametrize("netdev_pair", NETDEV_PAIRS, ids=[f"{s}->{t}" for s, t in NETDEV_PAIRS])
def test_path_mtu(netdev_pair):
    fabric = MTU["fabric"]
    ok = all(MTU["netdev"].get(h, fabric) >= fabric for h in netdev_pair)
    ok = ok and all(_switch_mtu(PORT_OF[h]) >= fabric for h in netdev_pair if h in PORT_OF)
    ok = ok and tuple(netdev_pair) not in {tuple(p) for p in MTU.get("paths", [])}
    assert ok, (
        f"{netdev_pair[0]} {DEV} -> {netdev_pair[1]} {DEV}: don't-fragment ping of "
        f"{fabric - 28} bytes (MTU {fabric}) failed"
    )
'''


def _run(tmp_path: Path, fault: dict[str, object]) -> list[CheckResult]:
    """Run the stand-in suite with ``fault``; return what read_junit reads from pytest's JUnit."""
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "test_stand_in_checks.py").write_text(CHECKS)
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO_ROOT),
        "RAILYARD_FAKE_FAULT": json.dumps(fault),
        "RAILYARD_FAKE_SPEC": str(LAB),
    }
    junit = junit_of(tmp_path / "test_stand_in_checks.py", env)
    return read_junit(junit)


@pytest.fixture(scope="module")
def graph():  # type: ignore[no-untyped-def]
    return graph_from_spec(load_spec(LAB))


def _by_what(found: Diagnosis) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for cause in found.causes:
        out.setdefault(cause.what, []).append(cause.subject)
    return out


def test_one_cable_down_explains_its_failures(tmp_path: Path, graph) -> None:  # type: ignore[no-untyped-def]
    results = _run(tmp_path, {"cables_down": ["gpu03"]})
    found = diagnose(results, graph)
    assert [c.subject for c in found.causes] == ["leaf01 p3 ↔ gpu03 mlx5_0/1"]
    cable = found.causes[0]
    assert cable.kind == "cable" and cable.errors == 0
    assert set(cable.checks) == {
        "test_port_state_active[gpu03/mlx5_0/1]",
        "test_port_physical_state_linkup[gpu03/mlx5_0/1]",
        "test_port_width[gpu03/mlx5_0/1]",
        "test_port_rate[gpu03/mlx5_0/1]",
        "test_declared_link_discovered[leaf01/3-gpu03/mlx5_0/1]",
        "test_host_sees_master[gpu03]",
        "test_ibping[gpu03->gpu08]",
        "test_ibping[gpu06->gpu03]",
        "test_ibtracert_declared_path[gpu03->gpu08]",
        "test_ibtracert_declared_path[gpu06->gpu03]",
    }
    assert set(cable.checks) == {key(r) for r in results if r.failed}
    assert not found.unexplained and not found.errors
    assert found.headlines() == [
        "1 cable down (leaf01 p3 ↔ gpu03 mlx5_0/1) explains 10 failing checks"
    ]


def test_stopped_master_sm(tmp_path: Path, graph) -> None:  # type: ignore[no-untyped-def]
    results = _run(tmp_path, {"sm_stopped": ["sm1"]})
    found = diagnose(results, graph)
    assert _by_what(found) == {"subnet manager down": ["sm1"]}
    sm = found.causes[0]
    assert {"test_sm_answers[sm1]", "test_sm_priority[sm1]", "test_single_master[sm1]"} <= set(
        sm.checks
    )
    assert "test_host_sees_master[gpu05]" in sm.checks
    assert set(sm.checks) == {key(r) for r in results if r.failed}
    assert not found.unexplained and not found.errors


def test_unreachable_node_explains_its_checks_and_those_that_could_not_run(
    tmp_path: Path,
    graph,  # type: ignore[no-untyped-def]
) -> None:
    results = _run(tmp_path, {"unreachable": ["gpu04"]})
    found = diagnose(results, graph)
    assert _by_what(found) == {"node unreachable": ["gpu04"]}
    node = found.causes[0]
    assert "Connection refused" in node.evidence and node.evidence.startswith(
        "ssh: connect to host"
    )
    # the ibping servers on gpu04 cannot start: setup errors, filed under the node
    errors = {key(r) for r in results if r.outcome == "error"}
    assert errors == {"test_ibping[gpu07->gpu04]", "test_ibping[sm1->gpu04]"}
    assert node.errors == 2 and errors <= set(node.checks)
    assert "test_ibping[gpu04->gpu01]" in node.checks
    assert "test_node_idle_or_allocated[gpu04]" in node.checks
    assert set(node.checks) == {key(r) for r in results if r.failed}
    assert found.headlines() == [
        f"1 node unreachable (gpu04) explains {len(node.checks) - 2} failing checks and 2 that "
        "could not run"
    ]


def test_mtu_mismatch_on_a_node_and_a_path(tmp_path: Path, graph) -> None:  # type: ignore[no-untyped-def]
    mtu = {
        "hosts": ["m1", "m2", "m3"],
        "fabric": 9000,
        "netdev": {"m2": 1500},
        "paths": [["m3", "m1"]],
    }
    results = _run(tmp_path, {"mtu": mtu})
    found = diagnose(results, graph)
    assert _by_what(found) == {"MTU mismatch": ["m2 eth0"], "path MTU too small": ["m3->m1"]}
    netdev, path = found.causes
    assert set(netdev.checks) == {
        "test_netdev_mtu[m2/eth0]",
        "test_path_mtu[m1->m2]",
        "test_path_mtu[m2->m3]",
    }
    assert netdev.evidence == "m2: netdev eth0 MTU 1500, expected 9000"
    assert path.checks == ["test_path_mtu[m3->m1]"]


#: The RoCE lab of ``Pulumi.roce-lab.example.yaml``: r1-r3 on switch leaf1 ports swp1-swp3.
ROCE_MTU = {
    "hosts": ["r1", "r2", "r3"],
    "dev": "fab0",
    "fabric": 9000,
    "netdev": {},
    "hops": {"r1": "swp1", "r2": "swp2", "r3": "swp3"},
}


def test_a_switch_port_at_a_wrong_mtu_is_the_one_cause_of_its_paths(
    tmp_path: Path,
    graph,  # type: ignore[no-untyped-def]
) -> None:
    results = _run(tmp_path, {"mtu": {**ROCE_MTU, "switch_port": {"swp1": 1500}}})
    failed = {key(r) for r in results if r.failed}
    assert failed == {
        "test_hop_mtu[r1/fab0-leaf1/swp1]",
        "test_path_mtu[r1->r2]",
        "test_path_mtu[r3->r1]",
    }
    found = diagnose(results, graph)
    assert _by_what(found) == {
        "switch port MTU mismatch": ["switch leaf1 port swp1 ↔ host r1 fab0"]
    }
    (hop,) = found.causes
    assert hop.kind == "hop" and set(hop.checks) == failed
    assert hop.evidence.endswith(
        "MTU 1500 on switch leaf1 port swp1, 9000 on host r1 fab0; fabric.mtu is 9000"
    )
    assert not found.unexplained and not found.errors
    text = summary(results, found.causes)
    assert "no cause found" not in text and "paths through" not in text
    assert found.headlines() == [
        "1 switch port MTU mismatch (switch leaf1 port swp1 ↔ host r1 fab0) explains 3 failing "
        "checks"
    ]


def test_a_host_netdev_at_a_wrong_mtu_behind_a_switch_is_the_host(
    tmp_path: Path,
    graph,  # type: ignore[no-untyped-def]
) -> None:
    results = _run(tmp_path, {"mtu": {**ROCE_MTU, "netdev": {"r2": 1500}}})
    found = diagnose(results, graph)
    assert _by_what(found) == {"MTU mismatch": ["r2 fab0"]}
    assert (
        set(found.causes[0].checks)
        == {key(r) for r in results if r.failed}
        == {
            "test_netdev_mtu[r2/fab0]",
            "test_hop_mtu[r2/fab0-leaf1/swp2]",
            "test_path_mtu[r1->r2]",
            "test_path_mtu[r2->r3]",
        }
    )
    assert not found.unexplained


def test_a_switch_port_with_a_wrong_dscp_class_is_its_hop(
    tmp_path: Path,
    graph,  # type: ignore[no-untyped-def]
) -> None:
    results = _run(tmp_path, {"mtu": {**ROCE_MTU, "dscp_class": {"swp2": "1:30"}}})
    found = diagnose(results, graph)
    assert _by_what(found) == {
        "switch port QoS mismatch": ["switch leaf1 port swp2 ↔ host r2 fab0"]
    }
    assert found.causes[0].checks == ["test_hop_dscp_map[r2/fab0-leaf1/swp2]"]
    assert "sends it to class 1:30" in found.causes[0].evidence
    assert not found.unexplained


def test_an_sm_at_a_wrong_priority_is_that_sm(tmp_path: Path, graph) -> None:  # type: ignore[no-untyped-def]
    results = _run(tmp_path, {"priority": {"sm2": 5}})
    found = diagnose(results, graph)
    assert _by_what(found) == {"subnet manager at a wrong priority": ["sm2"]}
    assert found.causes[0].checks == ["test_sm_priority[sm2]"]
    assert found.causes[0].evidence == "SM on sm2: priority 5, declared 10"
    assert not found.unexplained


def test_two_masters_are_no_single_master(tmp_path: Path, graph) -> None:  # type: ignore[no-untyped-def]
    results = _run(tmp_path, {"two_masters": True})
    found = diagnose(results, graph)
    assert _by_what(found) == {"no single master subnet manager": ["fabric"]}
    assert found.causes[0].checks == [f"test_single_master[{key_of_observer(results)}]"]
    assert "2 MASTER SMs" in found.causes[0].evidence
    assert not found.unexplained


def key_of_observer(results: list[CheckResult]) -> str:
    return next(r.param for r in results if r.name == "test_single_master")


def test_rising_error_counters_are_one_cable_with_errors(tmp_path: Path, graph) -> None:  # type: ignore[no-untyped-def]
    results = _run(tmp_path, {"errors": ["gpu05"]})
    found = diagnose(results, graph)
    assert _by_what(found) == {"cable with errors": ["leaf01 p5 ↔ gpu05 mlx5_0/1"]}
    assert found.causes[0].checks == ["test_port_error_counters[gpu05/mlx5_0/1]"]
    assert found.causes[0].evidence.startswith(
        "cable leaf01 port 5 ↔ gpu05 mlx5_0 port 1: errors rising: gpu05 mlx5_0/1 "
        "SymbolErrorCounter +40"
    )
    assert not found.unexplained


def test_a_port_on_the_wrong_switch_port_is_miscabled(tmp_path: Path, graph) -> None:  # type: ignore[no-untyped-def]
    results = _run(tmp_path, {"miscabled": {"gpu03": ["leaf01", 4]}})
    found = diagnose(results, graph)
    assert _by_what(found) == {"port miscabled": ["leaf01 p3 ↔ gpu03 mlx5_0/1"]}
    assert found.causes[0].checks == ["test_port_cabled_to_declared_switch_port[gpu03/mlx5_0/1]"]
    assert not found.unexplained


def test_a_slow_port_is_one_degraded_port(tmp_path: Path, graph) -> None:  # type: ignore[no-untyped-def]
    results = _run(tmp_path, {"slow": ["gpu05"]})
    found = diagnose(results, graph)
    assert _by_what(found) == {"port degraded": ["leaf01 p5 ↔ gpu05 mlx5_0/1"]}
    assert set(found.causes[0].checks) == {
        "test_port_rate[gpu05/mlx5_0/1]",
        "test_declared_link_discovered[leaf01/5-gpu05/mlx5_0/1]",
    }
    assert not found.unexplained


def test_two_unrelated_causes_at_once(tmp_path: Path, graph) -> None:  # type: ignore[no-untyped-def]
    results = _run(tmp_path, {"cables_down": ["gpu02"], "sm_stopped": ["sm2"]})
    found = diagnose(results, graph)
    assert _by_what(found) == {
        "cable down": ["leaf01 p2 ↔ gpu02 mlx5_0/1"],
        "subnet manager down": ["sm2"],
    }
    cable, sm = found.causes
    assert set(sm.checks) == {"test_sm_answers[sm2]", "test_sm_priority[sm2]"}
    assert all("gpu02" in check for check in cable.checks)
    assert not found.unexplained
    assert found.headlines()[1] == "1 subnet manager down (sm2) explains 2 failing checks"


def test_harness_errors_stay_apart(tmp_path: Path, graph) -> None:  # type: ignore[no-untyped-def]
    results = _run(tmp_path, {"cables_down": ["gpu03"], "harness_error": ["gpu01->gpu06"]})
    found = diagnose(results, graph)
    assert [c.what for c in found.causes] == ["cable down"]
    errors = {key(r): r.message for r in found.errors}
    assert set(errors) == {
        "test_ibping[gpu01->gpu06]",
        "test_ibtracert_declared_path[gpu01->gpu06]",
    }
    assert "ibsim gave no prompt" in errors["test_ibping[gpu01->gpu06]"]
    assert (
        "printed nothing the parser can read"
        in errors["test_ibtracert_declared_path[gpu01->gpu06]"]
    )
    text = summary(results, found.causes)
    assert text.startswith(f"10 of {len(results)} checks failed, 2 could not run")
    head, _, errors_part = text.partition("could not run (harness or tool error, not a fabric")
    assert "test_ibping[gpu01->gpu06]" not in head and "test_ibping[gpu01->gpu06]" in errors_part


def test_no_failures_no_causes(tmp_path: Path, graph) -> None:  # type: ignore[no-untyped-def]
    results = _run(tmp_path, {})
    found = diagnose(results, graph)
    assert results and not found.causes and not found.unexplained and not found.errors
    skipped = sum(r.outcome == "skipped" for r in results)
    assert skipped, "the lab's checks include ones that do not apply (skipped)"
    assert summary(results) == (
        f"all {len(results) - skipped} checks passed, {skipped} skipped (not applicable here)"
    )
    assert ALL_PASSED.fullmatch(summary(results))
    passed_only = [r for r in results if r.outcome == "passed"]
    assert summary(passed_only) == f"all {len(passed_only)} checks passed"
    md = markdown(results, {}, "lab", causes=found.causes)
    assert md.startswith("# lab: PASSED") and "Root causes" not in md


def test_reports_open_with_the_causes(tmp_path: Path, graph) -> None:  # type: ignore[no-untyped-def]
    results = _run(tmp_path, {"cables_down": ["gpu03"], "harness_error": ["gpu01->gpu06"]})
    causes = diagnose(results, graph).causes
    headline = "1 cable down (leaf01 p3 ↔ gpu03 mlx5_0/1) explains 10 failing checks"

    md = markdown(results, {}, "lab", causes=causes)
    assert md.index("## Root causes") < md.index("## Failed") < md.index("## Could not run")
    assert f"- {headline}" in md and "# lab: FAILED" in md
    assert "| cable down: leaf01 p3 ↔ gpu03 mlx5_0/1 | test_port_width |" in md

    console = Console(record=True, width=240)
    terminal_table(results, {}, console, causes)
    out = console.export_text()
    assert out.index("Root causes") < out.index(headline) < out.index("Failed checks")
    assert out.index("Failed checks") < out.index("Could not run")

    junit = tmp_path / "checks.xml"
    annotate_junit(junit, results, causes)
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None and suite[0].tag == "properties"
    props = {(p.get("name"), p.get("value")) for p in suite[0]}
    assert ("railyard.cause", headline) in props and ("railyard.could_not_run", "2") in props
    case = next(c for c in suite.iter("testcase") if c.get("name") == "test_ibping[gpu06->gpu03]")
    assert ("railyard.cause", "cable down: leaf01 p3 ↔ gpu03 mlx5_0/1") in {
        (p.get("name"), p.get("value")) for p in case.iter("property")
    }
    again = read_junit(junit)  # counts, outcomes and subjects are pytest's still
    assert [(r.name, r.param, r.outcome, r.subjects) for r in again] == [
        (r.name, r.param, r.outcome, r.subjects) for r in results
    ]


def test_without_a_graph_cables_are_named_from_the_link_checks(tmp_path: Path) -> None:
    results = _run(tmp_path, {"cables_down": ["gpu03"]})
    found = diagnose(results)
    assert [c.subject for c in found.causes] == ["leaf01 p3 ↔ gpu03 mlx5_0/1"]
