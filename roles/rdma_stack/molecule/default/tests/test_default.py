"""Testinfra checks of the rdma_stack role in the lab (distro source)."""

import json

import pytest

PACKAGES = [
    "rdma-core",
    "ibverbs-providers",
    "ibverbs-utils",
    "infiniband-diags",
    "librdmacm1",
    "perftest",
]


@pytest.fixture
def fact(host):
    return json.loads(host.file("/etc/ansible/facts.d/rdma_stack.fact").content_string)


@pytest.mark.parametrize("name", PACKAGES)
def test_package_installed(host, name):
    assert host.package(name).is_installed


@pytest.mark.parametrize("tool", ["ibv_devices", "ibstat", "ib_write_bw"])
def test_tool_on_path(host, tool):
    assert host.exists(tool)


def test_fact_records_distro_source_and_version(host, fact):
    assert fact["source"] == "distro"
    assert fact["status"] == "present"
    assert fact["version"] == host.package("rdma-core").version


def test_fact_records_management_interface_not_connectx(host, fact):
    # A veth has no device driver; Ansible's interface facts then carry no "module".
    assert fact["mgmt_driver"] == "none"
    assert fact["mgmt_on_connectx"] is False
    assert host.interface(fact["mgmt_interface"]).exists


def test_no_vendor_repository_added(host):
    assert not host.file("/etc/apt/sources.list.d/railyard-ofed.sources").exists
