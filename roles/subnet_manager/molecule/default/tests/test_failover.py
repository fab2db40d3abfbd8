"""Failover: stop the MASTER's OpenSM and the STANDBY becomes MASTER; then hand back."""

import os
import re
import time

import pytest
import testinfra

# The podman connection skips pam_env: read the simulator environment as a login would.
SIM = "set -a; . /etc/environment; "

MASTER = "ry-rolesb-sm1"
STANDBY = "ry-rolesb-sm2"


def _other(name):
    return testinfra.get_host(
        f"ansible://{name}", ansible_inventory=os.environ["MOLECULE_INVENTORY_FILE"]
    )


def _wait_for_master(host, priority, timeout=60):
    deadline = time.monotonic() + timeout
    out = ""
    while time.monotonic() < deadline:
        out = host.run(SIM + "sminfo").stdout
        if re.search(rf"priority {priority} state 3 SMINFO_MASTER", out):
            return out
        time.sleep(2)
    pytest.fail(f"no MASTER with priority {priority} after {timeout}s; last sminfo: {out!r}")


def test_standby_takes_over_when_master_stops(host):
    if host.backend.get_hostname() != STANDBY:
        pytest.skip("run once, from the standby")
    master = _other(MASTER)
    standby_guid = re.search(r"Port GUID: (0x[0-9a-f]+)", host.check_output(SIM + "ibstat")).group(1)
    master.run_test("systemctl stop opensm")
    try:
        out = _wait_for_master(host, 10)
        assert f"sm guid {hex(int(standby_guid, 16))}" in out
    finally:
        master.run_test("systemctl start opensm")
    # The higher-priority SM takes the subnet back once it is running again.
    _wait_for_master(host, 14)
