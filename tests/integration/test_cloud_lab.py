"""The bastion path, for real: lab nodes this machine cannot reach, a jump container in front.

Two node containers sit on an internal podman network this machine has no address on (and an
``unreachable`` route for its subnet: ``fabric.lab.bastion.isolate``); a bastion container is
on that network and on one the machine is on. The stack's inventory has ``access.bastion``, so
everything goes through the bastion, with host keys checked against the stack's known_hosts:

- the bastion's key is pinned as a cloud would report it (generated outside the container,
  as the lab does); the nodes' keys are recorded at first contact through the bastion;
- a playbook runs on both nodes (ansible-runner, as ``python -m fabric run`` does), and a
  second run changes nothing;
- checks of the suite run through it (netdev MTU, don't-fragment ping between the nodes);
- a node replaced with a new host key is refused by name, by the first-contact recording
  and by the playbook (unreachable: REMOTE HOST IDENTIFICATION HAS CHANGED), the other node
  unaffected.

Own stack name ``rybastion-<hex>``, own subnets 198.19.200-215.0/24 (front) and
198.19.220-235.0/24 (nodes), no host ports. Run it only under the heavy lock.
"""

from __future__ import annotations

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

from fabric.components.dynamic_hostkeys import HostKeyPinProvider
from fabric.hostkeys import (
    HostKeyChanged,
    JumpHost,
    pin,
    pinned_keys,
    wait_first_contact,
)
from fabric.inventory import build_inventory, inventory_text
from fabric.lab import bastion as isolation
from fabric.lab.image import LATEST
from fabric.lab.keys import KeyPair, generate
from fabric.lab.network import NetworkInfo, ensure_network, remove_network
from fabric.lab.node import NodeConfig, create_node, remove_node
from fabric.lab.podman import exists
from fabric.spec import ClusterSpec
from fabric.state import StateLayout

pytestmark = pytest.mark.skipif(
    shutil.which("podman") is None or not exists("image", LATEST),
    reason="needs podman and the lab's node image (python -m fabric lab image)",
)

PLAYBOOK = """\
- name: Reach every node through the bastion
  hosts: all
  gather_facts: false
  tasks:
    - name: Read the node's name
      ansible.builtin.command: cat /etc/hostname
      register: railyard_hostname
      changed_when: false
    - name: The node is the one the inventory names
      ansible.builtin.assert:
        that: railyard_hostname.stdout == inventory_hostname
    - name: Leave a mark
      ansible.builtin.copy:
        content: "{{ inventory_hostname }} through the bastion\\n"
        dest: /root/railyard-bastion
        mode: "0644"
"""


@dataclass
class BastionLab:
    """What the module's fixture built."""

    stack: str
    tag: int
    root: Path
    login: KeyPair
    host_keys: dict[str, KeyPair]
    networks: dict[str, NetworkInfo] = field(default_factory=dict)
    containers: list[str] = field(default_factory=list)

    @property
    def layout(self) -> StateLayout:
        return StateLayout(self.stack, self.root / "state")

    @property
    def front(self) -> str:
        return f"198.19.{200 + self.tag}.2"

    def address(self, node: str) -> str:
        return {"bastion": f"198.19.{220 + self.tag}.2", "n1": f"198.19.{220 + self.tag}.11",
                "n2": f"198.19.{220 + self.tag}.12"}[node]  # fmt: skip

    @property
    def key_file(self) -> Path:
        return self.layout.dir / "id_ed25519"

    @property
    def spec_file(self) -> Path:
        return self.root / "spec.yaml"

    def spec_data(self) -> dict[str, Any]:
        return {
            "name": "bastionlab",
            "target": "lab",
            "nodes": [
                {
                    "names": "n[1-2]",
                    "role": "compute",
                    "hcas": [
                        {
                            "device": "mlx5_0",
                            "link_layer": "Ethernet",
                            "rate_gbps": 100,
                            "netdev": "eth0",
                        }
                    ],
                }
            ],
            "fabric": {"kind": "roce", "mtu": 1500, "roce": {}},
            "management": {"subnet": f"198.19.{220 + self.tag}.0/24"},
            "access": {"bastion": {"host": self.front, "user": "root"}},
        }

    def node(self, name: str) -> NodeConfig:
        networks = {f"{self.stack}-back": self.address(name)}
        if name == "bastion":
            networks[f"{self.stack}-front"] = self.front
        return NodeConfig(
            name=name,
            container=f"{self.stack}-{name}",
            image=LATEST,
            networks=networks,
            authorized_key=self.login.public_key,
            host_key_private=self.host_keys[name].private_key,
            host_key_public=self.host_keys[name].public_key,
            labels={"railyard.stack": self.stack},
        )

    def first_contact(self, node: str) -> bool:
        return wait_first_contact(
            node,
            self.address(node),
            timeout=90,
            user="root",
            private_key=self.key_file,
            known_hosts=self.layout.known_hosts,
            jump=JumpHost(self.front, "root", 22),
        )

    def playbook(self) -> Any:
        from fabric.handoff.runner import run_playbook

        book = self.root / "bastion.yml"
        book.write_text(PLAYBOOK)
        return run_playbook(
            book,
            stack=self.stack,
            emit=lambda _: None,
            state_root=self.layout.root,
            artifacts_root=self.root / "artifacts",
        )


