"""RoCE consistency: each host-switch hop agrees with itself and with the spec.

For every declared hop (a host's fabric netdev and the managed Linux switch port facing it,
``fabric.switches[].ports``) the host side (its live MTU; the QoS ``roce_qos`` configured, from
the local fact ``ansible_local.roce_qos``) is compared with the switch side (live, read by the
switch_qos script's ``show``: port MTU, DSCP -> class, the lossless class, RED/ECN; the watchdog
from ``ansible_local.switch_qos``). A disagreement names the switch, the port, the host and both
values. What a side could not apply (no ConnectX, a kernel without sch_red, Linux DCB without a
PFC watchdog) is skipped with that reason, never passed.

``test_roce_write_bandwidth``: on real RoCE hardware, ``ib_write_bw -R`` (rdma_cm) with the
declared ToS between sampled pairs, judged against the floor for the link rate.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterator
from typing import Any

import pytest

from fabric.parsers import PARSERS
from fabric.verify.bandwidth import min_write_bw
from fabric.verify.facts import Facts
from fabric.verify.plan import CheckPlan, Pair, SwitchHop

#: Where switch_qos keeps its script and settings on a Linux switch (role defaults).
SWITCH_SCRIPT = "/usr/local/libexec/railyard/switch-qos-linux"
SWITCH_SETTINGS = "/etc/railyard/switch-qos.json"
SWITCH_FACT = "/etc/ansible/facts.d/switch_qos.fact"
HOST_FACT = "/etc/ansible/facts.d/roce_qos.fact"


def _json(target: Any, command: str, what: str) -> Any:
    """Run ``command`` on ``target`` and parse its JSON; a failure is a harness error."""
    result = target.run(command)
    if result.rc != 0:
        raise RuntimeError(f"{what}: {command} failed: {(result.stderr or result.stdout)[-200:]}")
    try:
        return json.loads(result.stdout)
    except json.JSONDecodeError as error:
        raise RuntimeError(f"{what}: {command} printed no JSON ({error})") from error


def _switch(facts: Facts, hop: SwitchHop) -> dict[str, Any]:
    """The switch port's live state (switch_qos ``show``), read once per switch."""
    state = facts._once(
        ("switch_qos_show", hop.switch),
        lambda: _json(
            facts.connect(hop.switch),
            f"python3 {SWITCH_SCRIPT} show {SWITCH_SETTINGS}",
            f"switch {hop.switch}",
        ),
    )
    if hop.port not in state:
        raise RuntimeError(
            f"switch {hop.switch}: port {hop.port} is not in its switch_qos settings"
        )
    return state[hop.port]


def _switch_fact(facts: Facts, hop: SwitchHop) -> dict[str, Any]:
    """What switch_qos applied, skipped or found unavailable on each port, and wanted."""
    return facts._once(
        ("switch_qos_fact", hop.switch),
        lambda: _json(facts.connect(hop.switch), f"cat {SWITCH_FACT}", f"switch {hop.switch}"),
    )


def _host_fact(host: Any, hop: SwitchHop) -> dict[str, Any]:
    return _json(host, f"cat {HOST_FACT}", f"host {hop.host}")


@pytest.mark.family("roce_consistency")
def test_hop_mtu(host, facts: Facts, roce_hop: SwitchHop, plan: CheckPlan) -> None:
    """The host's netdev and the switch port facing it carry the fabric MTU."""
    want = plan.spec.fabric.mtu
    iface = host.interface(roce_hop.netdev)
    assert iface.exists, f"{roce_hop.where}: host netdev {roce_hop.netdev} does not exist"
    host_mtu = iface.link[0]["mtu"]
    switch_mtu = _switch(facts, roce_hop)["mtu"]
    assert host_mtu == switch_mtu == want, (
        f"{roce_hop.where}: MTU {switch_mtu} on switch {roce_hop.switch} port {roce_hop.port}, "
        f"{host_mtu} on host {roce_hop.host} {roce_hop.netdev}; fabric.mtu is {want}"
    )


