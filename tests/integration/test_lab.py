"""A 3-node lab built by ``pulumi up`` (Automation API, local file backend in tmp) from real
parts: podman nodes with systemd, ibsim + OpenSM, the sushy-tools Redfish emulator."""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
import requests

from fabric.lab.ssh import connect, host_keys_from, run
from fabric.parsers.ibstat import parse

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
PULUMI_BIN = Path("/root/.cache/railyard/pulumi/v3.259.0/bin")


def _spec(tag: int) -> dict[str, Any]:
    return {
        "name": "rytest", "target": "lab",
        "nodes": [
            {"names": "n[1-2]", "role": "compute", "hcas": [{"device": "mlx5_0"}]},
            {"names": "sm1", "role": "sm", "hcas": [{"device": "mlx5_0"}]},
        ],
        "fabric": {"kind": "infiniband", "mtu": 4096,
                   "topology": {"kind": "fat-tree", "leaves": 1, "nodes_per_leaf": 3, "ports_per_switch": 8},
                   "infiniband": {"subnet_managers": [{"host": "sm1", "priority": 14}]}},
        "management": {"subnet": f"198.18.{200 + tag}.0/24"},
        "bmc": {"subnet": f"198.18.{220 + tag}.0/24"},
        "slurm": {"controller": "sm1"},
        "lab": {"bmc_port": 18200 + 2 * tag, "ibsim_port": 17200 + 16 * tag},
    }


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Any:
    from pulumi import automation as auto

    tmp = tmp_path_factory.mktemp("lab")
    run_id = secrets.token_hex(3)
    stack_name, tag = f"rytest-{run_id}", secrets.randbelow(15)
    work = tmp / "program"
    work.mkdir()
    for name in ("Pulumi.yaml", "__main__.py"):
        shutil.copy(REPO / name, work / name)
    (tmp / "backend").mkdir()
    env = {
        "PATH": f"{PULUMI_BIN}:{REPO / '.venv' / 'bin'}:{os.environ['PATH']}",
        "PULUMI_BACKEND_URL": f"file://{tmp / 'backend'}",
        "PULUMI_CONFIG_PASSPHRASE": run_id,
        "PULUMI_SKIP_UPDATE_CHECK": "true",
        "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
        "PYTHONPATH": str(REPO),
        "RAILYARD_STATE_DIR": str(tmp / "state"),
    }
    os.environ.update({k: v for k, v in env.items() if k != "PATH"})
    os.environ["PATH"] = env["PATH"]
    ws = auto.LocalWorkspace(work_dir=str(work), env_vars=env, pulumi_command=auto.PulumiCommand(str(PULUMI_BIN.parent)))
    import yaml

    config = {"config": {"railyard:prefix": stack_name, "railyard:cluster": _spec(tag)}}
    (work / f"Pulumi.{stack_name}.yaml").write_text(yaml.safe_dump(config))
    stack = auto.Stack.create(stack_name, ws)
    try:
        result = stack.up(on_output=lambda _: None)
        yield {"stack": stack, "outputs": result.outputs, "state": tmp / "state" / stack_name, "prefix": stack_name}
    finally:
        stack.destroy(on_output=lambda _: None)
        leftovers = _leftovers(stack_name, tmp / "state" / stack_name)
        stack.workspace.remove_stack(stack_name)
        assert leftovers == {}, leftovers


def _leftovers(prefix: str, state: Path) -> dict[str, Any]:
    from fabric.lab.podman import podman

    out: dict[str, Any] = {}
    containers = podman(["ps", "-a", "--filter", f"name={prefix}", "--format", "{{.Names}}"]).stdout.split()
    networks = [n for n in podman(["network", "ls", "--format", "{{.Name}}"]).stdout.split() if n.startswith(prefix)]
    procs = subprocess.run(["pgrep", "-af", str(state)], capture_output=True, text=True).stdout.split("\n")
    for key, value in (("containers", containers), ("networks", networks), ("processes", [p for p in procs if p]),
                       ("files", [str(p) for p in state.rglob("*")] if state.exists() else [])):
        if value:
            out[key] = value
    if state.exists():
        out["state_dir"] = str(state)
    return out


