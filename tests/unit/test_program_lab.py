"""The lab program's resource graph for the default lab spec, with Pulumi mocks."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pulumi
import pytest
import yaml
from conftest import Mocks

from fabric.lab.plan import LabPlanError, allocate, plan_lab
from fabric.spec import SKIP_RULES, ClusterSpec, SpecError, spec_from_mapping
from fabric.state import REPO_ROOT
from fabric.targets.lab.dynamic_lab import AddressPoolProvider

LAB = yaml.safe_load((REPO_ROOT / "Pulumi.lab.yaml").read_text())["config"]["railyard:cluster"]


@pytest.fixture
def mocks(mock_pulumi: Callable[..., Mocks], state_root: Path) -> Mocks:
    return mock_pulumi("lab")


def created(mocks: Mocks) -> list[tuple[str, str, dict[str, Any]]]:
    """(type, name, inputs) of every resource registered."""
    return [(r.typ, r.name, dict(r.inputs)) for r in mocks.resources]


@pulumi.runtime.test
def test_lab_graph(mocks: Mocks) -> pulumi.Output:
    from fabric.program import cluster_component

    cluster = cluster_component("lab", ClusterSpec.model_validate(LAB))

    def check(inventory: dict[str, Any]) -> None:
        names = [name for typ, name, _ in created(mocks) if typ == "pulumi-python:dynamic:Resource"]
        kinds = Counter(
            name.split("-", 1)[1].rsplit("-", 1)[0] if name.endswith("host-key") else name
            for name in names
        )
        components = [name for typ, name, _ in created(mocks) if typ == "railyard:lab:LabCluster"]
        assert components == ["lab"]
        nodes = [f"lab-{h}" for h in ClusterSpec.model_validate(LAB).hosts]
        assert set(nodes) <= set(names)
        assert sum(1 for n in names if n.endswith("-host-key")) == 11
        for single in (
            "lab-image",
            "lab-mgmt",
            "lab-mgmt-addresses",
            "lab-bmc",
            "lab-login-key",
            "lab-login-key-file",
            "lab-known-hosts",
            "lab-ibsim-net",
            "lab-ibsim",
            "lab-ibsim-reaper",
            "lab-bmc-emulator",
            "lab-inventory",
            "lab-lab-json",
        ):
            assert names.count(single) == 1, single
        assert "lab-fabric" not in names  # InfiniBand spec: no RoCE network
        assert len(names) == 11 + 11 + 13, kinds  # nodes + host keys + the thirteen singletons
        assert sorted(inventory["all"]["children"]["subnet_managers"]["hosts"]) == ["sm1", "sm2"]
        containers = {i["config"]["container"] for t, n, i in created(mocks) if n in nodes}
        assert containers == {f"railyard-lab-{h}" for h in ClusterSpec.model_validate(LAB).hosts}

    return pulumi.Output.all(cluster.inventory, cluster.bmc_endpoints).apply(lambda v: check(v[0]))


@pulumi.runtime.test
def test_lab_node_environment_points_at_ibsim(mocks: Mocks) -> pulumi.Output:
    from fabric.program import cluster_component

    cluster = cluster_component("lab", ClusterSpec.model_validate(LAB))

    def check(_: Any) -> None:
        configs = {n: i["config"] for t, n, i in created(mocks) if n in ("lab-gpu01", "lab-ctl1")}
        env = configs["lab-gpu01"]["environment"]
        assert env["IBSIM_SERVER_NAME"] == "198.18.0.1"
        assert env["IBSIM_SERVER_PORT"] == "7070"
        assert env["SIM_HOST"] == "gpu01:mlx5_0"
        assert configs["lab-ctl1"]["environment"] == {}  # no HCA: no simulated fabric
        assert configs["lab-gpu01"]["networks"] == {"railyard-lab-mgmt": "198.18.0.10"}

    return cluster.bmc_endpoints.apply(check)


def test_switch_sm_with_configure_is_started_by_the_lab(mocks: Mocks) -> None:
    """``mode: switch, configure: true``: the lab runs that switch's SM (OpenSM attached to
    the ibsim switch), before the nodes; no managed SM, so no subnet_managers host. Judged
    once the program's registrations are done (the inventory does not wait for the SM)."""
    from fabric.program import cluster_component

    data = yaml.safe_load(yaml.safe_dump(LAB))
    data["fabric"]["infiniband"]["subnet_managers"] = [
        {"mode": "switch", "switch": "leaf01", "configure": True, "priority": 15},
        {"mode": "switch", "switch": "leaf02", "priority": 10},
    ]
    seen: dict[str, Any] = {}

    @pulumi.runtime.test
    def program() -> pulumi.Output:
        cluster = cluster_component("lab", spec_from_mapping(data))
        return cluster.inventory.apply(lambda inventory: seen.update(inventory=inventory))

    program()
    sms = {n: i for t, n, i in created(mocks) if n.startswith("lab-switch-sm-")}
    assert list(sms) == ["lab-switch-sm-leaf01"]
    sm = sms["lab-switch-sm-leaf01"]
    assert (sm["switch"], sm["priority"], sm["server"], sm["port"]) == (
        "leaf01",
        15,
        "198.18.0.1",
        7070,
    )
    assert (sm["routing_engine"], sm["sweep_interval"]) == ("ftree", 10)
    assert seen["inventory"]["all"]["children"]["subnet_managers"]["hosts"] == {}


