"""Bare metal end to end on a lab datacenter: a ``target: lab`` stack with ``lab.datacenter``
provides only the datacenter (3 nodes with sshd, powered off; one sushy-tools Redfish system per
node whose power actions start and stop the node's container; ibsim; the networks), then a
``target: baremetal`` stack over it does what it would on a site:

- reads each system over Redfish, sets no one-time boot device (none asked), powers the nodes
  on, waits for SSH, pins host keys (bsm1's declared in the spec, the others recorded at first
  contact), hands off to ``playbooks/site.yml`` and runs the check suite, all in one
  ``pulumi up`` (timed); a second ``up`` changes nothing;
- hardware replaced under the same name (bn2: a new host key, and a new HCA GUID through the
  datacenter's ``lab.hca_guids``) is refused by name until the spec marks it ``replaced``;
  then ``pulumi up`` accepts the new key once, converges (topology.conf from the fabric as it
  is now) and passes its checks;
- ``playbooks/remove-node.yml`` drains bn2, takes it out of slurm.conf and topology.conf and
  powers it off through its BMC;
- ``pulumi destroy`` of the bare-metal stack powers the nodes off through Redfish and leaves
  the datacenter as it was (containers, BMCs, ibsim still there).

Own stack names ``rybm-<hex>`` (datacenter) and ``rybm-<hex>-metal``, own subnets
198.19.240-247.0/24 (management) and 198.19.248-255.0/24 (BMC), ports 21000-21015 (Redfish,
notifier) and 21200-21327 (ibsim). Run it only under the heavy lock.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from fabric.hostkeys import pinned_keys
from fabric.lab.bmc import read_credentials
from fabric.lab.keys import generate
from fabric.lab.node import state
from fabric.lab.podman import podman
from fabric.lab.ssh import connect, host_keys_from, run
from fabric.redfish import RedfishClient
from fabric.state import REPO_ROOT
from fabric.verify.causes import ALL_PASSED
from tests.integration.labkit import OwnLab, host_key_refused, own_lab

pytestmark = pytest.mark.integration

ADDRESSES = {"bn1": 11, "bn2": 12, "bsm1": 21}
#: bn2's HCA after its replacement (the declared one is from fabric.topology.from_spec).
NEW_HCA_GUID = 0x0002C903FE000010


def _cluster(tag: int, target: str) -> dict[str, Any]:
    hca = {"device": "mlx5_0", "link_layer": "InfiniBand", "rate_gbps": 400, "width": "4x"}
    return {
        "name": "rybm",
        "target": target,
        "nodes": [
            {"names": "bn[1-2]", "role": "compute", "gpus": 2, "gpu_type": "h100", "hcas": [hca]},
            {"names": "bsm1", "role": "sm", "hcas": [hca]},
        ],
        "fabric": {
            "kind": "infiniband",
            "mtu": 4096,
            "topology": {
                "kind": "fat-tree",
                "leaves": 3,
                "spines": 1,
                "ports_per_switch": 8,
                "nodes_per_leaf": 1,
                "uplinks_per_leaf": 2,
                "link_rate_gbps": 400,
                "link_width": "4x",
            },
            "infiniband": {
                "routing_engine": "ftree",
                "sweep_interval": 10,
                "subnet_managers": [{"host": "bsm1", "priority": 14}],
            },
        },
        "management": {
            "subnet": f"198.19.{240 + tag}.0/24",
            "addresses": {h: f"198.19.{240 + tag}.{n}" for h, n in ADDRESSES.items()},
        },
        "slurm": {
            "cluster_name": "rybm",
            "controller": "bsm1",
            "topology_plugin": "tree",
            "partitions": [{"name": "gpu", "nodes": "bn[1-2]", "default": True}],
        },
    }


def _datacenter(tag: int) -> dict[str, Any]:
    return {
        **_cluster(tag, "lab"),
        "bmc": {"subnet": f"198.19.{248 + tag}.0/24"},
        "lab": {"bmc_port": 21000 + 2 * tag, "ibsim_port": 21200 + 16 * tag, "datacenter": True},
    }


@dataclass
class Metal:
    """The bare-metal stack over the datacenter."""

    name: str
    stack: Any
    dc: OwnLab
    password: str
    up_seconds: float
    outputs: dict[str, Any]

    @property
    def stack_file(self) -> Path:
        return self.dc.work / f"Pulumi.{self.name}.yaml"

    @property
    def known_hosts(self) -> Path:
        return self.dc.state_root / self.name / "known_hosts"

    def spec(self) -> dict[str, Any]:
        return yaml.safe_load(self.stack_file.read_text())["config"]["railyard:cluster"]

    def set_spec(self, spec: dict[str, Any]) -> None:
        doc = yaml.safe_load(self.stack_file.read_text())
        doc["config"]["railyard:cluster"] = spec
        self.stack_file.write_text(yaml.safe_dump(doc))

    def ssh(self, node: str, command: str) -> str:
        address = self.outputs["inventory"].value["all"]["hosts"][node]["ansible_host"]
        with connect(
            address,
            user="root",
            private_key=(self.dc.state / "ssh" / "id_ed25519").read_text(),
            host_keys=host_keys_from(self.known_hosts),
        ) as client:
            rc, out, err = run(client, command, timeout=60)
        assert rc == 0, f"{node}: {command!r} exited {rc}: {out}{err}"
        return out

    def fabric(self, *args: str, extra_env: dict[str, str] | None = None) -> Any:
        """``python -m fabric ARGS --stack <metal> --spec <stack file>``."""
        return subprocess.run(
            [sys.executable, "-m", "fabric", *args, "--stack", self.name]
            + ["--spec", str(self.stack_file)],
            capture_output=True,
            text=True,
            cwd=REPO_ROOT,
            timeout=1200,
            env={**os.environ, **self.dc.env, **(extra_env or {})},
            check=False,
        )


def power_states(dc: OwnLab, password: str) -> dict[str, str | None]:
    """Node -> PowerState its lab BMC reports."""
    out = {}
    for node, ep in dc.outputs["bmc_endpoints"].value.items():
        with RedfishClient(ep["url"], ep["username"], password, verify_tls=False) as bmc:
            out[node] = bmc.power_state(f"/redfish/v1/Systems/{ep['system_id']}")
    return out


def running(dc: OwnLab) -> dict[str, bool | None]:
    """Node -> whether its container runs (None: the container is gone)."""
    out = {}
    for node, host in dc.hosts().items():
        st = state(host["container"])
        out[node] = None if st is None else bool(st["running"])
    return out


@pytest.fixture(scope="module")
def dc(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OwnLab]:
    with own_lab(tmp_path_factory, "rybm", _datacenter, tags=8) as lab:
        yield lab
    assert lab.leftovers == {}


@pytest.fixture(scope="module")
def password(dc: OwnLab) -> str:
    return read_credentials(dc.state / "bmc").password


def boot_now(dc: OwnLab, password: str) -> dict[str, Any]:
    """Node -> the Boot object (override target and frequency) its lab BMC reports."""
    out = {}
    for node, ep in dc.outputs["bmc_endpoints"].value.items():
        with RedfishClient(ep["url"], ep["username"], password, verify_tls=False) as bmc:
            boot = bmc.boot_override(f"/redfish/v1/Systems/{ep['system_id']}")
            out[node] = (boot.target, boot.enabled)
    return out


@pytest.fixture(scope="module")
def boot_before(dc: OwnLab, password: str) -> dict[str, Any]:
    return boot_now(dc, password)


@pytest.fixture(scope="module")
def metal(dc: OwnLab, password: str, boot_before: dict[str, Any]) -> Iterator[Metal]:
    from pulumi import automation as auto

    name = f"{dc.name}-metal"
    endpoints = dc.outputs["bmc_endpoints"].value
    # bsm1's host key as the site's records give it (here: the datacenter's known_hosts).
    bsm1_key = next(
        " ".join(line.split()[1:3])
        for line in (dc.state / "known_hosts").read_text().splitlines()
        if line.split(",")[0] == "bsm1"
    )
    spec = {
        **_cluster(dc.tag, "baremetal"),
        "bmc": {
            "username": endpoints["bn1"]["username"],
            "password": {"config": "bmcPassword"},
            "verify_tls": False,
            "endpoints": {
                n: {"url": ep["url"], "system_id": ep["system_id"]} for n, ep in endpoints.items()
            },
        },
        "lab": {"datacenter_stack": dc.name},
    }
    spec["bmc"]["endpoints"]["bsm1"]["host_keys"] = [bsm1_key]
    stack_file = dc.work / f"Pulumi.{name}.yaml"
    stack_file.write_text(
        yaml.safe_dump(
            {
                "config": {
                    "railyard:cluster": spec,
                    "railyard:sshPrivateKeyFile": str(dc.state / "ssh" / "id_ed25519"),
                    "railyard:handoff": "true",
                    "railyard:verify": "true",
                }
            }
        )
    )
    stack = auto.Stack.create(name, dc.stack.workspace)
    try:
        stack.set_config("railyard:bmcPassword", auto.ConfigValue(password, secret=True))
        log: list[str] = []
        started = time.monotonic()
        try:
            result = stack.up(on_output=log.append)
        except Exception:
            print("".join(log)[-6000:])
            raise
        seconds = time.monotonic() - started
        print(f"\nbare-metal pulumi up: {seconds:.1f} s")
        yield Metal(name, stack, dc, password, seconds, result.outputs)
    finally:
        try:
            stack.destroy(on_output=lambda _: None)
        finally:
            dc.stack.workspace.remove_stack(name)


def test_datacenter_nodes_wait_powered_off(dc: OwnLab, password: str) -> None:
    assert running(dc) == {"bn1": False, "bn2": False, "bsm1": False}
    assert power_states(dc, password) == {"bn1": "Off", "bn2": "Off", "bsm1": "Off"}
    assert "handoff" not in dc.outputs and "verification" not in dc.outputs


def test_baremetal_up_powers_on_pins_keys_hands_off_and_passes_its_checks(
    metal: Metal, dc: OwnLab, boot_before: dict[str, Any]
) -> None:
    hosts = metal.outputs["hosts"].value
    assert {h: v["power_state"] for h, v in hosts.items()} == dict.fromkeys(ADDRESSES, "On")
    assert running(dc) == dict.fromkeys(ADDRESSES, True)
    # No one-time boot device was asked for, so none was set: Boot reads as before the up.
    assert boot_now(dc, metal.password) == boot_before
    recap = metal.outputs["handoff"].value
    rows = {line.split()[0]: line.split()[1:] for line in recap.splitlines()[1:]}
    assert set(rows) - {"localhost"} == set(ADDRESSES)
    assert all(r[2] == "0" and r[3] == "0" for r in rows.values()), recap
    verification = metal.outputs["verification"].value
    assert ALL_PASSED.fullmatch(verification), verification
    print(f"\nchecks: {verification}")
    pinned = {
        n: pinned_keys(metal.known_hosts, f"198.19.{240 + dc.tag}.{a}")
        for n, a in ADDRESSES.items()
    }
    assert all("ssh-ed25519" in keys for keys in pinned.values()), pinned
    declared = metal.spec()["bmc"]["endpoints"]["bsm1"]["host_keys"][0].split()[1]
    assert pinned["bsm1"]["ssh-ed25519"] == declared
    assert metal.ssh("bsm1", "hostname").strip() == "bsm1"


def test_second_up_changes_nothing(metal: Metal) -> None:
    log: list[str] = []
    result = metal.stack.up(on_output=log.append, diff=True)
    changes = result.summary.resource_changes or {}
    updated = [line for line in "".join(log).splitlines() if "update" in line or "[diff:" in line]
    assert {k: v for k, v in changes.items() if k != "same"} == {}, (changes, updated)


def _swap_host_key(dc: OwnLab, node: str) -> str:
    """New hardware under ``node``'s name: another host key; return its public key."""
    container = dc.hosts()[node]["container"]
    key = generate(f"root@{node}-new")
    for path, text, mode in (
        ("/etc/ssh/ssh_host_ed25519_key", key.private_key, "600"),
        ("/etc/ssh/ssh_host_ed25519_key.pub", key.public_key + "\n", "644"),
    ):
        podman(
            ["exec", "-i", container, "sh", "-c", f"cat > {path} && chmod {mode} {path}"],
            input=text.encode(),
        )
    podman(["exec", container, "systemctl", "restart", "ssh"])
    return key.public_key


