"""build_inventory: groups by role, subnet managers with priority, fabric hosts, connection vars."""

from __future__ import annotations

import pytest
import yaml

from fabric.inventory import InventoryError, build_inventory
from fabric.spec import ClusterSpec
from fabric.state import REPO_ROOT

LAB = yaml.safe_load((REPO_ROOT / "Pulumi.lab.yaml").read_text())["config"]["railyard:cluster"]


@pytest.fixture
def spec() -> ClusterSpec:
    return ClusterSpec.model_validate(LAB)


@pytest.fixture
def inventory(spec: ClusterSpec) -> dict:
    addresses = {h: f"198.18.0.{10 + i}" for i, h in enumerate(spec.hosts)}
    return build_inventory(
        spec, addresses, ssh_user="root", private_key_file="/s/id", known_hosts_file="/s/kh"
    )


def test_every_host_has_its_address(inventory: dict) -> None:
    hosts = inventory["all"]["hosts"]
    assert len(hosts) == 11
    assert hosts["gpu01"] == {"ansible_host": "198.18.0.10"}
    assert hosts["ctl1"] == {"ansible_host": "198.18.0.20"}


def test_connection_vars_keep_host_key_checking_on(inventory: dict) -> None:
    v = inventory["all"]["vars"]
    assert (
        v["ansible_ssh_common_args"] == "-o UserKnownHostsFile=/s/kh -o StrictHostKeyChecking=yes"
    )
    assert v["ansible_ssh_private_key_file"] == "/s/id"
    assert v["ansible_user"] == "root"


@pytest.mark.parametrize(
    ("group", "members"),
    [
        ("compute", [f"gpu0{i}" for i in range(1, 9)]),
        ("sm", ["sm1", "sm2"]),
        ("controller", ["ctl1"]),
        ("login", []),
        ("fabric_hosts", [f"gpu0{i}" for i in range(1, 9)] + ["sm1", "sm2"]),
        ("slurm_controller", ["ctl1"]),
        ("subnet_managers", ["sm1", "sm2"]),
    ],
)
def test_groups(inventory: dict, group: str, members: list[str]) -> None:
    assert list(inventory["all"]["children"][group]["hosts"]) == members


def test_subnet_manager_priority_is_a_hostvar(inventory: dict) -> None:
    sms = inventory["all"]["children"]["subnet_managers"]["hosts"]
    assert sms == {"sm1": {"subnet_manager_priority": 14}, "sm2": {"subnet_manager_priority": 10}}


def test_missing_address_names_the_host(spec: ClusterSpec) -> None:
    with pytest.raises(InventoryError, match="ctl1"):
        build_inventory(
            spec,
            {h: "198.18.0.9" for h in spec.hosts if h != "ctl1"},
            ssh_user="root",
            private_key_file="/s/id",
            known_hosts_file="/s/kh",
        )


def test_relative_key_path_is_refused(spec: ClusterSpec) -> None:
    with pytest.raises(InventoryError, match="absolute"):
        build_inventory(
            spec,
            {h: "198.18.0.9" for h in spec.hosts},
            ssh_user="root",
            private_key_file="id",
            known_hosts_file="/s/kh",
        )


def _with_bastion(host: str, **extra: object) -> ClusterSpec:
    data = {**LAB, "access": {"bastion": {"host": host, "user": "jump", **extra}}}
    return ClusterSpec.model_validate(data)


def test_every_host_goes_through_an_external_bastion() -> None:
    spec = _with_bastion("bastion.example.org", port=2222)
    addresses = {h: f"198.18.0.{10 + i}" for i, h in enumerate(spec.hosts)}
    inv = build_inventory(
        spec, addresses, ssh_user="root", private_key_file="/s/id", known_hosts_file="/s/kh"
    )["all"]
    common = inv["vars"]["ansible_ssh_common_args"]
    assert common.startswith("-o UserKnownHostsFile=/s/kh -o StrictHostKeyChecking=yes -o ")
    assert "'ssh -o UserKnownHostsFile=/s/kh -o StrictHostKeyChecking=yes" in common
    assert common.endswith("-i /s/id -p 2222 -W %h:%p jump@bastion.example.org'")
    assert all(set(v) == {"ansible_host"} for v in inv["hosts"].values())


def test_a_bastion_node_is_reached_directly_at_its_public_address() -> None:
    spec = _with_bastion("ctl1")
    addresses = {h: f"198.18.0.{10 + i}" for i, h in enumerate(spec.hosts)}
    own = build_inventory(  # bare metal: the node's own (management) address
        spec, addresses, ssh_user="root", private_key_file="/s/id", known_hosts_file="/s/kh"
    )["all"]
    assert own["vars"]["ansible_ssh_common_args"].endswith(f"jump@{addresses['ctl1']}'")
    assert own["hosts"]["ctl1"]["ansible_host"] == addresses["ctl1"]
    inv = build_inventory(
        spec,
        addresses,
        ssh_user="root",
        private_key_file="/s/id",
        known_hosts_file="/s/kh",
        bastion_address="203.0.113.9",
    )["all"]
    assert inv["hosts"]["ctl1"] == {
        "ansible_host": "203.0.113.9",
        "ansible_ssh_common_args": "-o UserKnownHostsFile=/s/kh -o StrictHostKeyChecking=yes",
    }
    assert inv["vars"]["ansible_ssh_common_args"].endswith("-W %h:%p jump@203.0.113.9'")
    assert inv["hosts"]["gpu01"] == {"ansible_host": "198.18.0.10"}
