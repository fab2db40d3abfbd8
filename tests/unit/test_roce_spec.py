"""fabric.roce's lossless settings and managed switches: defaults and the cross-field rules,
each broken rule one problem naming the field and the fix."""

from __future__ import annotations

from typing import Any

import pytest

from fabric.spec import Problem, SpecError, spec_from_mapping
from tests.unit.test_spec import base, problems, set_path

LAB_ROCE = {
    "name": "rocelab",
    "target": "lab",
    "nodes": [
        {
            "names": "gpu[1-2]",
            "hcas": [{"device": "mlx5_0", "link_layer": "Ethernet", "netdev": "eth1"}],
        }
    ],
    "fabric": {"kind": "roce", "mtu": 9000, "roce": {}},
    "management": {"subnet": "198.18.60.0/24"},
}


def roce(**fields: Any) -> dict[str, Any]:
    data = base("roce")
    for path, value in fields.items():
        set_path(data, path.replace("__", "."), value)
    return data


def test_defaults_follow_nvidia_roce_configuration() -> None:
    spec = spec_from_mapping(base("roce"))
    r = spec.fabric.roce
    assert r is not None
    assert (r.rdma_dscp, r.pfc_priority, r.cnp_dscp, r.cnp_priority) == (26, 3, 48, 6)
    assert r.lossless == [3]
    [queue] = r.ecn_marking
    assert (queue.priority, queue.min_bytes, queue.max_bytes, queue.probability_percent) == (
        3,
        150000,
        1500000,
        100,
    )
    assert (r.pfc_watchdog.enabled, r.pfc_watchdog.detection_ms, r.pfc_watchdog.restore_ms) == (
        True,
        200,
        200,
    )
    assert (r.dcqcn.rp.dce_tcp_g, r.dcqcn.rp.rpg_min_dec_fac, r.dcqcn.rp.rpg_gd) == (1019, 50, 11)
    assert r.rdma_bandwidth_percent == 50


def test_derived_defaults_follow_pfc_priority() -> None:
    spec = spec_from_mapping(roce(fabric__roce__pfc_priority=4))
    assert spec.fabric.roce is not None
    assert spec.fabric.roce.lossless == [4]
    assert [q.priority for q in spec.fabric.roce.ecn_marking] == [4]


RULE_CASES = [
    (
        {"fabric.roce.ecn_queues": [{"priority": 3, "min_bytes": 2000000, "max_bytes": 1500000}]},
        Problem(
            "fabric.roce.ecn_queues[0].min_bytes",
            "2000000 is not below max_bytes 1500000; ECN marks from min to max: lower min_bytes"
            " (default 150000) or raise max_bytes (default 1500000)",
        ),
    ),
    (
        {"fabric.roce.pfc_watchdog": {"detection_ms": 400, "restore_ms": 200}},
        Problem(
            "fabric.roce.pfc_watchdog.detection_ms",
            "400 ms is longer than restore_ms 200; a queue would rejoin PFC before a storm could"
            " be seen again: set restore_ms >= 400",
        ),
    ),
    (
        {"fabric.roce.pfc_watchdog": {"enabled": False}},
        Problem(
            "fabric.roce.pfc_watchdog.enabled",
            "PFC without a watchdog lets one stuck receiver pause the fabric (pause storm); set"
            " enabled: true",
        ),
    ),
    (
        {"fabric.roce.lossless_priorities": [3, 4]},
        Problem(
            "fabric.roce.lossless_priorities[1]",
            "priority 4 is lossless but has no PFC (PFC is on pfc_priority 3 only, and only RDMA"
            " is lossless): use [3]",
        ),
    ),
    (
        {"fabric.roce.lossless_priorities": [6, 3]},
        Problem(
            "fabric.roce.lossless_priorities[0]",
            "6 is cnp_priority; CNPs are not lossless: remove it",
        ),
    ),
    (
        {"fabric.roce.cnp_priority": 3},
        Problem(
            "fabric.roce.cnp_priority",
            "3 equals pfc_priority; CNPs need their own strict class, e.g. 6",
        ),
    ),
    (
        {"fabric.roce.ecn_queues": [{"priority": 5}]},
        Problem(
            "fabric.roce.ecn_queues[0].priority",
            "5 is not a lossless priority [3]; mark the lossless queue, e.g. pfc_priority",
        ),
    ),
    (
        {"fabric.roce.ecn_queues": []},
        Problem(
            "fabric.roce.ecn_queues",
            "lossless priority 3 has no ECN marking (ecn is on); add {priority: 3}",
        ),
    ),
    (
        {"fabric.roce.buffer": {"headroom_bytes": 10000}},
        Problem(
            "fabric.roce.buffer.headroom_bytes",
            "10000 holds less than two 9000-byte frames; set at least 18000 or leave it unset",
        ),
    ),
    (
        {"fabric.switches": [{"name": "leaf1", "manage": True, "address": "10.10.0.2"}]},
        Problem(
            "fabric.switches[0].os", "manage: true needs the switch's os: sonic, cumulus or linux"
        ),
    ),
    (
        {
            "fabric.switches": [
                {
                    "name": "leaf1",
                    "os": "linux",
                    "address": "10.10.0.2",
                    "ports": [{"name": "swp1", "host": "gpu9"}, {"name": "swp1"}],
                }
            ]
        },
        Problem("fabric.switches[0].ports[1].name", "'swp1' is listed twice on 'leaf1'"),
    ),
]