def _ssh(lab: dict[str, Any], node: str) -> Any:
    hosts = {h["name"]: h for h in lab["outputs"]["hosts"].value}
    key = (lab["state"] / "ssh" / "id_ed25519").read_text()
    return connect(hosts[node]["address"], user="root", private_key=key,
                   host_keys=host_keys_from(lab["state"] / "known_hosts"))


def test_second_up_changes_nothing(lab: dict[str, Any]) -> None:
    preview = lab["stack"].preview(on_output=lambda _: None)
    changes = {k: v for k, v in preview.change_summary.items() if k != "same"}
    assert changes == {}


def test_inventory_file_matches_output(lab: dict[str, Any]) -> None:
    import yaml

    written = yaml.safe_load((lab["state"] / "inventory.yml").read_text())
    assert written == lab["outputs"]["inventory"].value
    assert list(written["all"]["children"]["subnet_managers"]["hosts"]) == ["sm1"]


def test_ssh_checks_host_key_and_ibstat_shows_own_guid(lab: dict[str, Any]) -> None:
    with _ssh(lab, "n2") as client:
        rc, out, _ = run(client, "hostname; ibstat")
    assert rc == 0
    assert out.splitlines()[0] == "n2"
    net = (lab["state"] / "ibsim.net").read_text()
    lines = net.splitlines()
    declared = lines[lines.index('Ca\t1 "n2:mlx5_0"\t# "n2 mlx5_0"') - 1]
    assert declared.startswith("caguid=")
    assert parse(out.split("\n", 1)[1]).devices[0].node_guid == declared.split("=", 1)[1]


def test_systemd_opensm_brings_ports_active(lab: dict[str, Any]) -> None:
    with _ssh(lab, "sm1") as client:
        rc, _, err = run(client, "systemctl start opensm")
        assert rc == 0, err
    deadline, states = time.monotonic() + 60, []
    while time.monotonic() < deadline:
        with _ssh(lab, "n1") as client:
            rc, out, _ = run(client, "ibstat")
        states = [p.state for d in parse(out).devices for p in d.ports]
        if states == ["Active"]:
            break
        time.sleep(2)
    assert states == ["Active"]
    with _ssh(lab, "sm1") as client:
        rc, out, _ = run(client, "systemctl list-units 'opensm@*' --state=running --no-legend")
    assert "opensm@0x" in out


def test_redfish_power_off_stops_container_and_on_starts_it(lab: dict[str, Any]) -> None:
    from fabric.lab.node import state

    bmc = lab["outputs"]["bmc_endpoints"].value["n1"]
    container = f"{lab['prefix']}-n1"
    reset = f"{bmc['url']}/redfish/v1/Systems/{bmc['system_id']}/Actions/ComputerSystem.Reset"
    for action, running in (("ForceOff", False), ("On", True)):
        resp = requests.post(reset, json={"ResetType": action}, timeout=10)
        assert resp.status_code == 204
        deadline = time.monotonic() + 40
        while time.monotonic() < deadline and (state(container) or {}).get("running") != running:
            time.sleep(1)
        assert (state(container) or {}).get("running") is running, action
    power = requests.get(f"{bmc['url']}/redfish/v1/Systems/{bmc['system_id']}", timeout=10).json()["PowerState"]
    assert power == "On"


def test_lab_status_json(lab: dict[str, Any]) -> None:
    from fabric.lab.status import lab_status

    deadline = time.monotonic() + 60
    while True:  # n1 may still be booting after the power test
        status = lab_status(lab["state"])
        if all(n.ssh for n in status.nodes) or time.monotonic() > deadline:
            break
        time.sleep(2)
    by_name = {n.name: n for n in status.nodes}
    assert set(by_name) == {"n1", "n2", "sm1"}
    assert all(n.running and n.ssh and n.power == "On" for n in status.nodes)
    assert [p.port for p in by_name["n2"].ports] == [1]


def test_refresh_restarts_a_dead_ibsim(lab: dict[str, Any]) -> None:
    from fabric.lab.process import Helper, alive

    def helper() -> Helper:
        res = [r for r in lab["stack"].export_stack().deployment["resources"] if r["urn"].endswith("::rytest-ibsim")]
        return Helper(**res[0]["outputs"]["out_helper"])

    old = helper()
    os.kill(old.pid, 15)
    time.sleep(1)
    assert not alive(old)
    lab["stack"].up(refresh=True, on_output=lambda _: None)
    new = helper()
    assert new.pid != old.pid and alive(new)
