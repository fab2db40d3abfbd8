"""The preflight role changes nothing on a host: it only looks (converge.yml asserts its
failure message; here, that it left no file behind)."""

from __future__ import annotations

import os

import testinfra.utils.ansible_runner

testinfra_hosts = testinfra.utils.ansible_runner.AnsibleRunner(
    os.environ["MOLECULE_INVENTORY_FILE"]
).get_hosts("all")


def test_the_image_really_lacks_what_the_converge_found_missing(host) -> None:
    """The failure converge.yml asserted is the image's truth, not the probe's mistake."""
    assert not host.exists("nvidia-smi")
    assert not host.file("/opt/amazon/efa/bin/fi_info").exists
    assert host.file("/usr/sbin/munged").exists
    assert host.file("/usr/sbin/slurmd").exists
