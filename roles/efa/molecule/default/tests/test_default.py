"""What the efa role leaves on a host without EFA and without a mirror."""

from __future__ import annotations

import os

import testinfra.utils.ansible_runner

testinfra_hosts = testinfra.utils.ansible_runner.AnsibleRunner(
    os.environ["MOLECULE_INVENTORY_FILE"]
).get_hosts("all")


def test_ptrace_scope_is_persisted(host) -> None:
    conf = host.file("/etc/sysctl.d/60-railyard-efa.conf")
    assert conf.exists
    assert conf.user == "root"
    assert "kernel.yama.ptrace_scope=0" in conf.content_string.replace(" ", "")


def test_installer_did_not_run(host) -> None:
    assert not host.file("/opt/amazon/efa").exists
    assert not host.file("/var/tmp/railyard-efa").exists


def test_nvidia_peermem_is_never_set_to_load(host) -> None:
    """The dma-buf path needs no peer-memory module, and none is set to load at boot."""
    assert not host.file("/etc/modules-load.d/60-railyard-efa-peermem.conf").exists
    listed = host.run("grep -rls nvidia_peermem /etc/modules-load.d /etc/modprobe.d")
    assert listed.stdout.strip() == ""
