"""The GCP component's resource graph under Pulumi mocks, and the specs it refuses."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pulumi
import pytest
import yaml
from conftest import Mocks, build_component, mock_stack

from fabric.cli import main
from fabric.components.gcp import GcpCluster
from fabric.components.target import TARGET_OUTPUTS
from fabric.spec import SKIP_RULES, ClusterSpec, SpecError
from fabric.state import REPO_ROOT

EXAMPLE = REPO_ROOT / "Pulumi.gcp-a3.example.yaml"
SPECS = Path(__file__).parent / "specs"
INSTANCE = "gcp:compute/instance:Instance"
NETWORK = "gcp:compute/network:Network"
SUBNET = "gcp:compute/subnetwork:Subnetwork"


def example() -> dict[str, Any]:
    return yaml.safe_load(EXAMPLE.read_text())["config"]["railyard:cluster"]


def mega() -> dict[str, Any]:
    data = example()
    data["nodes"][0]["instance_type"] = "a3-megagpu-8g"
    data["gcp"]["gpu_subnet_cidrs"] = []  # the component's defaults, one /20 per NIC
    return data


def build(spec: ClusterSpec) -> tuple[Mocks, dict[str, Any]]:
    """Run the component under fresh mocks; return the mocks and its resolved outputs."""
    return build_component(lambda: GcpCluster("c", spec), "gcptest", (*TARGET_OUTPUTS, "networks"))


@pytest.fixture(scope="module")
def a3() -> tuple[Mocks, dict[str, Any]]:
    return build(ClusterSpec.model_validate(example()))


@pytest.fixture(scope="module")
def a3mega() -> tuple[Mocks, dict[str, Any]]:
    return build(ClusterSpec.model_validate(mega()))


def test_a3_high_has_system_nic_and_4_gpu_nics(a3: tuple[Mocks, dict[str, Any]]) -> None:
    mocks, out = a3
    nics = mocks.instance("a3-01")["networkInterfaces"]
    assert len(nics) == 5
    assert [n["subnetwork"] for n in nics] == [
        "c-sys-subnet-id",
        *(f"c-gpu-{i}-subnet-id" for i in range(4)),
    ]
    assert out["hosts"]["a3-01"]["nic_count"] == 5
    assert out["hosts"]["a3-01"]["gpu_nic_mtu"] == 8244


def test_a3_mega_has_system_nic_and_8_gpu_nics(a3mega: tuple[Mocks, dict[str, Any]]) -> None:
    mocks, out = a3mega
    nics = mocks.instance("a3-02")["networkInterfaces"]
    assert len(nics) == 9
    assert len({n["subnetwork"] for n in nics}) == 9
    assert out["hosts"]["a3-02"]["nic_count"] == 9
    assert out["hosts"]["a3-02"]["gpu_nics"] == 8


@pytest.mark.parametrize(("fixture", "gpu_vpcs"), [("a3", 4), ("a3mega", 8)])
def test_gpu_vpcs_carry_mtu_8244(fixture: str, gpu_vpcs: int, request: Any) -> None:
    mocks, out = request.getfixturevalue(fixture)
    networks = {r.inputs["name"]: r.inputs for r in mocks.of(NETWORK)}
    gpu = {k: v for k, v in networks.items() if "-gpu-" in k}
    assert len(gpu) == gpu_vpcs and len(networks) == gpu_vpcs + 1
    assert {v["mtu"] for v in gpu.values()} == {8244}
    assert all(v["autoCreateSubnetworks"] is False for v in networks.values())
    assert len(mocks.of(SUBNET)) == gpu_vpcs + 1
    assert {n["mtu"] for k, n in out["networks"].items() if k.startswith("gpu-")} == {8244}


def test_every_nic_is_gvnic(a3: tuple[Mocks, dict[str, Any]]) -> None:
    mocks, _ = a3
    nic_types = {n["nicType"] for r in mocks.of(INSTANCE) for n in r.inputs["networkInterfaces"]}
    assert nic_types == {"GVNIC"}


def test_gpu_nodes_terminate_on_maintenance_in_compact_placement(
    a3: tuple[Mocks, dict[str, Any]],
) -> None:
    mocks, _ = a3
    (policy,) = mocks.of("gcp:compute/resourcePolicy:ResourcePolicy")
    assert policy.inputs["groupPlacementPolicy"] == {"collocation": "COLLOCATED"}
    assert policy.inputs["region"] == "us-central1"
    for host in ("a3-01", "a3-02"):
        node = mocks.instance(host)
        assert node["scheduling"]["onHostMaintenance"] == "TERMINATE"
        assert node["resourcePolicies"].endswith("/resourcePolicies/a3-high-compact")
        assert node["machineType"] == "a3-highgpu-8g"
        assert node["zone"] == "us-central1-a"
        assert "accessConfigs" not in node["networkInterfaces"][0]


def test_head_node_has_one_nic_and_an_external_address(a3: tuple[Mocks, dict[str, Any]]) -> None:
    mocks, out = a3
    head = mocks.instance("head1")
    assert len(head["networkInterfaces"]) == 1
    assert head["networkInterfaces"][0]["accessConfigs"] == [{}]
    assert "resourcePolicies" not in head and "scheduling" not in head
    assert out["hosts"]["head1"]["nic_count"] == 1


def test_one_allow_internal_rule_per_vpc(a3: tuple[Mocks, dict[str, Any]]) -> None:
    mocks, _ = a3
    rules = {r.inputs["name"]: r.inputs for r in mocks.of("gcp:compute/firewall:Firewall")}
    # sshIngressCidr is not configured here: no SSH rule.
    assert sorted(rules) == sorted(
        ["a3-high-sys-internal", *(f"a3-high-gpu-{i}-internal" for i in range(4))]
    )
    assert rules["a3-high-gpu-0-internal"]["sourceRanges"] == ["172.16.0.0/20"]


def test_inventory_uses_system_nic_addresses(a3: tuple[Mocks, dict[str, Any]]) -> None:
    mocks, out = a3
    hosts = out["inventory"]["all"]["hosts"]
    assert sorted(hosts) == ["a3-01", "a3-02", "head1"]
    assert hosts["a3-01"]["ansible_host"] == out["hosts"]["a3-01"]["private_ip"]
    assert hosts["a3-01"]["ansible_host"].startswith("10.128.0.")


def test_children_are_parented_to_the_component(a3: tuple[Mocks, dict[str, Any]]) -> None:
    mocks, out = a3
    children = [u for u in out["urns"] if not u.endswith("railyard:gcp:Cluster::c")]
    assert len(children) == len(mocks.resources) - 1
    pins = [u for u in children if "$pulumi-python:dynamic:Resource::" in u]
    assert len(pins) == 3  # one host key pin per instance
    assert all("::railyard:gcp:Cluster$gcp:" in urn for urn in children if urn not in pins)
    assert all(
        "::railyard:gcp:Cluster$pulumi-python:dynamic:Resource::c-hostkey-" in u for u in pins
    )


def test_compute_nodes_are_reached_through_the_head_node(
    a3: tuple[Mocks, dict[str, Any]],
) -> None:
    _, out = a3
    inventory = out["inventory"]["all"]
    head_public = out["hosts"]["head1"]["public_ip"]
    assert head_public and head_public != out["hosts"]["head1"]["private_ip"]
    assert f"-W %h:%p railyard@{head_public}'" in inventory["vars"]["ansible_ssh_common_args"]
    assert inventory["hosts"]["a3-02"] == {"ansible_host": out["hosts"]["a3-02"]["private_ip"]}
    assert inventory["hosts"]["head1"]["ansible_host"] == head_public


def test_host_keys_come_from_guest_attributes(a3: tuple[Mocks, dict[str, Any]]) -> None:
    mocks, out = a3
    pins = {r.inputs["host"]: r.inputs for r in mocks.of("pulumi-python:dynamic:Resource")}
    assert sorted(pins) == ["a3-01", "a3-02", "head1"]
    for host, pin in pins.items():
        assert pin["source"] == {
            "cloud": "gcp",
            "name": host,
            "zone": "us-central1-a",
            "project": "my-gpu-project",
        }
        assert mocks.instance(host)["metadata"]["enable-guest-attributes"] == "TRUE"
    assert pins["a3-01"]["jump"] == {
        "address": pins["head1"]["address"],
        "user": "railyard",
        "port": 22,
    }
    assert pins["head1"]["address"] == out["hosts"]["head1"]["public_ip"]


def test_verification_plan_of_the_example_has_gpu_nic_checks(
    a3: tuple[Mocks, dict[str, Any]],
) -> None:
    from fabric.verify.context import inventory_groups
    from fabric.verify.plan import CheckPlan

    _, out = a3
    groups = inventory_groups(out["inventory"])
    plan = CheckPlan(spec=ClusterSpec.model_validate(example()), hosts=groups["all"], groups=groups)
    assert plan.slurm_nodes == ["a3-01", "a3-02"]
    # fabric checks derived from the catalog (issue 13 part 2): 4 GPU NICs per a3-highgpu-8g
    assert [h.host for h in plan.gpu_nic_hosts] == ["a3-01", "a3-02"]


def test_wrong_subnet_count_refused_before_any_resource() -> None:
    valid = ClusterSpec.model_validate(example())
    gcp = valid.gcp.model_copy(update={"gpu_subnet_cidrs": valid.gcp.gpu_subnet_cidrs[:2]})  # type: ignore[union-attr]
    mocks = mock_stack("gcptest")
    with pytest.raises(SpecError) as error:
        GcpCluster("c", valid.model_copy(update={"gcp": gcp}))
    assert "has 4 GPU NICs" in dict(error.value.problems)["gcp.gpu_subnet_cidrs"]
    assert mocks.resources == []


def test_head_without_machine_type_refused() -> None:
    data = example()
    del data["nodes"][1]["instance_type"]
    spec = ClusterSpec.model_validate(data, context={SKIP_RULES: True})  # rules bypassed
    mocks = mock_stack("gcptest")
    with pytest.raises(SpecError, match=r"nodes\[1\]\.instance_type"):
        GcpCluster("c", spec)
    assert mocks.resources == []


def test_unknown_machine_type_refused_by_the_spec() -> None:
    data = example()
    data["nodes"][0]["instance_type"] = "a2-highgpu-8g"
    with pytest.raises(ValueError, match=r"nodes\[0\]\.instance_type"):
        ClusterSpec.model_validate(data)


@pytest.fixture()
def ssh_config() -> Any:
    pulumi.runtime.set_all_config(
        {
            "railyard:sshIngressCidr": "203.0.113.0/24",
            "railyard:sshPublicKey": "ssh-ed25519 AAAAexample railyard",
        },
        [],
    )
    yield
    pulumi.runtime.set_all_config({}, [])


def test_ssh_rule_and_key_from_config(ssh_config: None) -> None:
    mocks, _ = build(ClusterSpec.model_validate(example()))
    rules = {r.inputs["name"]: r.inputs for r in mocks.of("gcp:compute/firewall:Firewall")}
    ssh = rules["a3-high-head-ssh"]
    assert ssh["sourceRanges"] == ["203.0.113.0/24"]
    assert ssh["targetTags"] == ["railyard-head"]
    assert ssh["allows"] == [{"protocol": "tcp", "ports": ["22"]}]
    assert mocks.instance("head1")["tags"] == ["railyard-head"]
    assert mocks.instance("a3-01")["metadata"] == {
        "enable-guest-attributes": "TRUE",
        "ssh-keys": "railyard:ssh-ed25519 AAAAexample railyard",
    }


# --- validate refuses what the component refuses -----------------------------------------


def refusals(data: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Any:
    """The problems ``python -m fabric validate`` reports for ``data``, and the component's."""
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(data))
    code = main(["validate", "--json", "--spec", str(path)])
    found = [(p["path"], p["message"]) for p in json.loads(capsys.readouterr().out)["problems"]]
    mock_stack("gcptest")
    with pytest.raises(SpecError) as error:
        GcpCluster("c", ClusterSpec.model_validate(data, context={SKIP_RULES: True}))
    return code, found, [(p.path, p.message) for p in error.value.problems]


