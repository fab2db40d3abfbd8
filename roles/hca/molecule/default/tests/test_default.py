"""Testinfra checks of the hca role in the lab (no ConnectX HCA present)."""

import json

import pytest

FACT = "/etc/ansible/facts.d/hca.fact"


@pytest.fixture
def fact(host):
    return json.loads(host.file(FACT).content_string)


def test_no_connectx_on_the_pci_bus(host):
    vendors = host.run("cat /sys/bus/pci/devices/*/vendor").stdout.split()
    assert "0x15b3" not in vendors


def test_local_fact_file_is_root_owned(host):
    f = host.file(FACT)
    assert f.is_file
    assert f.user == "root"
    assert f.mode == 0o644


def test_local_fact_says_skipped_with_reason(fact):
    assert fact["status"] == "skipped"
    assert fact["reason"] == "skipped: no ConnectX HCA found (lspci/sysfs)"


def test_local_fact_lists_no_devices(fact):
    assert fact["devices"] == []


def test_local_fact_needs_no_reboot(fact):
    assert fact["reboot_required"] is False


def test_local_fact_keeps_the_wanted_parameters(fact):
    assert fact["wanted"] == ["ADVANCED_PCI_SETTINGS", "LINK_TYPE_P1", "NUM_OF_VFS", "SRIOV_EN"]


def test_no_firmware_tool_was_installed(host):
    assert not host.package("mstflint").is_installed
