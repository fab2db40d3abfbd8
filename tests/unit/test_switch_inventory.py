"""Switches in the inventory: a ``switches`` group with each switch's OS, ports and connection,
``switch_qos_apply`` only for ``manage: true``; node plays and checks never see them."""

from __future__ import annotations

import pytest

from fabric.inventory import InventoryError, build_inventory, inventory_text
from fabric.spec import ClusterSpec, spec_from_mapping
from fabric.verify.context import inventory_groups, inventory_hosts, select_hosts
from tests.unit.test_roce_spec import LAB_ROCE

KEYS = {"private_key_file": "/k/id", "known_hosts_file": "/k/known_hosts", "ssh_user": "root"}
ADDRESSES = {"gpu1": "198.18.60.11", "gpu2": "198.18.60.12"}


def spec_with(*switches: dict) -> ClusterSpec:
    data = dict(LAB_ROCE)
    data["fabric"] = dict(LAB_ROCE["fabric"], switches=list(switches))
    return spec_from_mapping(data)


LEAF = {
    "name": "leaf1",
    "os": "linux",
    "manage": True,
    "ssh_user": "root",
    "ports": [
        {"name": "p-gpu1", "host": "gpu1", "netdev": "eth1"},
        {"name": "p-gpu2", "host": "gpu2", "netdev": "eth1"},
    ],
}


def test_managed_linux_switch_is_in_the_switches_group() -> None:
    spec = spec_with(LEAF, {"name": "mgmt", "os": "unmanaged"})
    inv = build_inventory(spec, ADDRESSES | {"leaf1": "198.18.60.2"}, **KEYS)
    switches = inv["all"]["children"]["switches"]["hosts"]
    assert list(switches) == ["leaf1"]
    assert switches["leaf1"] == {
        "switch_name": "leaf1",
        "switch_os": "linux",
        "switch_role": "leaf",
        "switch_managed": True,
        "switch_qos_apply": True,
        "switch_qos_interfaces": ["p-gpu1", "p-gpu2"],
        "ansible_user": "root",
        "switch_qos_os": "linux",
        "ansible_host": "198.18.60.2",
        "ansible_connection": "ssh",
    }
    # Node selection (checks, watch) never includes a switch.
    assert inventory_hosts(inv) == ["gpu1", "gpu2"]
    assert select_hosts(None, inv) == ["gpu1", "gpu2"]
    assert inventory_groups(inv)["switches"] == ["leaf1"]
    assert "leaf1:" in inventory_text(inv)


def test_managed_sonic_switch_gets_its_network_os() -> None:
    sonic = {"name": "leaf2", "os": "sonic", "address": "198.18.61.2", "manage": True}
    inv = build_inventory(spec_with(sonic, {"name": "leaf3", "os": "sonic"}), ADDRESSES, **KEYS)
    switches = inv["all"]["children"]["switches"]["hosts"]
    assert list(switches) == ["leaf2"]  # leaf3 is not managed: never contacted
    assert switches["leaf2"]["switch_qos_apply"] is True
    assert switches["leaf2"]["ansible_network_os"] == "dellemc.enterprise_sonic.sonic"
    assert switches["leaf2"]["ansible_host"] == "198.18.61.2"


def test_managed_switch_without_address_is_refused() -> None:
    with pytest.raises(InventoryError, match="'leaf1' is managed but has no address"):
        build_inventory(spec_with(LEAF), ADDRESSES, **KEYS)