def _no_head(data: dict[str, Any]) -> None:
    del data["nodes"][1]
    data["slurm"].pop("controller", None)


@pytest.mark.parametrize(
    ("change", "path", "words"),
    [
        (
            lambda d: d["nodes"][1].pop("instance_type"),
            "nodes[1].instance_type",
            "set a machine type, e.g. n2-standard-8",
        ),
        (
            lambda d: d["gcp"].update(zone="europe-west4-a"),
            "gcp.zone",
            "'europe-west4-a' is not a zone of region us-central1",
        ),
        (_no_head, "nodes", "declare a head node, e.g. - {names: head1, role: login, "),
        (
            lambda d: d["nodes"][1].update(names="Head1"),
            "nodes[1].names",
            "'Head1' cannot name a Compute Engine instance",
        ),
        (
            lambda d: d["gcp"].update(network_prefix="A3_net"),
            "gcp.network_prefix",
            "'A3_net': use lowercase letters, digits and hyphens",
        ),
        (
            lambda d: d.update(access={"bastion": {"host": "a3-1"}}),
            "access.bastion.host",
            "a3-1 is a compute node",
        ),
    ],
    ids=[
        "head-without-machine-type",
        "zone-outside-region",
        "no-head-node",
        "instance-name",
        "network-prefix",
        "bastion-compute-node",
    ],
)
def test_validate_refuses_what_the_component_refuses(
    change: Any, path: str, words: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = yaml.safe_load((SPECS / "valid" / "gcp.yaml").read_text())
    change(data)
    code, validate, component = refusals(data, tmp_path, capsys)
    assert (code, validate) == (1, component)
    assert words in dict(validate)[path]
