"""A 3-node lab built by ``pulumi up`` (Automation API, local file backend in tmp) from real
parts: podman nodes with systemd, ibsim + OpenSM, the sushy-tools Redfish emulator.

Infrastructure only: the stack config turns the hand-off and the verification off."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from fabric.lab.bmc import read_credentials
from fabric.lab.ssh import run
from fabric.parsers.ibstat import parse
from tests.integration.labkit import OwnLab, own_lab

pytestmark = pytest.mark.integration


def _spec(tag: int, compute: str = "n[1-2]") -> dict[str, Any]:
    return {
        "name": "rytest",
        "target": "lab",
        "nodes": [
            {"names": compute, "role": "compute", "hcas": [{"device": "mlx5_0"}]},
            {"names": "sm1", "role": "sm", "hcas": [{"device": "mlx5_0"}]},
        ],
        "fabric": {
            "kind": "infiniband",
            "mtu": 4096,
            "topology": {
                "kind": "fat-tree",
                "leaves": 1,
                "nodes_per_leaf": 4,
                "ports_per_switch": 8,
            },
            "infiniband": {"subnet_managers": [{"host": "sm1", "priority": 14}]},
        },
        "management": {"subnet": f"198.18.{200 + tag}.0/24"},
        "bmc": {"subnet": f"198.18.{220 + tag}.0/24"},
        "slurm": {"controller": "sm1"},
        "lab": {"bmc_port": 19000 + 2 * tag, "ibsim_port": 17200 + 16 * tag},
    }


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OwnLab]:
    with own_lab(tmp_path_factory, "rytest", _spec) as lab:
        yield lab
    assert lab.leftovers == {}, lab.leftovers


def test_second_up_changes_nothing(lab: OwnLab) -> None:
    preview = lab.stack.preview(on_output=lambda _: None)
    changes = {k: v for k, v in preview.change_summary.items() if k != "same"}
    assert changes == {}


def test_inventory_file_matches_output(lab: OwnLab) -> None:
    import yaml

    written = yaml.safe_load((lab.state / "inventory.yml").read_text())
    assert written == lab.outputs["inventory"].value
    assert list(written["all"]["children"]["subnet_managers"]["hosts"]) == ["sm1"]


def test_ssh_checks_host_key_and_ibstat_shows_own_guid(lab: OwnLab) -> None:
    with lab.connect("n2") as client:
        rc, out, _ = run(client, "hostname; ibstat")
    assert rc == 0
    assert out.splitlines()[0] == "n2"
    net = (lab.state / "ibsim.net").read_text()
    lines = net.splitlines()
    declared = lines[lines.index('Ca\t1 "n2:mlx5_0"\t# "n2 mlx5_0"') - 1]
    assert declared.startswith("caguid=")
    assert parse(out.split("\n", 1)[1]).devices[0].node_guid == declared.split("=", 1)[1]


def test_systemd_opensm_brings_ports_active(lab: OwnLab) -> None:
    with lab.connect("sm1") as client:
        rc, _, err = run(client, "systemctl start opensm")
        assert rc == 0, err
    deadline, states = time.monotonic() + 60, []
    while time.monotonic() < deadline:
        with lab.connect("n1") as client:
            rc, out, _ = run(client, "ibstat")
        states = [p.state for d in parse(out).devices for p in d.ports]
        if states == ["Active"]:
            break
        time.sleep(2)
    assert states == ["Active"]
    with lab.connect("sm1") as client:
        rc, out, _ = run(client, "systemctl list-units 'opensm@*' --state=running --no-legend")
    assert "opensm@0x" in out


def test_redfish_power_off_stops_container_and_on_starts_it(lab: OwnLab) -> None:
    from fabric.lab.node import state

    bmc = lab.outputs["bmc_endpoints"].value["n1"]
    auth = read_credentials(lab.state / "bmc").auth()
    container = f"{lab.name}-n1"
    reset = f"{bmc['url']}/redfish/v1/Systems/{bmc['system_id']}/Actions/ComputerSystem.Reset"
    assert requests.post(reset, json={"ResetType": "ForceOff"}, timeout=10).status_code == 401
    for action, running in (("ForceOff", False), ("On", True)):
        resp = requests.post(reset, json={"ResetType": action}, auth=auth, timeout=10)
        assert resp.status_code == 204
        deadline = time.monotonic() + 40
        while time.monotonic() < deadline and (state(container) or {}).get("running") != running:
            time.sleep(1)
        assert (state(container) or {}).get("running") is running, action
    system = requests.get(
        f"{bmc['url']}/redfish/v1/Systems/{bmc['system_id']}", auth=auth, timeout=10
    )
    power = system.json()["PowerState"]
    assert power == "On"


def test_lab_status_json(lab: OwnLab) -> None:
    from fabric.lab.status import lab_status

    deadline = time.monotonic() + 60
    while True:  # n1 may still be booting after the power test
        status = lab_status(lab.state)
        if all(n.ssh for n in status.nodes) or time.monotonic() > deadline:
            break
        time.sleep(2)
    by_name = {n.name: n for n in status.nodes}
    assert set(by_name) == {"n1", "n2", "sm1"}
    assert all(n.running and n.ssh and n.power == "On" for n in status.nodes)
    assert [p.port for p in by_name["n2"].ports] == [1]


def test_refresh_restarts_a_dead_ibsim(lab: OwnLab) -> None:
    from fabric.lab.process import Helper, alive

    def helper() -> Helper:
        res = [
            r
            for r in lab.stack.export_stack().deployment["resources"]
            if r["urn"].endswith("::rytest-ibsim")
        ]
        return Helper(**res[0]["outputs"]["out_helper"])

    old = helper()
    os.kill(old.pid, 15)
    time.sleep(1)
    assert not alive(old)
    lab.stack.up(refresh=True, on_output=lambda _: None)
    new = helper()
    assert new.pid != old.pid and alive(new)


def _resize(lab: OwnLab, compute: str) -> tuple[dict[str, int], dict[str, set[str]], Any]:
    """``pulumi up`` with the compute group set to ``compute``; return summary, ops -> names, result.

    The preview must already plan the same changes (the address pool's ``check`` runs in it).
    """
    from pulumi.automation import events

    lab.set_spec(_spec(lab.tag, compute))  # keeps the stack's encryption salt
    ops: dict[str, set[str]] = {}

    def record(event: events.EngineEvent) -> None:
        pre = event.resource_pre_event
        if pre is not None and pre.metadata.type != "pulumi:pulumi:Stack":
            ops.setdefault(str(pre.metadata.op.value), set()).add(
                pre.metadata.urn.rsplit("::", 1)[1]
            )

    preview = lab.stack.preview(on_output=lambda _: None, on_event=record)
    planned, ops = ops, {}
    result = lab.stack.up(on_output=lambda _: None, on_event=record)
    summary = {k: v for k, v in (result.summary.resource_changes or {}).items() if k != "same"}
    assert planned == ops, (planned, ops)
    assert {k: v for k, v in preview.change_summary.items() if k != "same"} == summary
    return summary, ops, result


def _container_ids(prefix: str, nodes: list[str]) -> dict[str, str]:
    from fabric.lab.podman import podman

    return {
        n: podman(["container", "inspect", "--format", "{{.Id}}", f"{prefix}-{n}"]).stdout.strip()
        for n in nodes
    }


def test_grow_and_shrink_first_group_touches_only_the_difference(lab: OwnLab) -> None:
    from fabric.lab.status import lab_status

    before = {h["name"]: h["address"] for h in lab.outputs["hosts"].value}
    ids = _container_ids(lab.name, ["n1", "n2", "sm1"])

    summary, ops, grown = _resize(lab, "n[1-3]")  # n3 joins the FIRST group, before sm1
    after = {h["name"]: h["address"] for h in grown.outputs["hosts"].value}
    assert summary.get("create") == 2 and "delete" not in summary, (summary, ops)
    assert ops["create"] == {"rytest-n3", "rytest-n3-host-key"}
    touched = set().union(*(names for op, names in ops.items() if op != "same"))
    assert not {"rytest-n1", "rytest-n2", "rytest-sm1"} & touched, ops
    assert ops["update"] >= {"rytest-mgmt-addresses", "rytest-known-hosts", "rytest-inventory"}
    assert {h: after[h] for h in before} == before  # sm1 kept its address
    assert after["n3"] not in before.values()
    assert _container_ids(lab.name, ["n1", "n2", "sm1"]) == ids
    lab.outputs = grown.outputs
    with lab.connect("n3") as client:  # host key checked against the rewritten known_hosts
        assert run(client, "hostname")[1].strip() == "n3"
    assert {n.name: n.power for n in lab_status(lab.state).nodes}["n3"] == "On"

    summary, ops, shrunk = _resize(lab, "n[1-2]")
    assert summary.get("delete") == 2 and "create" not in summary, (summary, ops)
    assert ops["delete"] == {"rytest-n3", "rytest-n3-host-key"}
    touched = set().union(*(names for op, names in ops.items() if op != "same"))
    assert not {"rytest-n1", "rytest-n2", "rytest-sm1"} & touched, ops
    assert {h["name"]: h["address"] for h in shrunk.outputs["hosts"].value} == before
    assert _container_ids(lab.name, ["n1", "n2", "sm1"]) == ids
    lab.outputs = shrunk.outputs