@pytest.mark.family("roce_consistency")
def test_hop_dscp_map(host, facts: Facts, roce_hop: SwitchHop, plan: CheckPlan) -> None:
    """RDMA's and CNPs' DSCP land in the same priority's class on the host and the switch."""
    roce = plan.spec.fabric.roce
    assert roce is not None
    if roce.trust != "dscp":
        pytest.skip("fabric.roce.trust is pcp: no DSCP map to compare")
    wanted = _host_fact(host, roce_hop)["wanted"]
    port = _switch(facts, roce_hop)
    rows = (
        ("rdma", int(wanted["rdma_dscp"]), int(wanted["pfc_priority"])),
        ("cnp", int(wanted["cnp_dscp"]), int(wanted.get("cnp_priority", roce.cnp_priority))),
    )
    for what, dscp, prio in rows:
        live = port["dscp_map"].get(str(dscp))
        expected = port["class_of"][what]
        assert live == expected, (
            f"{roce_hop.where}: DSCP {dscp} -> priority {prio} on host {roce_hop.host}, but "
            f"switch {roce_hop.switch} port {roce_hop.port} sends it to class {live} "
            f"(priority {prio}'s class is {expected})"
        )


@pytest.mark.family("roce_consistency")
def test_hop_lossless_class(host, facts: Facts, roce_hop: SwitchHop, plan: CheckPlan) -> None:
    """The switch port has the lossless (RDMA) class of the host's PFC priority, with PFC where
    the driver has it."""
    prio = int(_host_fact(host, roce_hop)["wanted"]["pfc_priority"])
    switch_prio = int(_switch_fact(facts, roce_hop)["wanted"]["pfc_priority"])
    assert switch_prio == prio, (
        f"{roce_hop.where}: PFC priority {switch_prio} on switch {roce_hop.switch} port "
        f"{roce_hop.port}, {prio} on host {roce_hop.host}"
    )
    port = _switch(facts, roce_hop)
    rdma = port["class_of"]["rdma"]
    assert rdma in port["classes"], (
        f"{roce_hop.where}: switch {roce_hop.switch} port {roce_hop.port} has no lossless class "
        f"{rdma} for priority {prio} (classes: {sorted(port['classes'])}); host {roce_hop.host} "
        f"sends RDMA on priority {prio}"
    )
    pfc = port["pfc"]
    if pfc is not None:
        enabled = pfc.get("prio_pfc", {})
        assert enabled.get(str(prio)) in (True, "on"), (
            f"{roce_hop.where}: PFC off for priority {prio} on switch {roce_hop.switch} port "
            f"{roce_hop.port}, on for host {roce_hop.host}"
        )


@pytest.mark.family("roce_consistency")
def test_hop_ecn(host, facts: Facts, roce_hop: SwitchHop, plan: CheckPlan) -> None:
    """ECN marking on the switch port's lossless queue has the spec's thresholds when the host
    reacts to ECN (DCQCN)."""
    host_ecn = bool(_host_fact(host, roce_hop)["wanted"]["ecn"])
    report = _switch_fact(facts, roce_hop)["ports"].get(roce_hop.port, {})
    outcome = report.get("ecn", "")
    if outcome.startswith(("unavailable", "skipped")):
        pytest.skip(f"switch {roce_hop.switch} port {roce_hop.port}: ECN {outcome}")
    red = _switch(facts, roce_hop)["ecn"]
    if not host_ecn:
        assert red is None, (
            f"{roce_hop.where}: ECN marks on switch {roce_hop.switch} port {roce_hop.port} but is "
            f"off on host {roce_hop.host}"
        )
        return
    queue = next(q for q in plan.spec.fabric.roce.ecn_marking)  # type: ignore[union-attr]
    assert red is not None, (
        f"{roce_hop.where}: ECN on host {roce_hop.host}, but switch {roce_hop.switch} port "
        f"{roce_hop.port} has no RED/ECN qdisc on its lossless class"
    )
    live = (red.get("min"), red.get("max"))
    assert live == (queue.min_bytes, queue.max_bytes), (
        f"{roce_hop.where}: ECN thresholds {live[0]}-{live[1]} bytes on switch {roce_hop.switch} "
        f"port {roce_hop.port}, spec {queue.min_bytes}-{queue.max_bytes} on host {roce_hop.host}"
    )


