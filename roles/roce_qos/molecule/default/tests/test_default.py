"""Testinfra checks of the roce_qos role in the lab: a veth stands in for the RoCE netdev."""

import json

import pytest

IFACE = "ryfab0"
UNIT = "railyard-roce-qos.service"
KNOBS = ["trust", "pfc", "ecn", "roce_tos", "cnp_dscp", "dcqcn", "pfc_watchdog", "cable_length"]


@pytest.fixture
def fact(host):
    return json.loads(host.file("/etc/ansible/facts.d/roce_qos.fact").content_string)


def test_mtu_is_set_on_the_fabric_interface(host):
    assert host.file(f"/sys/class/net/{IFACE}/mtu").content_string.strip() == "9000"


def test_ip_link_reports_the_mtu(host):
    assert "mtu 9000" in host.check_output(f"ip link show dev {IFACE}")


def test_unit_is_enabled_for_boot(host):
    assert host.service(UNIT).is_enabled


def test_unit_ran_successfully(host):
    out = host.check_output(f"systemctl show -p ActiveState -p Result {UNIT}")
    assert "ActiveState=active" in out
    assert "Result=success" in out


def test_settings_file_mirrors_the_spec(host):
    env = host.file("/etc/railyard/roce-qos.env")
    assert env.mode == 0o644
    for line in [
        'ROCE_QOS_INTERFACES="ryfab0"',
        "ROCE_QOS_MTU=9000",
        "ROCE_QOS_TRUST=dscp",
        "ROCE_QOS_PFC_PRIORITY=3",
        "ROCE_QOS_RDMA_DSCP=26",
        "ROCE_QOS_CNP_DSCP=48",
        "ROCE_QOS_ECN=1",
        "ROCE_QOS_TOS=106",
        'ROCE_QOS_DCQCN=""',
        "ROCE_QOS_PFC_WATCHDOG_MS=0",
        "ROCE_QOS_CABLE_LEN=0",
    ]:
        assert line in env.content_string.splitlines()


def test_script_says_why_connectx_knobs_are_skipped(host):
    out = host.check_output("/usr/local/libexec/railyard/roce-qos-apply")
    assert "skipped: no ConnectX HCA found (lspci/sysfs) behind ryfab0 (driver: none)" in out


def test_unit_restores_the_mtu_after_it_was_changed(host):
    host.check_output(f"ip link set dev {IFACE} mtu 1500")
    host.check_output(f"systemctl restart {UNIT}")
    assert host.file(f"/sys/class/net/{IFACE}/mtu").content_string.strip() == "9000"


def test_local_fact_reports_mtu_applied(fact):
    assert fact["interfaces"][IFACE]["mtu"] == "applied: 9000"


@pytest.mark.parametrize("knob", KNOBS)
def test_local_fact_reports_connectx_knob_skipped(fact, knob):
    state = fact["interfaces"][IFACE]["knobs"][knob]
    assert state.startswith("skipped: no ConnectX HCA found (lspci/sysfs)")


def test_local_fact_keeps_the_wanted_values(fact):
    assert fact["wanted"] == {
        "mtu": 9000,
        "trust": "dscp",
        "pfc_priority": 3,
        "rdma_dscp": 26,
        "cnp_dscp": 48,
        "ecn": True,
        "roce_tos": 106,
        "cnp_priority": 6,
        "pfc_watchdog_ms": 0,
    }


def test_no_ecn_sysfs_was_faked(host):
    assert not host.file(f"/sys/class/net/{IFACE}/ecn").exists
