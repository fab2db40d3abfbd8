"""The storage role's variables in the inventory (issue 40): the spec's NFS file systems and
scratch layout, every declared name, and the created kinds' addresses a target hands over."""

from __future__ import annotations

from test_spec import base

from fabric.inventory import build_inventory, storage_shared_entries, storage_vars
from fabric.spec import spec_from_mapping


def _lab_with_storage() -> dict:
    data = base("lab")
    data["storage"] = {
        "shared": [
            {"name": "home", "kind": "nfs", "server": "198.18.0.10", "export": "/srv/home"},
            {
                "name": "data",
                "kind": "nfs",
                "server": "198.18.0.10",
                "mount": "/data",
                "options": "ro",
            },
        ],
        "scratch": {"devices": "nvme"},
    }
    return data


def test_lab_nfs_and_scratch_reach_every_host() -> None:
    spec = spec_from_mapping(_lab_with_storage())
    inventory = build_inventory(
        spec,
        {h: "198.18.0.1" for h in spec.hosts},
        ssh_user="root",
        private_key_file="/k",
        known_hosts_file="/kh",
    )
    out = inventory["all"]["vars"]
    assert out["storage_shared"] == [
        {"name": "home", "kind": "nfs", "server": "198.18.0.10", "export": "/srv/home",
         "mount": "/home", "options": ""},
        {"name": "data", "kind": "nfs", "server": "198.18.0.10", "export": "/", "mount": "/data",
         "options": "ro"},
    ]  # fmt: skip
    assert out["storage_declared"] == ["home", "data"]
    assert out["storage_scratch"] == {"mount": "/scratch", "devices": "nvme", "filesystem": "xfs"}


def test_no_storage_block_no_storage_vars() -> None:
    assert storage_vars(spec_from_mapping(base("lab"))) == {}


def test_created_kinds_wait_for_their_address() -> None:
    data = base("aws")
    data["storage"] = {"shared": [{"name": "home", "kind": "efs"}]}
    data["aws"]["availability_zone"] = "us-east-2a"
    spec = spec_from_mapping(data)
    out = storage_vars(spec)
    assert out["storage_shared"] == [] and out["storage_declared"] == ["home"]
    assert out["storage_scratch"] == {}
    given = storage_shared_entries(spec, {"home": "fs-0123.efs.example.internal"})
    assert given == [
        {"name": "home", "kind": "efs", "server": "fs-0123.efs.example.internal",
         "export": "/", "mount": "/home", "options": ""}
    ]  # fmt: skip