@pytest.mark.parametrize("fields, problem", RULE_CASES, ids=[c[1].path for c in RULE_CASES])
def test_rule_names_field_and_fix(fields: dict[str, Any], problem: Problem) -> None:
    data = base("roce")
    for path, value in fields.items():
        set_path(data, path, value)
    assert problem in problems(data)
    with pytest.raises(SpecError):
        spec_from_mapping(data)


def test_port_naming_an_undeclared_host_is_named() -> None:
    data = base("roce")
    set_path(data, "fabric.switches", [{"name": "leaf1", "ports": [{"name": "swp1", "host": "x"}]}])
    assert [p.path for p in problems(data)] == ["fabric.switches[0].ports[0].host"]


def test_every_roce_problem_reported_at_once() -> None:
    data = base("roce")
    set_path(data, "fabric.roce.pfc_watchdog", {"detection_ms": 400, "restore_ms": 200})
    set_path(data, "fabric.roce.cnp_priority", 3)
    set_path(data, "fabric.roce.ecn_queues", [{"priority": 3, "min_bytes": 9_000_000}])
    paths = [p.path for p in problems(data)]
    assert paths == [
        "fabric.roce.cnp_priority",
        "fabric.roce.ecn_queues[0].min_bytes",
        "fabric.roce.pfc_watchdog.detection_ms",
    ]


def test_onyx_is_refused_by_the_spec() -> None:
    data = base("roce")
    set_path(data, "fabric.switches", [{"name": "leaf1", "os": "onyx", "address": "10.10.0.2"}])
    found = problems(data)
    assert [p.path for p in found] == ["fabric.switches[0].os"]
    assert found[0].message == "use one of 'sonic', 'cumulus', 'linux' or 'unmanaged'; got 'onyx'"


def test_managed_switch_on_infiniband_is_refused() -> None:
    data = base("lab")
    set_path(data, "fabric.switches", [{"name": "leaf1", "os": "linux", "manage": True}])
    assert Problem(
        "fabric.switches[0].manage",
        "switch_qos configures RoCE switches; kind is 'infiniband': set manage: false",
    ) in problems(data)


def test_lab_roce_spec_with_linux_switch_loads() -> None:
    data = dict(LAB_ROCE)
    data["fabric"] = dict(
        LAB_ROCE["fabric"],
        switches=[
            {
                "name": "leaf1",
                "os": "linux",
                "manage": True,
                "ssh_user": "root",
                "ports": [{"name": "p-gpu1", "host": "gpu1", "netdev": "eth1"}],
            }
        ],
    )
    spec = spec_from_mapping(data)
    assert spec.fabric.switches[0].manage
    assert spec.fabric.switches[0].ports[0].host == "gpu1"