@pulumi.runtime.test
def test_lab_addresses_flow_from_the_pool(mocks: Mocks) -> pulumi.Output:
    from fabric.program import cluster_component

    spec = ClusterSpec.model_validate(LAB)
    cluster = cluster_component("lab", spec)

    def check(hosts: list[dict[str, Any]]) -> None:
        pool = next(i for _, n, i in created(mocks) if n == "lab-mgmt-addresses")
        assert pool["hosts"] == list(spec.hosts) and pool["subnet"] == "198.18.0.0/24"
        expected = allocate({}, list(spec.hosts), "198.18.0.0/24", "198.18.0.1")
        # a fresh pool gives the spec-order addresses the lab had before: an existing stack keeps its nodes
        assert expected == {h: f"198.18.0.{10 + i}" for i, h in enumerate(spec.hosts)}
        assert {h["name"]: h["address"] for h in hosts} == expected
        nodes = {n: i for _, n, i in created(mocks) if n.removeprefix("lab-") in spec.hosts}
        assert {n.removeprefix("lab-"): i["address"] for n, i in nodes.items()} == expected
        lab_json = next(i for _, n, i in created(mocks) if n == "lab-lab-json")["content"]
        assert {n["name"]: n["address"] for n in yaml.safe_load(lab_json)["nodes"]} == expected

    return pulumi.Output.all(cluster.hosts, cluster.bmc_endpoints).apply(lambda v: check(v[0]))


def test_pool_check_keeps_previous_assignment_and_frees_removed() -> None:
    news = {
        "network": "n",
        "subnet": "198.18.30.0/24",
        "gateway": "198.18.30.1",
        "hosts": ["a", "c"],
        "fixed": {},
        "field": "management.addresses",
        "assignment": None,
    }
    olds = {**news, "hosts": ["a", "b"], "assignment": {"a": "198.18.30.11", "b": "198.18.30.10"}}
    result = AddressPoolProvider().check(olds, news)
    assert result.failures == []
    assert result.inputs["assignment"] == {"a": "198.18.30.11", "c": "198.18.30.12"}
    diff = AddressPoolProvider().diff("id", olds, result.inputs)
    assert diff.changes and diff.replaces == []  # an update in place, never a replace


def test_pool_check_reports_a_bad_pin_as_a_failure() -> None:
    news = {
        "network": "n",
        "subnet": "198.18.30.0/24",
        "gateway": "198.18.30.1",
        "hosts": ["a"],
        "fixed": {"a": "198.18.30.1"},
        "field": "management.addresses",
        "assignment": None,
    }
    failures = AddressPoolProvider().check({}, news).failures
    assert [f.property for f in failures] == ["hosts"] and "management.addresses.a" in failures[
        0
    ].reason


def test_plan_refuses_subnet_outside_lab_range() -> None:
    data = {**LAB, "management": {"subnet": "10.0.0.0/24"}}
    with pytest.raises(SpecError, match="management.subnet.*198.18.0.0/15"):
        spec_from_mapping(data)  # validate refuses it first (fabric.spec.networks)
    unchecked = ClusterSpec.model_validate(data, context={SKIP_RULES: True})
    with pytest.raises(LabPlanError, match="management.subnet.*198.18.0.0/15"):
        plan_lab(unchecked, "lab", "railyard-lab", "/tmp/x")


def test_plan_roce_adds_fabric_network_at_spec_mtu() -> None:
    data = {**LAB, "fabric": {"kind": "roce", "mtu": 9000, "topology": LAB["fabric"]["topology"]}}
    data["nodes"] = [
        {**g, "hcas": [{**h, "link_layer": "Ethernet"} for h in g.get("hcas", [])]}
        for g in LAB["nodes"]
    ]
    plan = plan_lab(ClusterSpec.model_validate(data), "lab", "railyard-lab", "/tmp/x")
    assert (
        plan.fabric is not None
        and plan.fabric.mtu == 9000
        and plan.fabric.subnet == "198.18.2.0/24"
    )
    assert not plan.ibsim
    assert (
        allocate({}, [n.name for n in plan.nodes], plan.fabric.subnet, plan.fabric.gateway)["gpu01"]
        == "198.18.2.10"
    )


def _roce(lab: dict | None = None) -> dict:
    data = {**LAB, "fabric": {"kind": "roce", "mtu": 9000, "topology": LAB["fabric"]["topology"]}}
    data["nodes"] = [
        {**g, "hcas": [{**h, "link_layer": "Ethernet"} for h in g.get("hcas", [])]}
        for g in LAB["nodes"]
    ]
    if lab is not None:
        data["lab"] = lab
    return data


def test_plan_roce_subnet_from_the_spec() -> None:
    plan = plan_lab(
        ClusterSpec.model_validate(_roce({"roce_subnet": "198.19.140.0/24"})),
        "lab",
        "railyard-lab",
        "/tmp/x",
    )
    assert plan.fabric is not None and plan.fabric.subnet == "198.19.140.0/24"


def test_plan_roce_subnet_outside_lab_range_names_the_field() -> None:
    with pytest.raises(
        LabPlanError, match=r"lab.roce_subnet: 10.1.0.0/24 is outside the lab range"
    ):
        plan_lab(
            ClusterSpec.model_validate(
                _roce({"roce_subnet": "10.1.0.0/24"}), context={SKIP_RULES: True}
            ),
            "lab",
            "railyard-lab",
            "/tmp/x",
        )
