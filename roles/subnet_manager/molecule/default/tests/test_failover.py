"""Failover: stop the MASTER's OpenSM and the STANDBY becomes MASTER; then hand back."""

import os
import re
import time

import pytest
import testinfra

# The podman connection skips pam_env: read the simulator environment as a login would.
SIM = "set -a; . /etc/environment; "

MASTER = "ry-subnet-manager-sm1"
STANDBY = "ry-subnet-manager-sm2"


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
    standby_guid = re.search(r"Port GUID: (0x[0-9a-f]+)", host.check_output(SIM + "ibstat")).group(
        1
    )
    master.run_test("systemctl stop opensm")
    try:
        out = _wait_for_master(host, 10)
        assert f"sm guid {hex(int(standby_guid, 16))}" in out
    finally:
        # Restore as the role starts SMs: the standby stops, the priority-14 SM starts and
        # becomes MASTER, then the standby starts again (no HANDOVER: under ibsim a handed-over
        # MASTER can wait forever on a MAD nobody answers, as umad2sim never times MADs out).
        host.run_test("systemctl stop opensm")
        master.run_test("systemctl start opensm")
    _wait_for_master(host, 14)
    host.run_test("systemctl start opensm")
    _wait_for_master(host, 14)
    assert host.service("opensm").is_running
