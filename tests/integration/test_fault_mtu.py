"""The MTU fault (issue 6): one node's fabric MTU set to 1500 makes the MTU checks name that
node and its pairs; restoring it makes them pass again.

The lab is a RoCE one of its own (``pulumi up`` through :mod:`labkit`, no hand-off: the MTU
checks need only SSH and the inventory): three compute nodes m1-m3 on the lab's RoCE fabric
network, a podman bridge at the spec's MTU 9000. Each node's fabric netdev is ``eth0``: the
lab names a node's interfaces in network-name order (``<prefix>-fabric`` ``eth0``,
``<prefix>-mgmt`` ``eth1``, ``fabric.lab.node.create_node``); the first test confirms the
declared netdev holds the node's fabric address.

The fault is set from the host (``fabric.lab.faults.set_container_mtu``: ``nsenter`` into
m2's network namespace, ``ip link set dev eth0 mtu 1500``), since lab containers have no
CAP_NET_ADMIN. The path-MTU pairs are a ring (m1->m2, m2->m3, m3->m1): m2 is the source of one
pair (its own don't-fragment ping is too long for its netdev) and the target of another (the
9000-byte frame is dropped at its 1500-byte netdev); m3->m1 does not involve it. Every ping
goes to the lab's own fabric addresses.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from fabric.lab.faults import FaultError, set_container_mtu
from tests.integration.labkit import OwnLab, own_lab

pytestmark = pytest.mark.integration

MTU_CHECKS = "test_netdev_mtu or test_path_mtu"
FABRIC_MTU = 9000
FAULT_MTU = 1500
NETDEV = "eth0"
NODES = ("m1", "m2", "m3")
FAULTED = "m2"
NETDEV_CHECKS = {n: f"test_netdev_mtu[{n}/{NETDEV}]" for n in NODES}
PAIR_CHECKS = {
    ("m1", "m2"): "test_path_mtu[m1->m2]",
    ("m2", "m3"): "test_path_mtu[m2->m3]",
    ("m3", "m1"): "test_path_mtu[m3->m1]",
}
ALL_CHECKS = set(NETDEV_CHECKS.values()) | set(PAIR_CHECKS.values())


def _spec(tag: int) -> dict[str, Any]:
    hca = {"device": "mlx5_0", "link_layer": "Ethernet", "netdev": NETDEV, "rate_gbps": 100}
    return {
        "name": "rymtu",
        "target": "lab",
        "nodes": [{"names": "m[1-3]", "role": "compute", "hcas": [hca]}],
        "fabric": {"kind": "roce", "mtu": FABRIC_MTU},
        "management": {"subnet": f"198.19.{100 + tag}.0/24"},
        "bmc": {"subnet": f"198.19.{120 + tag}.0/24"},
        "lab": {
            "bmc_port": 19300 + 2 * tag,
            "ibsim_port": 18100 + 16 * tag,
            "roce_subnet": f"198.19.{140 + tag}.0/24",
        },
    }


Outcomes = dict[str, tuple[str, str]]


def _outcomes(lab: OwnLab) -> Outcomes:
    """``name[param]`` -> (outcome, message) of every MTU check."""
    return {key: (r.outcome, r.message) for key, r in lab.checks(MTU_CHECKS).items()}


def _failed(outcomes: Outcomes) -> dict[str, str]:
    return {
        key: message
        for key, (outcome, message) in outcomes.items()
        if outcome in ("failed", "error")
    }


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OwnLab]:
    with own_lab(tmp_path_factory, "rymtu", _spec) as lab:
        yield lab
    assert lab.leftovers == {}, lab.leftovers


@pytest.fixture(scope="module")
def mtu_fault(lab: OwnLab) -> dict[str, Any]:
    """Check outcomes before, during and after m2's fabric MTU is 1500, and what the fault saw."""
    container = lab.hosts()[FAULTED]["container"]
    before = _outcomes(lab)
    previous = set_container_mtu(container, NETDEV, FAULT_MTU)
    try:
        seen = int(lab.ssh(FAULTED, f"cat /sys/class/net/{NETDEV}/mtu").strip())
        during = _outcomes(lab)
    finally:
        faulted = set_container_mtu(container, NETDEV, previous)
    after = _outcomes(lab)
    return {
        "before": before,
        "previous": previous,
        "seen": seen,
        "during": during,
        "faulted": faulted,
        "after": after,
    }


