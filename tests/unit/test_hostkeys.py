"""fabric.hostkeys: the EC2 console's host key block (a real capture), pinning, the ssh options."""

from __future__ import annotations

import base64
import hashlib
import json
import re
import shlex
from pathlib import Path

import pytest

from fabric.hostkeys import (
    HostKeyChanged,
    HostKeyError,
    JumpHost,
    known_hosts_name,
    pin,
    pinned_keys,
    ssh_common_args,
)
from fabric.state import REPO_ROOT
from fabric.targets.aws.hostkeys import console_host_keys
from fabric.targets.gcp.hostkeys import guest_attribute_host_keys

CONSOLE = (REPO_ROOT / "tests/fixtures/ec2_console__gremlinchaosmonkey__1.txt").read_text()


def md5_fingerprint(key: str) -> str:
    digest = hashlib.md5(base64.b64decode(key.split()[1])).hexdigest()
    return ":".join(digest[i : i + 2] for i in range(0, 32, 2))


def test_console_block_gives_every_host_key() -> None:
    keys = console_host_keys(CONSOLE)
    assert [k.split()[0] for k in keys] == ["ecdsa-sha2-nistp256", "ssh-ed25519", "ssh-rsa"]
    assert all(len(k.split()) == 2 for k in keys)  # the comment root@ip-... is dropped
    assert (
        keys[1]
        == "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGH5fGgBdTgC1nD8E/TekwJAet/K4f1f8DiBiQ4NYry/"
    )


def test_console_keys_match_the_fingerprints_cloud_init_printed() -> None:
    printed = dict(
        (kind, fp)
        for fp, kind in re.findall(r"^ec2: \d+ ([0-9a-f:]{47})  \S+ \((\w+)\)$", CONSOLE, re.M)
    )
    names = {"ecdsa-sha2-nistp256": "ECDSA", "ssh-ed25519": "ED25519", "ssh-rsa": "RSA"}
    keys = console_host_keys(CONSOLE)
    assert {names[k.split()[0]]: md5_fingerprint(k) for k in keys} == {
        kind: printed[kind] for kind in ("ECDSA", "ED25519", "RSA")
    }


def test_console_before_cloud_init_wrote_the_block_has_no_keys() -> None:
    early = CONSOLE.split("ec2: -----BEGIN SSH HOST KEY FINGERPRINTS")[0]
    assert console_host_keys(early) == []


def test_a_damaged_key_in_the_block_is_refused_with_its_line() -> None:
    damaged = CONSOLE.replace("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5", "ssh-ed25519 AAAAB3NzaC1yc2EA")
    with pytest.raises(HostKeyError, match="line 2: the ssh-ed25519 key's blob names another"):
        console_host_keys(damaged)
    garbage = CONSOLE.replace("ssh-rsa AAAAB3", "no-key AAAAB3")
    with pytest.raises(HostKeyError, match="line 3"):
        console_host_keys(garbage)


def test_guest_attributes_keep_only_the_hostkeys_namespace() -> None:
    keys = console_host_keys(CONSOLE)
    items = [{"namespace": "hostkeys", "key": k.split()[0], "value": k} for k in keys]
    items.append({"namespace": "guestInventory", "key": "ShortName", "value": "debian"})
    assert guest_attribute_host_keys(items) == keys


def test_reported_keys_come_from_the_targets_source_through_a_real_process(
    tmp_path: Path,
) -> None:
    """The poller runs the command the target's hostkeys part names and reads its output with
    that part's parser; here ``cat`` of the captured console output stands in for the CLI."""
    from fabric.hostkeys import reported_host_keys
    from fabric.targets import part

    aws = part("aws", "hostkeys")
    command = aws.command({"instance_id": "i-0123456789abcdef0", "region": "us-east-2"})
    assert command[:3] == ["aws", "ec2", "get-console-output"]
    assert "i-0123456789abcdef0" in command and "us-east-2" in command
    console = tmp_path / "console.txt"
    console.write_text(CONSOLE)
    keys = reported_host_keys(["cat", str(console)], aws.parse, timeout=5, poll=1)
    assert keys == console_host_keys(CONSOLE)
    gcp = part("gcp", "hostkeys")
    attributes = tmp_path / "attributes.json"
    attributes.write_text(
        json.dumps([{"namespace": "hostkeys", "key": k.split()[0], "value": k} for k in keys])
    )
    assert reported_host_keys(["cat", str(attributes)], gcp.parse, timeout=5, poll=1) == keys
    missing = ["railyard-no-such-cli", "x"]
    assert reported_host_keys(missing, aws.parse, timeout=5, poll=1) == []


