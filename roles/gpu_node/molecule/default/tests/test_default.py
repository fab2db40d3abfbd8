"""What the gpu_node role leaves where no driver and no NVIDIA repository exist: no fabric
manager package and no unit (it refused, and its install failed, without side effects)."""

from __future__ import annotations

import os

import testinfra.utils.ansible_runner

testinfra_hosts = testinfra.utils.ansible_runner.AnsibleRunner(
    os.environ["MOLECULE_INVENTORY_FILE"]
).get_hosts("all")


def test_no_fabric_manager_was_installed(host) -> None:
    assert not host.package("nvidia-fabricmanager-580").is_installed
    assert host.run("systemctl cat nvidia-fabricmanager").rc != 0


def test_the_real_driver_version_file_was_the_input(host) -> None:
    assert "580.159.04" in host.file("/tmp/nvidia-version").content_string
