"""The cluster model: each fact of a spec computed once, the same facts the check plan and the
hand-off read."""

from __future__ import annotations

from fabric.handoff.health import health_configs
from fabric.model.cluster import ClusterModel
from fabric.spec import load_spec
from fabric.state import REPO_ROOT
from fabric.verify.plan import CheckPlan

LAB = REPO_ROOT / "Pulumi.lab.yaml"
GCP = REPO_ROOT / "Pulumi.gcp-a3-high.example.yaml"


def test_each_fact_is_computed_once() -> None:
    model = ClusterModel(load_spec(LAB))
    assert model.expected_graph is model.expected_graph
    assert model.hca_ports is model.hca_ports and model.ib_ports is model.ib_ports


def test_the_model_and_the_check_plan_see_the_same_ports() -> None:
    spec = load_spec(LAB)
    model, plan = ClusterModel(spec), CheckPlan(spec=spec, hosts=list(spec.hosts))
    assert model.hca_ports == plan.hca_ports and model.ib_ports == plan.ib_ports
    assert len(model.ib_ports) == 10 and all(p.switch for p in model.ib_ports)
    assert model.ib_mtu == plan.ib_mtu == 2048  # the spec's 4096, capped by ibsim in the lab


def test_a_cloud_spec_has_no_fabric_graph_and_a_health_config_without_ports() -> None:
    model = ClusterModel(load_spec(GCP))
    assert model.declared_graph is None and model.expected_graph is None
    configs = health_configs(model)  # the instance type's GPU NICs instead (issue 27)
    assert model.ib_ports == [] and configs and all(c["ports"] == [] for c in configs.values())
    assert all("gpu_nics" in c for c in configs.values())


def test_health_configs_read_the_model() -> None:
    model = ClusterModel(load_spec(LAB))
    configs = health_configs(model)
    assert set(configs) == {p.host for p in model.ib_ports} & set(
        model.spec.hosts_with_role("compute")
    )
    ports = [port for config in configs.values() for port in config["ports"]]
    assert {(p["device"], p["mtu"]) for p in ports} == {("mlx5_0", model.ib_mtu)}
