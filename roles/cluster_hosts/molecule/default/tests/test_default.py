"""Every node resolves every other node (and the extra line) through /etc/hosts; the block
comes back after the hosts file is rewritten, as a container runtime does at each start."""

import pytest


@pytest.mark.parametrize("name", ["ry-cluster-hosts-a", "ry-cluster-hosts-b"])
def test_resolves_each_node_to_its_network_address(host, name):
    entry = host.run(f"getent hosts {name}")
    assert entry.rc == 0, entry.stderr
    address, names = entry.stdout.split(None, 1)
    assert address.startswith("198.19.198."), entry.stdout
    assert f"{name}.rolesh.test" in names.split()


def test_resolves_the_extra_line(host):
    assert host.run("getent hosts storage1").stdout.split()[0] == "198.19.198.250"


def test_block_is_put_back_after_the_file_is_replaced(host):
    hosts = host.file("/etc/hosts").content_string
    try:
        host.run_expect([0], "printf '127.0.0.1 localhost\\n' > /etc/hosts")
        assert host.run("getent hosts storage1").rc != 0
        host.run_expect([0], "systemctl restart railyard-cluster-hosts.service")
        assert host.run("getent hosts storage1").stdout.split()[0] == "198.19.198.250"
        assert host.file("/etc/hosts").content_string.count("BEGIN railyard cluster_hosts") == 1
    finally:
        host.run(f"cat > /etc/hosts <<'EOF'\n{hosts}EOF")


def test_unit_is_enabled(host):
    assert host.service("railyard-cluster-hosts.service").is_enabled
