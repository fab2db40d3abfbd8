"""A RoCE fabric through a real switch: two nodes whose fabric netdevs are ports of a Linux
switch container (a bridge inside it, ``fabric.lab.switch``), configured by ``switch_qos``
over SSH with pinned host keys, and by ``roce_qos`` on the hosts, through
``playbooks/qos-change.yml``; a second run changes nothing.

This machine's kernel has htb and u32 but no sch_ets/sch_red: the switch falls back to htb
classes with DSCP u32 filters and reports ECN unavailable, naming sch_red. Real traffic then
shows, in the switch's per-class counters (``tc -s class`` via the switch_qos script):
iperf3 ``--dscp 26`` lands in the RDMA class 1:20, unmarked iperf3 in 1:30, CNP-marked
(DSCP 48) pings in the CNP class 1:10; don't-fragment 9000-byte frames pass host-switch-host
both ways. The RoCE consistency and path-MTU checks pass, and three switch faults are each
named by a check (port MTU, DSCP map, the lossless class removed), then restored.

Own stack name ``ryrsw-<hex>``, management subnet 198.18.{240-243}.0/24 and switched-fabric
addresses 198.18.{244-247}.0/24 (tags 0-3), no host ports. Run it only under the heavy lock.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from fabric.hostkeys import pin, wait_first_contact
from fabric.inventory import build_inventory, inventory_text
from fabric.lab import switch as labswitch
from fabric.lab.image import LATEST
from fabric.lab.keys import KeyPair, generate
from fabric.lab.network import NetworkInfo, ensure_network, remove_network
from fabric.lab.node import NodeConfig, create_node, remove_node
from fabric.lab.podman import exists
from fabric.spec import ClusterSpec
from fabric.state import StateLayout

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        shutil.which("podman") is None or not exists("image", LATEST),
        reason="needs podman and the lab's node image (python -m fabric lab image)",
    ),
]

NODES = ("q1", "q2")
SCRIPT = "python3 /usr/local/libexec/railyard/switch-qos-linux"
SETTINGS = "/etc/railyard/switch-qos.json"
#: Measured numbers, printed at the end of the module (pytest -s) for the report.
MEASURED: dict[str, Any] = {}


@dataclass
class SwitchLab:
    stack: str
    tag: int
    root: Path
    login: KeyPair
    host_keys: dict[str, KeyPair]
    network: NetworkInfo | None = None
    containers: list[str] = field(default_factory=list)

    @property
    def layout(self) -> StateLayout:
        return StateLayout(self.stack, self.root / "state")

    @property
    def key_file(self) -> Path:
        return self.layout.dir / "id_ed25519"

    @property
    def spec_file(self) -> Path:
        return self.root / "spec.yaml"

    def address(self, name: str) -> str:
        last = {"leaf1": 2, "q1": 11, "q2": 12}[name]
        return f"198.18.{240 + self.tag}.{last}"

    def fabric_address(self, node: str) -> str:
        return f"198.18.{244 + self.tag}.{11 + NODES.index(node)}"

    def container(self, name: str) -> str:
        return f"{self.stack}-{name}"

    def spec_data(self) -> dict[str, Any]:
        hca = {"device": "mlx5_0", "link_layer": "Ethernet", "rate_gbps": 100, "netdev": "fab0"}
        return {
            "name": "rswlab",
            "target": "lab",
            "nodes": [{"names": "q[1-2]", "role": "compute", "hcas": [hca]}],
            "fabric": {
                "kind": "roce",
                "mtu": 9000,
                "roce": {},
                "switches": [
                    {
                        "name": "leaf1",
                        "os": "linux",
                        "manage": True,
                        "address": self.address("leaf1"),
                        "ssh_user": "root",
                        "ports": [{"name": f"p-{n}", "host": n, "netdev": "fab0"} for n in NODES],
                    }
                ],
            },
            "management": {"subnet": f"198.18.{240 + self.tag}.0/24"},
            "slurm": {"controller": "q1"},
        }

    def node(self, name: str) -> NodeConfig:
        return NodeConfig(
            name=name,
            container=self.container(name),
            image=LATEST,
            networks={f"{self.stack}-mgmt": self.address(name)},
            authorized_key=self.login.public_key,
            host_key_private=self.host_keys[name].private_key,
            host_key_public=self.host_keys[name].public_key,
            labels={"railyard.stack": self.stack},
            capabilities=["NET_ADMIN"],  # the roles set MTU, qdiscs and filters for real
        )

    def qos_change(self) -> Any:
        from fabric.handoff.runner import run_playbook

        return run_playbook(
            "playbooks/qos-change.yml",
            stack=self.stack,
            spec=ClusterSpec.model_validate(self.spec_data()),
            emit=lambda _: None,
            state_root=self.layout.root,
            artifacts_root=self.root / "artifacts",
        )

    def ssh(self, name: str, command: str) -> str:
        import subprocess

        proc = subprocess.run(
            [
                "ssh", "-i", str(self.key_file), "-o", "BatchMode=yes",
                "-o", "StrictHostKeyChecking=yes",
                "-o", f"UserKnownHostsFile={self.layout.known_hosts}",
                f"root@{self.address(name)}", command,
            ],
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert proc.returncode == 0, f"{name}: {command}: {proc.stderr.strip()}"
        return proc.stdout

    def classes(self, port: str) -> dict[str, dict[str, int]]:
        """The switch port's per-class counters, as its switch_qos script reads them."""
        return json.loads(self.ssh("leaf1", f"{SCRIPT} show {SETTINGS}"))[port]["classes"]

    def checks(self, select: str) -> Any:
        from fabric.verify.runner import run_checks

        return run_checks(
            self.stack,
            spec=self.spec_file,
            select=select,
            workers=1,
            quiet=True,
            report_dir=self.root / "reports",
        )