def test_pin_writes_once_and_refuses_a_changed_key(tmp_path: Path) -> None:
    known = tmp_path / "state" / "known_hosts"
    ecdsa, ed25519, _ = console_host_keys(CONSOLE)
    assert pin(known, "gpu01", "10.0.0.5", [ed25519]) is True
    assert pin(known, "gpu01", "10.0.0.5", [ed25519]) is False
    assert known.read_text() == f"10.0.0.5 {ed25519}\n"
    assert pin(known, "gpu01", "10.0.0.5", [ecdsa, ed25519]) is True  # a new type is added
    assert pinned_keys(known, "10.0.0.5") == {k.split()[0]: k.split()[1] for k in (ecdsa, ed25519)}
    other = (
        "ssh-ed25519 "
        + base64.b64encode(b"\x00\x00\x00\x0bssh-ed25519\x00\x00\x00\x20" + bytes(32)).decode()
    )
    before = known.read_text()
    with pytest.raises(HostKeyChanged, match=r"^gpu01 \(10\.0\.0\.5\): host key changed"):
        pin(known, "gpu01", "10.0.0.5", [other])
    assert known.read_text() == before


def test_pin_off_port_22_uses_the_bracketed_name(tmp_path: Path) -> None:
    known = tmp_path / "known_hosts"
    key = console_host_keys(CONSOLE)[1]
    pin(known, "bastion", "198.18.0.2", [key], port=2222)
    assert known_hosts_name("198.18.0.2", 2222) == "[198.18.0.2]:2222"
    assert known.read_text().startswith("[198.18.0.2]:2222 ssh-ed25519 ")
    assert pinned_keys(known, "198.18.0.2") == {}


def test_ssh_options_check_strictly_through_the_jump() -> None:
    args = shlex.split(
        ssh_common_args("/s/known_hosts", JumpHost("203.0.113.7", "ubuntu", 2200), "/s/id")
    )
    assert args[:4] == [
        "-o",
        "UserKnownHostsFile=/s/known_hosts",
        "-o",
        "StrictHostKeyChecking=yes",
    ]
    assert args[4] == "-o" and args[5].startswith("ProxyCommand=ssh ")
    jump = args[5].removeprefix("ProxyCommand=")
    assert "-o UserKnownHostsFile=/s/known_hosts -o StrictHostKeyChecking=yes" in jump
    assert jump.endswith("-i /s/id -p 2200 -W %h:%p ubuntu@203.0.113.7")
    assert len(args) == 6


def test_host_key_checking_is_never_turned_off() -> None:
    with pytest.raises(ValueError, match="never"):
        ssh_common_args("/s/kh", checking="no")
    first = ssh_common_args("/s/kh", JumpHost("198.18.0.2"), checking="accept-new")
    # accept-new only for the node's first contact; the jump host is always checked strictly
    assert first.count("StrictHostKeyChecking=accept-new") == 1
    assert first.count("StrictHostKeyChecking=yes") == 1


def test_no_file_of_the_project_turns_host_key_checking_off() -> None:
    offenders = []
    for top in ("fabric", "playbooks", "roles", "molecule", "scripts", "docs", "tests"):
        for path in (REPO_ROOT / top).rglob("*"):
            if not path.is_file() or path.suffix not in {
                ".py",
                ".yml",
                ".yaml",
                ".cfg",
                ".md",
                ".j2",
                ".sh",
            }:
                continue
            text = path.read_text(errors="replace")
            if re.search(r"StrictHostKeyChecking[= ]+no\b", text) and path != Path(__file__):
                offenders.append(str(path.relative_to(REPO_ROOT)))
    for name in ("ansible.cfg", "Makefile", "README.md"):
        if re.search(r"StrictHostKeyChecking[= ]+no\b", (REPO_ROOT / name).read_text()):
            offenders.append(name)
    assert offenders == []


def test_the_handoff_keeps_host_key_checking_on(tmp_path: Path) -> None:
    """ansible-runner turns checking off by default, and Ansible's own option turning it off
    would then come before the inventory's options; the hand-off sets it back on."""
    from localplay import local_stack

    from fabric.handoff.runner import run_playbook

    book, out = local_stack(
        tmp_path,
        "- hosts: all\n  gather_facts: false\n  tasks:\n"
        "    - ansible.builtin.copy:\n"
        "        content: \"{{ lookup('ansible.builtin.config', 'HOST_KEY_CHECKING') }}\"\n"
        "        dest: '{{ out }}'\n        mode: '0644'\n",
    )
    result = run_playbook(
        book, stack="t", emit=lambda _: None, state_root=tmp_path / "state",
        artifacts_root=tmp_path / "artifacts",
    )  # fmt: skip
    assert result.ok, result.summary()
    assert out.read_text() == "True"