def test_fabric_netdev_holds_the_fabric_address_at_the_spec_mtu(lab: OwnLab) -> None:
    for node, host in lab.hosts().items():
        link = json.loads(lab.ssh(node, f"ip -j addr show dev {NETDEV}"))[0]
        addresses = [a["local"] for a in link["addr_info"] if a["family"] == "inet"]
        assert addresses == [host["fabric_address"]] and link["mtu"] == FABRIC_MTU, (node, link)


def test_mtu_checks_pass_before_the_fault(mtu_fault: dict[str, Any]) -> None:
    before = mtu_fault["before"]
    assert set(before) == ALL_CHECKS, sorted(before)
    assert _failed(before) == {}


def test_fault_sets_the_node_mtu_and_reports_the_previous_one(mtu_fault: dict[str, Any]) -> None:
    assert (mtu_fault["previous"], mtu_fault["seen"], mtu_fault["faulted"]) == (
        FABRIC_MTU,
        FAULT_MTU,
        FAULT_MTU,
    )


def test_netdev_mtu_check_fails_naming_the_node(mtu_fault: dict[str, Any]) -> None:
    outcome, message = mtu_fault["during"][NETDEV_CHECKS[FAULTED]]
    assert outcome == "failed", mtu_fault["during"]
    assert message.startswith(
        f"{FAULTED}: netdev {NETDEV} MTU {FAULT_MTU}, expected {FABRIC_MTU}"
    ), message


@pytest.mark.parametrize("pair", [("m1", "m2"), ("m2", "m3")], ids=["m2-target", "m2-source"])
def test_path_mtu_fails_for_the_pairs_of_the_node_naming_it(
    mtu_fault: dict[str, Any], pair: tuple[str, str]
) -> None:
    outcome, message = mtu_fault["during"][PAIR_CHECKS[pair]]
    source, target = pair
    assert outcome == "failed", mtu_fault["during"]
    assert message.startswith(f"{source} {NETDEV} -> {target} {NETDEV} ("), message
    assert f"don't-fragment ping of {FABRIC_MTU - 28} bytes (MTU {FABRIC_MTU}) failed" in message, (
        message
    )


def test_only_the_node_and_its_pairs_fail(mtu_fault: dict[str, Any]) -> None:
    during = mtu_fault["during"]
    assert set(during) == ALL_CHECKS, sorted(during)
    assert set(_failed(during)) == {
        NETDEV_CHECKS[FAULTED],
        PAIR_CHECKS[("m1", "m2")],
        PAIR_CHECKS[("m2", "m3")],
    }
    assert during[PAIR_CHECKS[("m3", "m1")]][0] == "passed"


def test_restored_mtu_passes_again(mtu_fault: dict[str, Any]) -> None:
    after = mtu_fault["after"]
    assert set(after) == ALL_CHECKS and _failed(after) == {}, after


def test_fault_on_a_missing_netdev_or_container_names_it(
    lab: OwnLab, mtu_fault: dict[str, Any]
) -> None:
    container = lab.hosts()[FAULTED]["container"]
    with pytest.raises(FaultError, match=f"MTU 1500 on {container} nosuch0: .*nosuch0"):
        set_container_mtu(container, "nosuch0", FAULT_MTU)
    with pytest.raises(FaultError, match=f"no container {lab.name}-nosuch"):
        set_container_mtu(f"{lab.name}-nosuch", NETDEV, FAULT_MTU)
