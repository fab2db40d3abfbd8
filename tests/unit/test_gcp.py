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
from fabric.components.target import TARGET_OUTPUTS
from fabric.spec import SKIP_RULES, ClusterSpec, SpecError
from fabric.state import REPO_ROOT
from fabric.targets.gcp.component import GcpCluster

EXAMPLE = REPO_ROOT / "Pulumi.gcp-a3-high.example.yaml"
SPECS = Path(__file__).parent / "specs"
INSTANCE = "gcp:compute/instance:Instance"
NETWORK = "gcp:compute/network:Network"
SUBNET = "gcp:compute/subnetwork:Subnetwork"


def cloud_outputs(self: Mocks, args: pulumi.runtime.MockResourceArgs, count: int) -> dict[str, Any]:
    """Mocks' outputs plus what Filestore, Managed Lustre and a service account report once
    made: an address, a mount point (as the API writes it), an email."""
    outs = _MOCK_OUTPUTS(self, args, count)
    if args.typ == "gcp:filestore/instance:Instance":
        outs["networks"] = [{**n, "ipAddresses": [f"10.0.{count}.2"]} for n in outs["networks"]]
    elif args.typ == "gcp:lustre/instance:Instance":
        outs["mountPoint"] = f"10.0.{count}.3@tcp:/{args.inputs['filesystem']}"
    elif args.typ == "gcp:serviceaccount/account:Account":
        outs["email"] = (
            f"{args.inputs['accountId']}@{args.inputs['project']}.iam.gserviceaccount.com"
        )
    return outs


_MOCK_OUTPUTS = Mocks.outputs