def test_replaced_node_refused_by_name_then_accepted_once_when_marked(
    metal: Metal, dc: OwnLab
) -> None:
    new_key = _swap_host_key(dc, "bn2")
    # ... and another HCA: the datacenter's bn2 reports a new GUID (its ibsim restarts with it).
    dc_spec = _datacenter(dc.tag)
    dc_spec["lab"]["hca_guids"] = {"bn2": f"{NEW_HCA_GUID:#018x}"}
    dc.set_spec(dc_spec)
    dc.stack.up(on_output=lambda _: None)
    proc = metal.fabric("run", "playbooks/site.yml")
    assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "bn2" in proc.stdout + proc.stderr
    assert host_key_refused(proc.stdout + proc.stderr), proc.stdout[-2000:]

    spec = metal.spec()
    spec["bmc"]["endpoints"]["bn2"]["replaced"] = "bn2-swap-1"
    metal.set_spec(spec)
    started = time.monotonic()
    result = metal.stack.up(on_output=lambda _: None)
    print(f"\npulumi up after replacing bn2: {time.monotonic() - started:.1f} s")
    metal.outputs = result.outputs
    assert new_key.split()[1] in metal.known_hosts.read_text()
    assert metal.ssh("bn2", "hostname").strip() == "bn2"
    # The topology is regenerated from the fabric as it is now: bn2 on its leaf, behind the new
    # GUID, and every check passes.
    topology = metal.ssh("bsm1", "cat /etc/slurm/topology.conf")
    assert "bn2" in topology, topology
    discovered = metal.ssh("bsm1", "timeout 60 ibnetdiscover")
    assert f"caguid={NEW_HCA_GUID:#x}" in discovered, discovered  # ibnetdiscover: no zero padding
    verification = metal.outputs["verification"].value
    assert ALL_PASSED.fullmatch(verification), verification