def _teardown(lab: BastionLab) -> None:
    for container in lab.containers:
        remove_node(container)
    for info in lab.networks.values():
        isolation.restore(info)
        remove_network(info.name, info.bridge)


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BastionLab]:
    run = secrets.token_hex(3)
    lab = BastionLab(
        stack=f"rybastion-{run}",
        tag=secrets.randbelow(16),
        root=tmp_path_factory.mktemp("rybastion"),
        login=generate("railyard-bastion-test"),
        host_keys={n: generate(f"{n}-host") for n in ("bastion", "n1", "n2")},
    )
    saved = os.environ.get("RAILYARD_STATE_DIR")
    os.environ["RAILYARD_STATE_DIR"] = str(lab.layout.root)
    try:
        lab.layout.dir.mkdir(parents=True)
        fd = os.open(lab.key_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as out:
            out.write(lab.login.private_key)
        for side, third in (("front", 200), ("back", 220)):
            net = f"198.19.{third + lab.tag}"
            lab.networks[side] = ensure_network(f"{lab.stack}-{side}", f"{net}.0/24", f"{net}.1")
        for name in ("bastion", "n1", "n2"):
            create_node(lab.node(name))
            lab.containers.append(f"{lab.stack}-{name}")
        isolation.isolate(lab.networks["back"])
        lab.spec_file.write_text(yaml.safe_dump(lab.spec_data()))
        spec = ClusterSpec.model_validate(lab.spec_data())
        inventory = build_inventory(
            spec,
            {"n1": lab.address("n1"), "n2": lab.address("n2")},
            ssh_user="root",
            private_key_file=str(lab.key_file),
            known_hosts_file=str(lab.layout.known_hosts),
        )
        lab.layout.inventory.write_text(inventory_text(inventory))
        # the bastion's key as a cloud reports it (made outside the container, like the lab's)
        pin(lab.layout.known_hosts, "bastion", lab.front, [lab.host_keys["bastion"].public_key])
        yield lab
    finally:
        _teardown(lab)
        if saved is None:
            os.environ.pop("RAILYARD_STATE_DIR", None)
        else:
            os.environ["RAILYARD_STATE_DIR"] = saved


def test_nodes_cannot_be_reached_directly(lab: BastionLab) -> None:
    # the bastion answers on the front network (its sshd may still be starting on a loaded
    # machine: make test's run of 2026-11-27 found it closed once, at load 12)
    deadline = time.monotonic() + 90
    while not isolation.reachable(lab.front) and time.monotonic() < deadline:
        time.sleep(1)
    assert isolation.reachable(lab.front)
    for node in ("n1", "n2"):
        assert not isolation.reachable(lab.address(node)), f"{node} is reachable directly"


def test_first_contact_records_each_node_key_through_the_bastion(lab: BastionLab) -> None:
    # n1 through the cloud targets' pin resource (no cloud report: first contact), n2 directly
    pinned = HostKeyPinProvider().create(
        {
            "host": "n1",
            "address": lab.address("n1"),
            "port": 22.0,  # numbers reach a dynamic provider as floats
            "known_hosts": str(lab.layout.known_hosts),
            "user": "root",
            "private_key": str(lab.key_file),
            "source": None,
            "jump": {"address": lab.front, "user": "root", "port": 22.0},
            "timeout": 90.0,
        }
    )
    assert pinned.outs["pinned_from"] == "first contact"
    assert pinned.outs["keys"] == [" ".join(lab.host_keys["n1"].public_key.split()[:2])]
    assert lab.first_contact("n2") is True
    for node in ("n1", "n2"):
        kind, blob = lab.host_keys[node].public_key.split()[:2]
        assert pinned_keys(lab.layout.known_hosts, lab.address(node)) == {kind: blob}
        assert lab.first_contact(node) is False  # already recorded: nothing added


def test_playbook_runs_through_the_bastion_and_is_idempotent(lab: BastionLab) -> None:
    first = lab.playbook()
    assert first.ok, first.summary()
    assert sorted(first.hosts) == ["n1", "n2"]
    assert all(c.changed == 1 and c.unreachable == 0 for c in first.hosts.values())
    again = lab.playbook()
    assert again.ok, again.summary()
    assert all(c.changed == 0 for c in again.hosts.values()), again.recap()


def test_checks_run_through_the_bastion(lab: BastionLab) -> None:
    from fabric.verify.runner import run_checks

    outcome = run_checks(
        lab.stack,
        spec=lab.spec_file,
        select="test_netdev_mtu or test_path_mtu",
        workers=1,
        quiet=True,
        report_dir=lab.root / "reports",
    )
    results = {f"{r.name}[{r.param}]": r for r in outcome.results}
    assert sorted(results) == [
        "test_netdev_mtu[n1/eth0]",
        "test_netdev_mtu[n2/eth0]",
        "test_path_mtu[n1->n2]",
        "test_path_mtu[n2->n1]",
    ], outcome.summary()
    assert outcome.ok, outcome.summary()


def test_a_replaced_node_with_a_new_key_is_refused_by_name(lab: BastionLab) -> None:
    remove_node(f"{lab.stack}-n2")
    lab.host_keys["n2"] = generate("n2-host-replaced")
    create_node(lab.node("n2"))
    with pytest.raises(HostKeyChanged, match=rf"^n2 \({lab.address('n2')}\): host key changed"):
        lab.first_contact("n2")
    result = lab.playbook()
    assert not result.ok
    assert result.hosts["n1"].unreachable == 0
    assert result.hosts["n2"].unreachable == 1
    (failure,) = result.failures
    assert failure.host == "n2" and failure.unreachable, result.summary()
    assert "REMOTE HOST IDENTIFICATION HAS CHANGED" in failure.message, result.summary()
