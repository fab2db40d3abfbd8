"""The cloud-shaped lab's parts that need no container: NoCloud seeds, the NAT ruleset, the mirror."""

from __future__ import annotations

import email
import hashlib
import shutil
import urllib.request
from pathlib import Path

import pytest
import yaml

from fabric.components.cloudinit import boot_cloud_config
from fabric.lab.mirror import PROBE_PACKAGE, Mirror, build_repository, probe_package
from fabric.lab.nat import ruleset
from fabric.lab.nocloud import ec2_hostname, seed
from fabric.lab.node import NOCLOUD_SEED, NodeConfig, _files
from fabric.spec import EgressSpec


def test_ec2_hostname_is_the_address_with_dashes() -> None:
    assert ec2_hostname("198.19.220.11") == "ip-198-19-220-11"
    with pytest.raises(ValueError):
        ec2_hostname("198.19.220")


def test_a_single_part_seed_is_the_cloud_config_unchanged() -> None:
    declared = boot_cloud_config("gpu01", EgressSpec(mode="nat"))
    files = seed("i-0abc", "ip-198-19-220-12", [declared])
    assert files["user-data"] == declared
    assert yaml.safe_load(files["meta-data"]) == {
        "instance-id": "i-0abc",
        "local-hostname": "ip-198-19-220-12",
    }


def test_several_parts_become_cloud_inits_multipart_in_order() -> None:
    declared = boot_cloud_config("gpu01", EgressSpec(mode="nat"))
    lab = "#cloud-config\napt:\n  preserve_sources_list: false\n"
    archive = email.message_from_string(seed("i-0abc", "ip-x", [declared, lab])["user-data"])
    assert archive.is_multipart()
    parts = archive.get_payload()
    assert [p.get_content_type() for p in parts] == ["text/cloud-config"] * 2
    assert [p.get_payload(decode=True).decode() for p in parts] == [declared, lab]
    with pytest.raises(ValueError, match="at least one"):
        seed("i-0abc", "ip-x", [])


def test_a_seeded_node_gets_its_seed_files_and_others_none() -> None:
    keys = {"authorized_key": "ssh-ed25519 AAAA x", "host_key_private": "k", "host_key_public": "p"}
    plain = NodeConfig(name="n1", container="c", image="i", networks={}, **keys)
    assert not [f for f in _files(plain) if f[0].startswith(NOCLOUD_SEED)]
    seeded = plain.model_copy(update={"seed": {"meta-data": "m", "user-data": "u"}})
    assert [(p, c, m) for p, c, m in _files(seeded) if p.startswith(NOCLOUD_SEED)] == [
        (f"{NOCLOUD_SEED}/meta-data", "m", 0o600),
        (f"{NOCLOUD_SEED}/user-data", "u", 0o600),
    ]


def test_the_nat_ruleset_masquerades_the_private_subnet_out_of_the_public_side() -> None:
    text = ruleset("198.19.220.0/24", "eth1")
    assert "type nat hook postrouting priority srcnat" in text
    assert 'ip saddr 198.19.220.0/24 oifname "eth1" masquerade' in text
    with pytest.raises(ValueError):
        ruleset("198.19.220.1/24", "eth1")  # an address, not a subnet


@pytest.mark.skipif(shutil.which("dpkg-deb") is None, reason="needs dpkg-deb")
def test_the_mirror_serves_a_flat_repository_and_records_clients(tmp_path: Path) -> None:
    deb = probe_package(tmp_path)
    repo = tmp_path / "repo"
    build_repository(repo, [deb])
    index = (repo / "Packages").read_text()
    assert f"Package: {PROBE_PACKAGE}\n" in index
    assert f"Filename: ./{deb.name}\n" in index
    assert f"SHA256: {hashlib.sha256(deb.read_bytes()).hexdigest()}\n" in index
    release = (repo / "Release").read_text()
    assert f" {hashlib.sha256(index.encode()).hexdigest()} {len(index)} Packages" in release
    with Mirror(repo, "127.0.0.1") as mirror:
        assert mirror.source_line == f"deb [trusted=yes] http://127.0.0.1:{mirror.port} ./"
        with urllib.request.urlopen(f"{mirror.url}/{deb.name}", timeout=10) as answer:
            assert answer.read() == deb.read_bytes()
    assert mirror.clients == [("127.0.0.1", f"/{deb.name}")]
