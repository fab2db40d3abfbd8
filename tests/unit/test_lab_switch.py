"""A RoCE lab with its switch: the plan, the program's resources (Pulumi mocks) and the
switch resource's diff. The wiring itself runs for real in
``tests/integration/test_qos_change_roce.py`` and ``test_roce_switch.py``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pulumi
import pytest
from conftest import Mocks

from fabric.lab.plan import LabPlanError, plan_lab
from fabric.spec import SKIP_RULES, ClusterSpec
from fabric.targets.lab.dynamic_switch import LabSwitchProvider

HCA = {"device": "mlx5_0", "link_layer": "Ethernet", "netdev": "fab0"}
LEAF = {
    "name": "leaf1",
    "os": "linux",
    "manage": True,
    "ssh_user": "root",
    "ports": [{"name": "swp1", "host": "q1"}, {"name": "swp2", "host": "q2"}],
}


def spec_data(switch: dict[str, Any] | None = LEAF, **lab: Any) -> dict[str, Any]:
    return {
        "name": "rsw",
        "target": "lab",
        "nodes": [
            {"names": "q[1-2]", "role": "compute", "hcas": [HCA]},
            {"names": "qctl", "role": "controller"},
        ],
        "fabric": {
            "kind": "roce",
            "mtu": 9000,
            "roce": {},
            "switches": [switch] if switch else [],
        },
        "management": {"subnet": "198.18.60.0/24"},
        "lab": {"roce_subnet": "198.18.61.0/24", **lab},
    }


def plan(data: dict[str, Any]) -> Any:
    spec = ClusterSpec.model_validate(data, context={SKIP_RULES: True})
    return plan_lab(spec, "s", "railyard-s", "/tmp/x")


def test_plan_wires_one_port_per_roce_node() -> None:
    switch = plan(spec_data()).switch
    assert switch is not None and switch.container == "railyard-s-leaf1"
    assert [(p.port, p.host, p.netdev) for p in switch.ports] == [
        ("swp1", "q1", "fab0"),
        ("swp2", "q2", "fab0"),
    ]


def test_without_a_managed_switch_the_fabric_stays_a_bridge() -> None:
    assert plan(spec_data(None)).switch is None
    assert plan(spec_data(LEAF, datacenter=True)).switch is None


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"os": "sonic"}, r"fabric.switches\[0\].os: the lab builds Linux switches only"),
        ({"ssh_user": "admin"}, r"fabric.switches\[0\].ssh_user: .*set ssh_user: root"),
        ({"name": "q1"}, r"fabric.switches\[0\].name: 'q1' is also a node"),
        (
            {"ports": [{"name": "swp1", "host": "q1"}]},
            r"fabric.switches\[0\].ports: RoCE node\(s\) \['q2'\] have no port on leaf1",
        ),
        (
            {"ports": [{"name": "swp1", "host": "q1", "netdev": "eth0"}]},
            r"ports\[0\].netdev: eth0 is a lab node's management interface",
        ),
        (
            {"ports": [{"name": "swp1", "host": "q1"}, {"name": "swp2", "host": "q1"}]},
            r"ports\[1\].host: q1 already has a port",
        ),
    ],
)
def test_a_switch_the_lab_cannot_build_is_named(change: dict[str, Any], message: str) -> None:
    with pytest.raises(LabPlanError, match=message):
        plan(spec_data({**LEAF, **change}))


def test_two_managed_switches_are_refused() -> None:
    data = spec_data()
    data["fabric"]["switches"].append({**LEAF, "name": "leaf2", "ports": []})
    with pytest.raises(LabPlanError, match="the lab builds one switch, 2 are managed"):
        plan(data)


def test_diff_replaces_on_the_container_and_rewires_on_links() -> None:
    olds = {
        "config": {"image": "a"},
        "address": "198.18.60.12",
        "ssh_user": "root",
        "login_private_key": "k",
        "links": [{"port": "swp1"}],
        "mtu": 9000,
        "node_ids": {"c1": "id1"},
    }
    provider = LabSwitchProvider()
    assert not provider.diff("x", olds, dict(olds)).changes
    rewire = provider.diff("x", olds, {**olds, "node_ids": {"c1": "id2"}})
    assert rewire.changes and not rewire.replaces
    assert not provider.diff("x", olds, {**olds, "links": []}).replaces
    replace = provider.diff("x", olds, {**olds, "config": {"image": "b"}})
    assert replace.replaces == ["config"] and replace.delete_before_replace


@pytest.fixture
def mocks(mock_pulumi: Callable[..., Mocks], state_root: Path) -> Mocks:
    return mock_pulumi("s")


@pulumi.runtime.test
def test_program_makes_the_switch_instead_of_a_fabric_network(mocks: Mocks) -> pulumi.Output:
    from fabric.program import cluster_component

    cluster = cluster_component("lab", ClusterSpec.model_validate(spec_data()))

    def check(v: list[Any]) -> None:
        inventory, switches = v
        made = {r.name: dict(r.inputs) for r in mocks.resources}
        assert "lab-fabric" not in made  # no podman bridge for the fabric
        sw = made["lab-leaf1"]
        assert sw["config"]["networks"] == {"railyard-s-mgmt": sw["address"]}
        assert sw["config"]["capabilities"] == ["NET_ADMIN"]
        assert sw["mtu"] == 9000
        assert [
            (link["port"], link["node_container"], link["address"]) for link in sw["links"]
        ] == [
            ("swp1", "railyard-s-q1", "198.18.61.10/24"),
            ("swp2", "railyard-s-q2", "198.18.61.11/24"),
        ]
        for node in ("q1", "q2"):
            config = made[f"lab-{node}"]["config"]
            assert list(config["networks"]) == ["railyard-s-mgmt"]
            assert config["capabilities"] == ["NET_ADMIN"]
        assert "capabilities" not in made["lab-qctl"]["config"]
        assert "lab-leaf1-host-key" in made
        known = made["lab-known-hosts"]["content"]
        assert any(line.startswith(f"leaf1,{sw['address']} ") for line in known.splitlines())
        group = inventory["all"]["children"]["switches"]["hosts"]
        assert group["leaf1"]["ansible_host"] == sw["address"]
        assert group["leaf1"]["switch_qos_apply"] is True
        assert switches == group
        assert "leaf1" not in inventory["all"]["hosts"]

    assert cluster.lab_switch is not None
    done = pulumi.Output.all(cluster.inventory, cluster.switches, cluster.lab_switch.id)
    return done.apply(lambda v: check(v[:2]))


def test_handoff_cleanup_removes_the_rendered_switch_configurations(tmp_path: Path) -> None:
    from fabric.handoff.runner import remove_handoff_files
    from fabric.state import StateLayout

    layout = StateLayout("s", tmp_path)
    rendered = layout.switch_renders / "leaf1" / "linux_qos.json"
    rendered.parent.mkdir(parents=True)
    rendered.write_text("{}")
    removed = remove_handoff_files("s", tmp_path)
    assert rendered in removed
    assert not (layout.dir / "rendered").exists()
