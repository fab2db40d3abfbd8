"""Pair sampler, MTU math, bandwidth floors and the check plan (no SSH)."""

from __future__ import annotations

import pytest

from fabric.model.pairs import ring_pairs
from fabric.model.ports import expected_ib_mtu
from fabric.spec import load_spec
from fabric.state import REPO_ROOT
from fabric.verify.bandwidth import min_write_bw
from fabric.verify.mtu import df_ping_command, df_ping_payload, ib_mtu_bytes
from fabric.verify.plan import CheckPlan


def test_ring_pairs_every_host_once_as_source() -> None:
    hosts = [f"h{i:02d}" for i in range(10)]
    pairs = ring_pairs(hosts)
    assert [s for s, _ in pairs] == hosts
    assert all(s != t for s, t in pairs)


def test_ring_pairs_half_shift_is_deterministic() -> None:
    assert ring_pairs(["a", "b", "c", "d"]) == [("a", "c"), ("b", "d"), ("c", "a"), ("d", "b")]
    assert ring_pairs(["a", "b", "c", "d"]) == ring_pairs(["a", "b", "c", "d"])


def test_ring_pairs_is_linear_not_all_pairs() -> None:
    hosts = [f"n{i}" for i in range(1000)]
    assert len(ring_pairs(hosts)) == 1000


def test_ring_pairs_only_target_responders() -> None:
    pairs = ring_pairs(["a", "b", "sm1", "sm2"], responders=["a", "b"])
    assert {t for _, t in pairs} <= {"a", "b"}
    assert [s for s, _ in pairs] == ["a", "b", "sm1", "sm2"]


@pytest.mark.parametrize("hosts", [[], ["only"]])
def test_ring_pairs_needs_two_hosts(hosts: list[str]) -> None:
    assert ring_pairs(hosts) == []


@pytest.mark.parametrize(
    ("mtu", "payload"), [(1500, 1472), (9000, 8972), (4096, 4068), (9216, 9188)]
)
def test_df_ping_payload(mtu: int, payload: int) -> None:
    assert df_ping_payload(mtu) == payload


def test_df_ping_command_sets_dont_fragment() -> None:
    assert (
        df_ping_command("198.18.2.11", 9000, "eth1")
        == "ping -M do -s 8972 -c 1 -W 2 -I eth1 198.18.2.11"
    )


def test_df_ping_payload_rejects_tiny_mtu() -> None:
    with pytest.raises(ValueError, match="no room"):
        df_ping_payload(28)


@pytest.mark.parametrize(("value", "size"), [("2048", 2048), (5, 4096), ("1", 256), (4096, 4096)])
def test_ib_mtu_bytes(value: str | int, size: int) -> None:
    assert ib_mtu_bytes(value) == size


def test_ib_mtu_bytes_rejects_other_values() -> None:
    with pytest.raises(ValueError):
        ib_mtu_bytes(1500)


def test_lab_ib_mtu_is_capped_by_ibsim() -> None:
    assert expected_ib_mtu(4096, simulated=True) == 2048
    assert expected_ib_mtu(4096, simulated=False) == 4096
    assert expected_ib_mtu(1024, simulated=True) == 1024


@pytest.mark.parametrize(("rate", "floor"), [(400, 360.0), (200, 180.0), (100, 88.0), (40, 28.0)])
def test_min_write_bw_table(rate: int, floor: float) -> None:
    assert min_write_bw(rate) == floor


def _lab_plan() -> CheckPlan:
    spec = load_spec(REPO_ROOT / "Pulumi.lab.yaml")
    return CheckPlan(spec=spec, hosts=list(spec.hosts))


def test_lab_plan_expects_the_rates_ibsim_simulates() -> None:
    from fabric.graph import link_rate
    from fabric.topology.ibsim import sim_speed

    plan = _lab_plan()
    assert {p.rate_gbps for p in plan.hca_ports} == {
        link_rate("4x", sim_speed("NDR"))
    }  # 4xNDR as ibsim runs it
    assert plan.ib_mtu == 2048


def test_lab_plan_names_switch_ports() -> None:
    port = next(p for p in _lab_plan().hca_ports if p.host == "gpu01")
    assert (port.switch, port.switch_port, port.node_guid) == ("leaf01", 1, "0x0002c90302000000")


def test_lab_plan_targets_avoid_sm_hosts_and_cover_every_host() -> None:
    plan = _lab_plan()
    assert not {p.target for p in plan.ib_pairs} & plan.sm_hosts
    assert {p.source for p in plan.ib_pairs} == {p.host for p in plan.ib_ports}


def test_lab_plan_reports_why_checks_are_not_generated() -> None:
    reasons = _lab_plan().not_generated()
    assert set(reasons) >= {"verbs", "efa", "roce_qos", "netdev_mtu"}
    assert "ib" not in reasons and "sm" not in reasons


def test_limit_drops_fabric_wide_checks_without_their_hosts() -> None:
    spec = load_spec(REPO_ROOT / "Pulumi.lab.yaml")
    plan = CheckPlan(spec=spec, hosts=["gpu01", "gpu02"])
    assert "slurm_topology" in plan.not_generated()
    # the sweep judges the whole fabric from any selected fabric host
    assert plan.sweep_hosts == ["gpu01"] and "sweep" not in plan.not_generated()