def test_remove_node_drains_rewrites_slurm_and_powers_off(metal: Metal, dc: OwnLab) -> None:
    proc = metal.fabric(
        "run",
        "playbooks/remove-node.yml",
        "-e",
        "railyard_remove_nodes=bn2",
        extra_env={"RAILYARD_BMC_PASSWORD": metal.password},
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert metal.password not in proc.stdout + proc.stderr
    slurm_conf = metal.ssh("bsm1", "cat /etc/slurm/slurm.conf")
    topology = metal.ssh("bsm1", "cat /etc/slurm/topology.conf")
    assert "NodeName=bn1 " in slurm_conf and "NodeName=bn2 " not in slurm_conf, slurm_conf
    assert "PartitionName=gpu Nodes=bn1 " in slurm_conf, slurm_conf
    assert "bn1" in topology and "bn2" not in topology, topology
    nodes = metal.ssh("bsm1", "sinfo --noheader --Node --format=%N").split()
    assert "bn2" not in nodes and "bn1" in nodes, nodes
    assert power_states(dc, metal.password)["bn2"] == "Off"
    deadline = time.monotonic() + 60
    while running(dc)["bn2"] and time.monotonic() < deadline:
        time.sleep(2)
    assert running(dc)["bn2"] is False


def test_destroy_powers_off_and_leaves_the_datacenter(metal: Metal, dc: OwnLab) -> None:
    started = time.monotonic()
    metal.stack.destroy(on_output=lambda _: None)
    print(f"\nbare-metal pulumi destroy: {time.monotonic() - started:.1f} s")
    assert power_states(dc, metal.password) == dict.fromkeys(ADDRESSES, "Off")
    deadline = time.monotonic() + 60
    while any(running(dc).values()) and time.monotonic() < deadline:
        time.sleep(2)
    assert running(dc) == dict.fromkeys(ADDRESSES, False)  # off, and still there
    assert (dc.state / "ibsim.net").is_file()