def _teardown(lab: SwitchLab) -> None:
    for container in lab.containers:
        remove_node(container)  # the veth ends go with the containers' namespaces
    if lab.network is not None:
        remove_network(lab.network.name, lab.network.bridge)


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SwitchLab]:
    names = ("leaf1", *NODES)
    lab = SwitchLab(
        stack=f"ryrsw-{secrets.token_hex(3)}",
        tag=secrets.randbelow(4),
        root=tmp_path_factory.mktemp("ryrsw"),
        login=generate("railyard-roce-switch-test"),
        host_keys={n: generate(f"{n}-host") for n in names},
    )
    saved = os.environ.get("RAILYARD_STATE_DIR")
    os.environ["RAILYARD_STATE_DIR"] = str(lab.layout.root)
    try:
        lab.layout.dir.mkdir(parents=True)
        fd = os.open(lab.key_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as out:
            out.write(lab.login.private_key)
        net = f"198.18.{240 + lab.tag}"
        lab.network = ensure_network(f"{lab.stack}-mgmt", f"{net}.0/24", f"{net}.1")
        for name in names:
            # keys made outside the containers: known_hosts is pinned before they start
            pin(lab.layout.known_hosts, name, lab.address(name), [lab.host_keys[name].public_key])
            create_node(lab.node(name))
            lab.containers.append(lab.container(name))
        for name in names:
            assert (
                wait_first_contact(
                    name,
                    lab.address(name),
                    timeout=90,
                    user="root",
                    private_key=lab.key_file,
                    known_hosts=lab.layout.known_hosts,
                )
                is False
            ), f"{name}: its pinned key was not the one it answered with"
        links = [
            labswitch.SwitchLink(
                port=f"p-{n}",
                node_container=lab.container(n),
                netdev="fab0",
                address=f"{lab.fabric_address(n)}/24",
            )
            for n in NODES
        ]
        labswitch.wire(lab.container("leaf1"), links)
        lab.spec_file.write_text(yaml.safe_dump(lab.spec_data()))
        spec = ClusterSpec.model_validate(lab.spec_data())
        inventory = build_inventory(
            spec,
            {n: lab.address(n) for n in (*NODES, "leaf1")},
            ssh_user="root",
            private_key_file=str(lab.key_file),
            known_hosts_file=str(lab.layout.known_hosts),
        )
        lab.layout.inventory.write_text(inventory_text(inventory))
        yield lab
    finally:
        _teardown(lab)
        print(f"\nroce switch lab measured: {json.dumps(MEASURED, indent=1)}")
        if saved is None:
            os.environ.pop("RAILYARD_STATE_DIR", None)
        else:
            os.environ["RAILYARD_STATE_DIR"] = saved


def test_qos_change_configures_hosts_and_switch_then_changes_nothing(lab: SwitchLab) -> None:
    started = time.monotonic()
    first = lab.qos_change()
    MEASURED["qos_change_first_s"] = round(time.monotonic() - started, 1)
    assert first.ok, first.summary()
    assert sorted(first.hosts) == ["leaf1", "q1", "q2"], first.recap()
    assert first.hosts["leaf1"].changed > 0, first.recap()
    started = time.monotonic()
    again = lab.qos_change()
    MEASURED["qos_change_second_s"] = round(time.monotonic() - started, 1)
    assert again.ok, again.summary()
    assert all(c.changed == 0 for c in again.hosts.values()), again.recap()
    fact = json.loads(lab.ssh("leaf1", "cat /etc/ansible/facts.d/switch_qos.fact"))
    port = fact["ports"]["p-q2"]
    MEASURED["switch_report_p-q2"] = port
    assert port["mtu"] == "applied: 9000"
    assert port["scheduler"].startswith("applied: htb fallback (no sch_ets)")
    assert port["classification"].startswith("applied: tc u32 DSCP filters")
    assert port["ecn"].startswith("unavailable: this kernel has no sch_red")
    assert port["pfc"].startswith("skipped: dcb pfc:")


def test_jumbo_frames_pass_every_host_switch_host_path(lab: SwitchLab) -> None:
    for source, target in (("q1", "q2"), ("q2", "q1")):
        out = lab.ssh(source, f"ping -M do -s 8972 -c 3 -W 2 {lab.fabric_address(target)}")
        assert " 0% packet loss" in out, out


def _delta(before: dict[str, Any], after: dict[str, Any]) -> dict[str, int]:
    return {c: after[c]["bytes"] - before[c]["bytes"] for c in ("1:10", "1:20", "1:30")}


def test_rdma_dscp_lands_in_the_rdma_class_under_load(lab: SwitchLab) -> None:
    target = lab.fabric_address("q2")
    lab.ssh("q2", "iperf3 -s -D -1 -p 5201")
    time.sleep(1)
    before = lab.classes("p-q2")
    started = time.monotonic()
    lab.ssh("q1", f"iperf3 -c {target} -p 5201 -t 5 --dscp 26 -J > /tmp/iperf-marked.json")
    MEASURED["iperf_marked_s"] = round(time.monotonic() - started, 1)
    marked = _delta(before, lab.classes("p-q2"))
    sent = json.loads(lab.ssh("q1", "cat /tmp/iperf-marked.json"))["end"]["sum_sent"]["bytes"]
    MEASURED["marked_iperf_bytes_sent"] = sent
    MEASURED["marked_class_delta_bytes"] = marked
    assert marked["1:20"] >= sent, marked  # every payload byte (plus headers) in the RDMA class
    assert marked["1:30"] < sent // 100, marked  # only unmarked strays (ARP, control)

    lab.ssh("q2", "iperf3 -s -D -1 -p 5202")
    time.sleep(1)
    before = lab.classes("p-q2")
    lab.ssh("q1", f"iperf3 -c {target} -p 5202 -t 5 -J > /tmp/iperf-plain.json")
    plain = _delta(before, lab.classes("p-q2"))
    sent = json.loads(lab.ssh("q1", "cat /tmp/iperf-plain.json"))["end"]["sum_sent"]["bytes"]
    MEASURED["unmarked_iperf_bytes_sent"] = sent
    MEASURED["unmarked_class_delta_bytes"] = plain
    assert plain["1:30"] >= sent, plain
    assert plain["1:20"] < sent // 100, plain


def test_cnp_dscp_lands_in_the_cnp_class(lab: SwitchLab) -> None:
    before = lab.classes("p-q2")
    # DSCP 48 -> ToS 0xc0, as ConnectX sends CNPs
    lab.ssh("q1", f"ping -Q 0xc0 -c 50 -i 0.01 -s 1000 {lab.fabric_address('q2')}")
    delta = _delta(before, lab.classes("p-q2"))
    MEASURED["cnp_class_delta_bytes"] = delta
    assert delta["1:10"] >= 50 * 1000, delta
    assert delta["1:20"] < 50 * 1000, delta


def _results(outcome: Any) -> dict[str, Any]:
    return {f"{r.name}[{r.param}]": r for r in outcome.results}


SELECT = "test_hop_ or test_path_mtu or test_netdev_mtu"


def test_roce_consistency_and_path_checks_pass(lab: SwitchLab) -> None:
    started = time.monotonic()
    outcome = lab.checks(SELECT)
    MEASURED["checks_s"] = round(time.monotonic() - started, 1)
    results = _results(outcome)
    MEASURED["checks"] = {k: r.outcome for k, r in results.items()}
    assert outcome.ok, outcome.summary()
    assert results["test_hop_mtu[q1/fab0-leaf1/p-q1]"].outcome == "passed"
    assert results["test_hop_dscp_map[q2/fab0-leaf1/p-q2]"].outcome == "passed"
    assert results["test_hop_lossless_class[q2/fab0-leaf1/p-q2]"].outcome == "passed"
    assert results["test_path_mtu[q1->q2]"].outcome == "passed"
    # What this kernel cannot do is skipped with its reason, never passed.
    ecn = results["test_hop_ecn[q2/fab0-leaf1/p-q2]"]
    assert ecn.outcome == "skipped" and "sch_red" in ecn.message, ecn


def _failed(outcome: Any, name: str) -> str:
    failed = {k: r.message for k, r in _results(outcome).items() if r.failed}
    key = next((k for k in failed if k.startswith(name)), None)
    assert key is not None, outcome.summary()
    return failed[key]


def test_a_switch_port_mtu_is_named(lab: SwitchLab) -> None:
    labswitch.set_port_mtu(lab.container("leaf1"), "p-q2", 1500)
    try:
        message = _failed(lab.checks(SELECT), "test_hop_mtu[q2/fab0-leaf1/p-q2]")
        MEASURED["fault_port_mtu"] = message
        assert "MTU 1500 on switch leaf1 port p-q2, 9000 on host q2 fab0" in message
    finally:
        labswitch.set_port_mtu(lab.container("leaf1"), "p-q2", 9000)
    assert lab.checks(SELECT).ok


def test_a_changed_dscp_map_is_named(lab: SwitchLab) -> None:
    sw = lab.container("leaf1")
    rule = ["parent", "1:", "protocol", "ip", "prio", "10", "handle", "800::20", "u32"]
    match = ["match", "ip", "dsfield", "0x68", "0xfc"]
    labswitch.tc(sw, "filter", "replace", "dev", "p-q2", *rule, *match, "flowid", "1:30")
    try:
        message = _failed(lab.checks(SELECT), "test_hop_dscp_map[q2/fab0-leaf1/p-q2]")
        MEASURED["fault_dscp_map"] = message
        assert "DSCP 26 -> priority 3 on host q2, but switch leaf1 port p-q2" in message
        assert "class 1:30" in message
    finally:
        labswitch.tc(sw, "filter", "replace", "dev", "p-q2", *rule, *match, "flowid", "1:20")
    assert lab.checks(SELECT).ok


def test_a_removed_lossless_class_is_named_and_qos_change_restores_it(lab: SwitchLab) -> None:
    sw = lab.container("leaf1")
    labswitch.tc(sw, "filter", "del", "dev", "p-q2", "parent", "1:", "prio", "10", "handle",
                 "800::20", "u32")  # fmt: skip
    labswitch.tc(sw, "class", "del", "dev", "p-q2", "classid", "1:20")
    message = _failed(lab.checks(SELECT), "test_hop_lossless_class[q2/fab0-leaf1/p-q2]")
    MEASURED["fault_lossless_class"] = message
    assert "switch leaf1 port p-q2 has no lossless class 1:20 for priority 3" in message
    restored = lab.qos_change()  # the day-2 playbook puts it back
    assert restored.ok and restored.hosts["leaf1"].changed > 0, restored.recap()
    assert lab.checks(SELECT).ok