@pytest.fixture(scope="module", autouse=True)
def gcp_outputs() -> Any:
    """Every test of the module sees the outputs of :func:`cloud_outputs`."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Mocks, "outputs", cloud_outputs)
        yield


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
    private = out["hosts"]["a3-02"]["private_ip"]
    assert inventory["hosts"]["a3-02"] == {
        "ansible_host": private,
        "slurm_node_addr": private,
        "cluster_hosts_address_var": "slurm_node_addr",
        "storage_shared": inventory["hosts"]["head1"]["storage_shared"],
    }
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
    assert [h.host for h in plan.params("gpu_nic_hosts")] == ["a3-01", "a3-02"]


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
    metadata = mocks.instance("a3-01")["metadata"]
    assert metadata.pop("user-data").startswith("#cloud-config\nhostname: a3-01\n")
    assert metadata == {
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


def test_cloud_nat_and_private_google_access_by_default(a3: tuple[Mocks, dict[str, Any]]) -> None:
    mocks, _ = a3
    (router,) = mocks.of("gcp:compute/router:Router")
    (nat,) = mocks.of("gcp:compute/routerNat:RouterNat")
    assert router.inputs["network"] == "c-sys-id"
    assert router.inputs["region"] == "us-central1"
    assert nat.inputs["router"] == router.inputs["name"]
    assert nat.inputs["natIpAllocateOption"] == "AUTO_ONLY"
    assert nat.inputs["sourceSubnetworkIpRangesToNat"] == "ALL_SUBNETWORKS_ALL_IP_RANGES"
    subnets = mocks.of(SUBNET)
    assert len(subnets) == 5
    assert all(s.inputs["privateIpGoogleAccess"] is True for s in subnets)


def test_no_cloud_nat_with_a_proxy() -> None:
    data = example()
    data["gcp"]["egress"] = {"mode": "proxy", "proxy": "http://proxy.example:3128"}
    mocks, _ = build(ClusterSpec.model_validate(data))
    assert not mocks.of("gcp:compute/routerNat:RouterNat")
    assert not mocks.of("gcp:compute/router:Router")
    data = yaml.safe_load(mocks.instance("a3-01")["metadata"]["user-data"])
    assert data["apt"]["http_proxy"] == "http://proxy.example:3128"


def test_instances_are_named_by_the_declared_hosts(a3: tuple[Mocks, dict[str, Any]]) -> None:
    mocks, _ = a3
    for inst in mocks.of(INSTANCE):
        host = inst.inputs["name"]
        assert inst.name == f"c-{host}"
        data = yaml.safe_load(inst.inputs["metadata"]["user-data"])
        assert data["hostname"] == data["fqdn"] == host
        assert data["preserve_hostname"] is False
    assert sorted(i.inputs["name"] for i in mocks.of(INSTANCE)) == ["a3-01", "a3-02", "head1"]


def capacity(**gcp: Any) -> dict[str, Any]:
    data = example()
    data["gcp"].update(gcp)
    return data


@pytest.mark.parametrize(
    ("settings", "scheduling", "affinity"),
    [
        (
            {},
            {
                "onHostMaintenance": "TERMINATE",
                "automaticRestart": True,
                "provisioningModel": "STANDARD",
            },
            {"type": "NO_RESERVATION"},
        ),
        (
            {"provisioning": "reservation", "reservation": "a3-res"},
            {
                "onHostMaintenance": "TERMINATE",
                "automaticRestart": True,
                "provisioningModel": "STANDARD",
            },
            {
                "type": "SPECIFIC_RESERVATION",
                "specificReservation": {
                    "key": "compute.googleapis.com/reservation-name",
                    "values": ["a3-res"],
                },
            },
        ),
        (
            {"provisioning": "flex-start", "max_run_duration": 604800},
            {
                "onHostMaintenance": "TERMINATE",
                "automaticRestart": False,
                "provisioningModel": "FLEX_START",
                "instanceTerminationAction": "DELETE",
                "maxRunDuration": {"seconds": 604800},
            },
            {"type": "NO_RESERVATION"},
        ),
        (
            {"provisioning": "spot"},
            {
                "onHostMaintenance": "TERMINATE",
                "automaticRestart": False,
                "preemptible": True,
                "provisioningModel": "SPOT",
                "instanceTerminationAction": "STOP",
            },
            {"type": "NO_RESERVATION"},
        ),
    ],
    ids=["standard", "reservation", "flex-start", "spot"],
)
def test_provisioning_models(
    settings: dict[str, Any], scheduling: dict[str, Any], affinity: dict[str, Any]
) -> None:
    mocks, _ = build(ClusterSpec.model_validate(capacity(**settings)))
    compute = mocks.instance("a3-01")
    assert compute["scheduling"] == scheduling
    assert compute["reservationAffinity"] == affinity
    head = mocks.instance("head1")
    assert "scheduling" not in head and "reservationAffinity" not in head


@pytest.mark.parametrize(
    ("settings", "path", "words"),
    [
        ({"provisioning": "reservation"}, "gcp.reservation", "needs the reservation's name"),
        ({"reservation": "a3-res"}, "gcp.reservation", "provisioning is standard"),
        (
            {"provisioning": "flex-start", "reservation": "a3-res", "max_run_duration": 3600},
            "gcp.reservation",
            "DWS flex-start cannot use reservations",
        ),
        ({"provisioning": "flex-start"}, "gcp.max_run_duration", "needs the VMs' run time"),
        (
            {"provisioning": "spot", "max_run_duration": 3600},
            "gcp.max_run_duration",
            "flex-start only",
        ),
    ],
)
def test_provisioning_refused_before_any_resource(
    settings: dict[str, Any], path: str, words: str
) -> None:
    with pytest.raises(ValueError) as error:
        ClusterSpec.model_validate(capacity(**settings))
    assert path in str(error.value) and words in str(error.value)
    mocks = mock_stack("gcptest")
    spec = ClusterSpec.model_validate(capacity(**settings), context={SKIP_RULES: True})
    with pytest.raises(SpecError) as refused:
        GcpCluster("c", spec)
    assert words in dict(refused.value.problems)[path]
    assert mocks.resources == []


def test_flex_start_run_duration_is_bounded() -> None:
    with pytest.raises(ValueError, match="max_run_duration"):
        ClusterSpec.model_validate(capacity(provisioning="flex-start", max_run_duration=604801))


# --- each A3 kind as Cluster Toolkit's blueprint builds it --------------------------------

ROOT = Path(__file__).parents[2]


def kind_example(kind: str) -> tuple[Mocks, dict[str, Any]]:
    path = ROOT / f"Pulumi.gcp-a3-{kind}.example.yaml"
    data = yaml.safe_load(path.read_text())["config"]["railyard:cluster"]
    return build(ClusterSpec.model_validate(data))


@pytest.mark.parametrize(("kind", "gpu_nets"), [("high", 4), ("mega", 8)])
def test_a3_high_and_mega_as_their_blueprints(kind: str, gpu_nets: int) -> None:
    """sysnet at MTU 8244 with Private Google Access, one gVNIC VPC per GPU NIC (multivpc)."""
    mocks, out = kind_example(kind)
    nets = {r.inputs["name"]: r.inputs for r in mocks.of(NETWORK)}
    assert nets[f"a3-{kind}-sys"]["mtu"] == 8244
    gpu = [n for name, n in nets.items() if "-gpu-" in name]
    assert len(gpu) == gpu_nets and all("networkProfile" not in n for n in gpu)
    nics = mocks.instance("a3-01")["networkInterfaces"]
    assert len(nics) == 1 + gpu_nets
    assert {n["nicType"] for n in nics} == {"GVNIC"}
    assert out["hosts"]["a3-01"]["nic_count"] == 1 + gpu_nets


def test_a3_ultra_as_its_blueprint() -> None:
    """Two gVNIC VPCs at 8896, one VPC with the zone's RoCE profile holding 8 subnets, one
    MRDMA NIC per subnet, no firewall on the RDMA VPC, no compact placement, a reservation."""
    mocks, out = kind_example("ultra")
    nets = {r.inputs["name"]: r.inputs for r in mocks.of(NETWORK)}
    assert sorted(nets) == ["a3-ultra-net-1", "a3-ultra-rdma", "a3-ultra-sys"]
    assert nets["a3-ultra-sys"]["mtu"] == nets["a3-ultra-net-1"]["mtu"] == 8896
    rdma = nets["a3-ultra-rdma"]
    assert rdma["mtu"] == 8896 and rdma["routingMode"] == "REGIONAL"
    assert rdma["networkProfile"] == (
        "https://www.googleapis.com/compute/beta/projects/my-gpu-project/global/"
        "networkProfiles/europe-west1-b-vpc-roce"
    )
    rdma_subnets = [s.inputs for s in mocks.of(SUBNET) if s.inputs["network"] == "c-rdma-id"]
    assert [s["ipCidrRange"] for s in rdma_subnets] == [
        f"192.168.{128 + 8 * i}.0/21" for i in range(8)
    ]
    firewalls = [f.inputs["network"] for f in mocks.of("gcp:compute/firewall:Firewall")]
    assert "c-rdma-id" not in firewalls and "c-net-1-id" in firewalls
    nics = mocks.instance("a3-01")["networkInterfaces"]
    assert [n["nicType"] for n in nics] == ["GVNIC", "GVNIC", *["MRDMA"] * 8]
    assert [n["subnetwork"] for n in nics[:2]] == ["c-sys-subnet-id", "c-net-1-subnet-id"]
    assert [n["subnetwork"] for n in nics[2:]] == [f"c-rdma-{i}-subnet-id" for i in range(8)]
    assert out["hosts"]["a3-01"]["nic_count"] == 10
    assert not mocks.of("gcp:compute/resourcePolicy:ResourcePolicy")
    affinity = mocks.instance("a3-01")["reservationAffinity"]
    assert affinity["specificReservation"]["values"] == ["a3-ultra-reservation"]
    head = mocks.instance("head1")["networkInterfaces"]
    assert len(head) == 1


def test_blueprint_facts_per_kind() -> None:
    from fabric.targets.gcp.catalog import gcp_blueprint

    high, mega, ultra = (gcp_blueprint(f"a3-{k}gpu-8g") for k in ("high", "mega", "ultra"))
    assert high and mega and ultra
    assert (high.nccl_plugin, mega.nccl_plugin, ultra.nccl_plugin) == ("tcpx", "tcpxo", "gib")
    assert "tcpx-kernel" in high.image_needs
    assert {"dmabuf-import-helper", "aperture-devices"} <= set(mega.image_needs)
    assert ultra.gpu_nic_type == "MRDMA" and ultra.gvnic_networks == 2
    assert gcp_blueprint("n2-standard-8") is None


def test_offline_a3_mega_image_must_carry_the_blueprint_helpers() -> None:
    from fabric.spec.egress import offline_image_lacks

    data = mega()
    data["gcp"]["egress"] = {
        "mode": "offline",
        "image_provides": [
            *("munge", "slurmd", "slurmctld", "nvidia-driver", "nvidia-fabricmanager", "docker"),
            *("nfs-client", "scratch-tools"),  # the example's storage: Filestore, local SSD
        ],
    }
    spec = ClusterSpec.model_validate(data, context={SKIP_RULES: True})
    assert offline_image_lacks(spec) == {
        need: ["a3-01", "a3-02"]
        for need in ("rxdm-image", "dmabuf-import-helper", "aperture-devices")
    }
    with pytest.raises(ValueError, match="the offline image lacks dmabuf-import-helper"):
        ClusterSpec.model_validate(data)


def test_a3_ultra_second_subnet_must_stand_apart() -> None:
    path = ROOT / "Pulumi.gcp-a3-ultra.example.yaml"
    data = yaml.safe_load(path.read_text())["config"]["railyard:cluster"]
    data["gcp"]["second_subnet_cidr"] = "192.168.128.0/20"  # the first MRDMA subnets
    with pytest.raises(
        ValueError, match=r"gcp.gpu_subnet_cidrs\[0\].*overlaps gcp.second_subnet_cidr"
    ):
        ClusterSpec.model_validate(data)
    high = example()
    high["gcp"]["second_subnet_cidr"] = "172.16.0.0/20"  # unused on A3 High: not checked
    assert ClusterSpec.model_validate(high).gcp is not None