@pytest.mark.family("roce_consistency")
def test_hop_pfc_watchdog(host, facts: Facts, roce_hop: SwitchHop, plan: CheckPlan) -> None:
    """The PFC watchdog is configured as the spec says on the switch port (and the host NIC)."""
    dog = plan.spec.fabric.roce.pfc_watchdog  # type: ignore[union-attr]
    fact = _switch_fact(facts, roce_hop)
    wanted = fact["wanted"]["pfc_watchdog"]
    spec = {
        "enabled": dog.enabled,
        "detection_ms": dog.detection_ms,
        "restore_ms": dog.restore_ms,
        "action": dog.action,
    }
    assert wanted == spec, (
        f"{roce_hop.where}: PFC watchdog {wanted} configured on switch {roce_hop.switch} port "
        f"{roce_hop.port}, spec {spec}"
    )
    host_ms = int(_host_fact(host, roce_hop)["wanted"].get("pfc_watchdog_ms", 0))
    assert host_ms == dog.detection_ms * dog.enabled, (
        f"{roce_hop.where}: NIC PFC storm prevention {host_ms} ms on host {roce_hop.host}, "
        f"switch watchdog detection {dog.detection_ms} ms"
    )
    outcome = fact["ports"].get(roce_hop.port, {}).get("pfc_watchdog", "")
    if outcome.startswith("skipped"):
        pytest.skip(f"switch {roce_hop.switch} port {roce_hop.port}: watchdog {outcome}")


@pytest.fixture
def rdma_cm_server(facts: Facts, plan: CheckPlan, netdev_pair: Pair) -> Iterator[None]:
    """``ib_write_bw -R`` server on the target, with the declared ToS."""
    target = facts.connect(netdev_pair.target)
    started = target.run(
        f"timeout 60 {_write_bw(plan, netdev_pair.target)} >/dev/null 2>&1 & echo $!"
    )
    yield
    pid = started.stdout.strip()
    if pid.isdigit():
        target.run(f"kill {pid} 2>/dev/null || true")


def _write_bw(plan: CheckPlan, name: str) -> str:
    hca = plan.spec.hosts[name].hcas[0]
    tos = plan.spec.fabric.roce.roce_tos if plan.spec.fabric.roce else 106
    return f"ib_write_bw -R -T {tos} --report_gbits -d {shlex.quote(hca.device)}"


@pytest.mark.family("roce_bandwidth")
def test_roce_write_bandwidth(
    host, facts: Facts, plan: CheckPlan, netdev_pair: Pair, rdma_cm_server: None
) -> None:
    """``ib_write_bw -R`` with the declared ToS reaches the floor for the link rate."""
    rate = plan.spec.hosts[netdev_pair.source].hcas[0].rate_gbps
    floor = min_write_bw(rate)
    address = facts.connect(netdev_pair.target).backend.host.name
    result = host.run(f"timeout 60 {_write_bw(plan, netdev_pair.source)} {address}")
    report = PARSERS["perftest"](result.stdout + result.stderr)
    rows = [row.bw_average for run in report.runs for row in run.bw]
    assert rows, f"{netdev_pair.id}: ib_write_bw -R gave no result: {report.reason}"
    assert max(rows) >= floor, (
        f"{netdev_pair.id}: ib_write_bw -R (ToS {plan.spec.fabric.roce.roce_tos if plan.spec.fabric.roce else 106}) "
        f"{max(rows):.1f} Gb/s < floor {floor} Gb/s for {rate} Gb/s links"
    )
