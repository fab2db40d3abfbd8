"""The AWS component's resource graph under Pulumi mocks, and the specs it refuses."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import Mocks, build_component, mock_stack

from fabric.cli import main
from fabric.spec import SKIP_RULES, ClusterSpec, SpecError
from fabric.state import REPO_ROOT
from fabric.targets.aws.component import AwsCluster

EXAMPLE = REPO_ROOT / "Pulumi.aws-efa.example.yaml"
SPECS = Path(__file__).parent / "specs"


def example(**aws: Any) -> dict[str, Any]:
    """The example stack's spec with an explicit AMI (the default image, resolved through
    SSM, is tested in test_aws_first_deploy.py) and ``aws`` changed."""
    data = yaml.safe_load(EXAMPLE.read_text())["config"]["railyard:cluster"]
    data["aws"].update({"ami": "ami-0123456789abcdef0", **aws})
    return data


def connection(host_vars: dict[str, Any]) -> dict[str, Any]:
    """A host's vars without the storage ones (test_aws_first_deploy.py tests those)."""
    return {k: v for k, v in host_vars.items() if not k.startswith("storage_")}


def build(spec: ClusterSpec) -> tuple[Mocks, dict[str, Any]]:
    """Run the component under fresh mocks; return the mocks and its resolved outputs."""
    return build_component(lambda: AwsCluster("c", spec), "awstest")


@pytest.fixture(scope="module")
def p5() -> tuple[Mocks, dict[str, Any]]:
    return build(ClusterSpec.model_validate(example()))


def test_every_host_is_one_instance(p5: tuple[Mocks, dict[str, Any]]) -> None:
    mocks, out = p5
    names = sorted(r.inputs["tags"]["Name"] for r in mocks.of("aws:ec2/instance:Instance"))
    assert names == ["gpu01", "gpu02", "gpu03", "gpu04", "head1"]
    assert sorted(out["hosts"]) == names


def test_children_are_parented_to_the_component(p5: tuple[Mocks, dict[str, Any]]) -> None:
    mocks, out = p5
    children = [u for u in out["urns"] if not u.endswith("railyard:aws:Cluster::c")]
    assert len(children) == len(mocks.resources) - 1 > 10
    pins = [u for u in children if "$pulumi-python:dynamic:Resource::" in u]
    assert len(pins) == 5  # one host key pin per instance
    # straight under the component, or under its own parts (the nodes' identity, storage),
    # which are the component's children
    parts = ("::railyard:aws:NodeIdentity$aws:", "::railyard:aws:SharedStorage$aws:")
    assert all(
        "::railyard:aws:Cluster$aws:" in urn
        or "::railyard:aws:Cluster$railyard:aws:" in urn
        or any(part in urn for part in parts)
        for urn in children
        if urn not in pins
    )
    assert all(
        "::railyard:aws:Cluster$pulumi-python:dynamic:Resource::c-hostkey-" in u for u in pins
    )


def test_p5_launch_template_has_ena_primary_and_32_efa_only(
    p5: tuple[Mocks, dict[str, Any]],
) -> None:
    """The EFA guide's layout for P5: ENA at card 0 device 0 (the one IP address), efa-only at
    card 0 device 1 and at device 0 of cards 1-31 (no IP address each)."""
    mocks, _ = p5
    (template,) = mocks.of("aws:ec2/launchTemplate:LaunchTemplate")
    nics = template.inputs["networkInterfaces"]
    assert len(nics) == 33
    assert [(n["networkCardIndex"], n["deviceIndex"], n["interfaceType"]) for n in nics] == [
        (0, 0, "interface"),
        (0, 1, "efa-only"),
        *((card, 0, "efa-only") for card in range(1, 32)),
    ]
    assert {n["subnetId"] for n in nics} == {"c-subnet-id"}
    assert all(n["securityGroups"] == ["c-efa-sg-id"] for n in nics)
    assert template.inputs["instanceType"] == "p5.48xlarge"
    assert template.inputs["imageId"] == "ami-0123456789abcdef0"
    assert template.inputs["keyName"] == "railyard"


def test_compute_instances_launch_from_the_template(p5: tuple[Mocks, dict[str, Any]]) -> None:
    mocks, out = p5
    compute = [
        r
        for r in mocks.of("aws:ec2/instance:Instance")
        if r.inputs["tags"]["railyard:role"] == "compute"
    ]
    assert len(compute) == 4
    assert {r.inputs["launchTemplate"]["id"] for r in compute} == {"c-lt-0-id"}
    assert {r.inputs["launchTemplate"]["version"] for r in compute} == {"1"}
    assert out["hosts"]["gpu01"]["efa_interfaces"] == 32


def test_placement_group_is_explicit_cluster(p5: tuple[Mocks, dict[str, Any]]) -> None:
    mocks, _ = p5
    (group,) = mocks.of("aws:ec2/placementGroup:PlacementGroup")
    assert group.inputs["strategy"] == "cluster"
    assert group.inputs["name"] == "efa-p5-pg"
    (template,) = mocks.of("aws:ec2/launchTemplate:LaunchTemplate")
    assert template.inputs["placement"]["groupName"] == "efa-p5-pg"
    assert template.inputs["placement"]["availabilityZone"] == "us-east-2b"


def test_security_group_refers_to_itself_both_ways(p5: tuple[Mocks, dict[str, Any]]) -> None:
    mocks, _ = p5
    ingress = mocks.of("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule")
    egress = mocks.of("aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule")
    self_in = [r.inputs for r in ingress if r.inputs.get("referencedSecurityGroupId")]
    self_out = [r.inputs for r in egress if r.inputs.get("referencedSecurityGroupId")]
    for rules in (self_in, self_out):
        assert len(rules) == 1
        assert rules[0]["securityGroupId"] == rules[0]["referencedSecurityGroupId"] == "c-efa-sg-id"
        assert rules[0]["ipProtocol"] == "-1"


def test_new_vpc_head_public_compute_private_behind_nat(p5: tuple[Mocks, dict[str, Any]]) -> None:
    """ParallelCluster's layout: the head node in a public subnet (internet gateway), the
    compute nodes in a private one whose only default route is a NAT gateway."""
    mocks, _ = p5
    (vpc,) = mocks.of("aws:ec2/vpc:Vpc")
    subnets = {r.name: r.inputs for r in mocks.of("aws:ec2/subnet:Subnet")}
    assert vpc.inputs["cidrBlock"] == "10.0.0.0/16"
    assert subnets["c-subnet"]["cidrBlock"] == "10.0.0.0/20"
    assert subnets["c-public-subnet"]["cidrBlock"] == "10.0.16.0/24"
    assert len(mocks.of("aws:ec2/internetGateway:InternetGateway")) == 1
    (nat,) = mocks.of("aws:ec2/natGateway:NatGateway")
    (eip,) = mocks.of("aws:ec2/eip:Eip")
    assert nat.inputs["subnetId"] == "c-public-subnet-id"
    assert nat.inputs["allocationId"].startswith("eipalloc-") and eip.inputs["domain"] == "vpc"
    tables = {r.name: r.inputs["routes"] for r in mocks.of("aws:ec2/routeTable:RouteTable")}
    assert tables["c-rt"] == [{"cidrBlock": "0.0.0.0/0", "gatewayId": "c-igw-id"}]
    assert tables["c-private-rt"] == [{"cidrBlock": "0.0.0.0/0", "natGatewayId": "c-nat-id"}]
    links = {
        r.inputs["subnetId"]: r.inputs["routeTableId"]
        for r in mocks.of("aws:ec2/routeTableAssociation:RouteTableAssociation")
    }
    assert links == {"c-public-subnet-id": "c-rt-id", "c-subnet-id": "c-private-rt-id"}
    (head,) = [
        r for r in mocks.of("aws:ec2/instance:Instance") if r.inputs["tags"]["Name"] == "head1"
    ]
    assert head.inputs["instanceType"] == "c6i.2xlarge"
    assert head.inputs["associatePublicIpAddress"] is True
    assert head.inputs["subnetId"] == "c-public-subnet-id"
    assert "launchTemplate" not in head.inputs


@pytest.mark.parametrize("mode", ["proxy", "offline"])
def test_no_nat_without_egress_nat(mode: str) -> None:
    egress: dict[str, Any] = {"mode": mode}
    if mode == "proxy":
        egress["proxy"] = "http://proxy.example:3128"
    else:
        egress["image_provides"] = [
            *("munge", "slurmd", "slurmctld", "nvidia-driver", "nvidia-fabricmanager", "efa"),
            *("nfs-client", "scratch-tools"),  # the example's storage block: EFS and scratch
        ]
    mocks, _ = build(ClusterSpec.model_validate(example(egress=egress)))
    assert not mocks.of("aws:ec2/natGateway:NatGateway")
    tables = {r.name: r.inputs.get("routes") for r in mocks.of("aws:ec2/routeTable:RouteTable")}
    assert not tables["c-private-rt"]


def test_hostnames_are_the_declared_names_at_boot(p5: tuple[Mocks, dict[str, Any]]) -> None:
    mocks, _ = p5
    for inst in mocks.of("aws:ec2/instance:Instance"):
        name = inst.inputs["tags"]["Name"]
        data = yaml.safe_load(inst.inputs["userData"])
        assert inst.inputs["userData"].startswith("#cloud-config\n")
        assert data["hostname"] == data["fqdn"] == name
        assert data["preserve_hostname"] is False
        assert "apt" not in data  # egress nat: no proxy


def test_proxy_reaches_apt_and_the_environment() -> None:
    egress = {
        "mode": "proxy",
        "proxy": "http://proxy.example:3128",
        "no_proxy": ["169.254.169.254"],
    }
    mocks, _ = build(ClusterSpec.model_validate(example(egress=egress)))
    inst = mocks.of("aws:ec2/instance:Instance")[0]
    data = yaml.safe_load(inst.inputs["userData"])
    assert data["apt"] == {"http_proxy": egress["proxy"], "https_proxy": egress["proxy"]}
    (env,) = data["write_files"]
    assert env["path"] == "/etc/environment" and env["append"] is True
    assert "no_proxy=169.254.169.254" in env["content"].splitlines()


def test_inventory_uses_private_addresses(p5: tuple[Mocks, dict[str, Any]]) -> None:
    mocks, out = p5
    hosts = out["inventory"]["all"]["hosts"]
    by_name = {r.inputs["tags"]["Name"]: r for r in mocks.of("aws:ec2/instance:Instance")}
    assert sorted(hosts) == sorted(by_name)
    assert hosts["gpu01"]["ansible_host"] == out["hosts"]["gpu01"]["private_ip"]
    assert out["inventory"]["all"]["vars"]["ansible_user"] == "ubuntu"


def test_compute_nodes_are_reached_through_the_head_node(
    p5: tuple[Mocks, dict[str, Any]],
) -> None:
    _, out = p5
    inventory = out["inventory"]["all"]
    head_public = out["hosts"]["head1"]["public_ip"]
    assert head_public and head_public != out["hosts"]["head1"]["private_ip"]
    jump = inventory["vars"]["ansible_ssh_common_args"]
    assert f"-W %h:%p ubuntu@{head_public}'" in jump
    assert jump.count("StrictHostKeyChecking=yes") == 2  # the node and the jump
    for host in ("gpu01", "gpu02", "gpu03", "gpu04"):  # private addresses, through head1
        private = out["hosts"][host]["private_ip"]
        assert connection(inventory["hosts"][host]) == {
            "ansible_host": private,
            "slurm_node_addr": private,
            "cluster_hosts_address_var": "slurm_node_addr",
        }
    assert inventory["hosts"]["head1"]["ansible_host"] == head_public
    # Slurm (SlurmctldHost's address) and /etc/hosts use the head node's private address
    assert inventory["hosts"]["head1"]["slurm_node_addr"] == out["hosts"]["head1"]["private_ip"]
    assert "ProxyCommand" not in inventory["hosts"]["head1"]["ansible_ssh_common_args"]


def test_host_keys_are_pinned_from_the_console_bastion_first(
    p5: tuple[Mocks, dict[str, Any]],
) -> None:
    mocks, out = p5
    pins = {r.inputs["host"]: r for r in mocks.of("pulumi-python:dynamic:Resource")}
    assert sorted(pins) == ["gpu01", "gpu02", "gpu03", "gpu04", "head1"]
    bastion = pins["head1"]
    assert bastion.name == "c-hostkey-bastion"
    assert bastion.inputs["address"] == out["hosts"]["head1"]["public_ip"]
    assert "jump" not in bastion.inputs
    assert bastion.inputs["source"] == {
        "cloud": "aws",
        "instance_id": "c-head1-id",
        "region": "us-east-2",
    }
    for host in ("gpu01", "gpu04"):
        pin = pins[host].inputs
        assert pin["address"] == out["hosts"][host]["private_ip"]
        assert pin["jump"] == {"address": bastion.inputs["address"], "user": "ubuntu", "port": 22}
        assert pin["source"]["instance_id"] == f"c-{host}-id"
        assert pin["known_hosts"].endswith("/awstest/known_hosts")
    assert mocks.names.index("c-hostkey-bastion") < mocks.names.index("c-hostkey-gpu01")


def test_verification_plan_of_the_example_is_not_empty(
    p5: tuple[Mocks, dict[str, Any]],
) -> None:
    from fabric.verify.context import inventory_groups
    from fabric.verify.plan import CheckPlan

    _, out = p5
    groups = inventory_groups(out["inventory"])
    spec = ClusterSpec.model_validate(example())
    plan = CheckPlan(spec=spec, hosts=groups["all"], groups=groups)
    assert plan.slurm_nodes == ["gpu01", "gpu02", "gpu03", "gpu04"]
    assert plan.slurm_controller == "head1"
    # fabric checks derived from the catalog (issue 13 part 2): the EFA family has hosts
    assert [h.host for h in plan.params("efa_hosts")] == ["gpu01", "gpu02", "gpu03", "gpu04"]
    assert "efa" not in plan.not_generated()


def test_p4d_gets_4_efa_interfaces() -> None:
    data = example()
    data["nodes"][0].update(instance_type="p4d.24xlarge", gpu_type="a100")
    mocks, out = build(ClusterSpec.model_validate(data))
    (template,) = mocks.of("aws:ec2/launchTemplate:LaunchTemplate")
    nics = template.inputs["networkInterfaces"]
    assert [(n["networkCardIndex"], n["deviceIndex"]) for n in nics] == [
        (0, 0),
        (1, 1),
        (2, 1),
        (3, 1),
    ]
    assert out["hosts"]["gpu04"]["efa_interfaces"] == 4


def test_existing_vpc_and_subnet_are_used_as_is() -> None:
    data = example(vpc_id="vpc-0abc1234", subnet_id="subnet-0abc1234")
    data["access"] = {"bastion": {"host": "bastion.example.org", "user": "ec2-user", "port": 2222}}
    mocks, out = build(ClusterSpec.model_validate(data))
    jump = out["inventory"]["all"]["vars"]["ansible_ssh_common_args"]
    assert jump.endswith("-p 2222 -W %h:%p ec2-user@bastion.example.org'")
    assert connection(out["inventory"]["all"]["hosts"]["head1"]) == {
        "ansible_host": out["hosts"]["head1"]["private_ip"]  # behind the bastion like the rest
    }
    bastion = mocks.named("c-hostkey-bastion").inputs
    assert (bastion["host"], bastion["address"], bastion["port"]) == (
        "bastion",
        "bastion.example.org",
        2222,
    )
    assert "source" not in bastion  # an address of the user's: recorded at first contact
    assert mocks.of("aws:ec2/vpc:Vpc") == [] and mocks.of("aws:ec2/subnet:Subnet") == []
    sg = mocks.named("c-efa-sg")
    assert sg.inputs["vpcId"] == "vpc-0abc1234"
    # EFS's NFS group: from the cluster's members (an existing VPC's CIDR is not the spec's)
    assert mocks.named("c-storage-nfs-in").inputs["referencedSecurityGroupId"] == "c-efa-sg-id"
    (template,) = mocks.of("aws:ec2/launchTemplate:LaunchTemplate")
    assert {n["subnetId"] for n in template.inputs["networkInterfaces"]} == {"subnet-0abc1234"}


def test_capacity_block_sets_market_type_and_reservation_and_no_placement_group() -> None:
    spec = ClusterSpec.model_validate(
        example(
            capacity_block=True,
            capacity_reservation_id="cr-0123456789abcdef0",
            placement_group=None,
        )
    )
    mocks, _ = build(spec)
    (template,) = mocks.of("aws:ec2/launchTemplate:LaunchTemplate")
    assert template.inputs["instanceMarketOptions"] == {"marketType": "capacity-block"}
    target = template.inputs["capacityReservationSpecification"]["capacityReservationTarget"]
    assert target == {"capacityReservationId": "cr-0123456789abcdef0"}
    assert not mocks.of("aws:ec2/placementGroup:PlacementGroup")
    assert "groupName" not in template.inputs["placement"]


def test_odcr_targets_the_reservation_on_demand_in_its_own_placement_group() -> None:
    """A reservation's instances launch into the reservation's group, which railyard reuses
    and does not create (issue 40)."""
    spec = ClusterSpec.model_validate(
        example(
            capacity_reservation_id="cr-0123456789abcdef0",
            placement_group="p5-odcr-pg",
            placement_group_existing=True,
            capacity_reservation_placement_group="p5-odcr-pg",
        )
    )
    mocks, _ = build(spec)
    (template,) = mocks.of("aws:ec2/launchTemplate:LaunchTemplate")
    assert "instanceMarketOptions" not in template.inputs  # on demand, from the reservation
    target = template.inputs["capacityReservationSpecification"]["capacityReservationTarget"]
    assert target == {"capacityReservationId": "cr-0123456789abcdef0"}
    assert template.inputs["placement"]["groupName"] == "p5-odcr-pg"
    assert not mocks.of("aws:ec2/placementGroup:PlacementGroup")


def test_on_demand_has_no_reservation_and_no_market() -> None:
    mocks, _ = build(ClusterSpec.model_validate(example()))
    (template,) = mocks.of("aws:ec2/launchTemplate:LaunchTemplate")
    assert "instanceMarketOptions" not in template.inputs
    assert "capacityReservationSpecification" not in template.inputs


# --- refusals: the spec validators run before any resource is registered ---------------


def unchecked(data: dict[str, Any]) -> ClusterSpec:
    """A spec built without its validators, as a caller bypassing model_validate would."""
    valid = ClusterSpec.model_validate(example())
    aws = valid.aws.model_copy(update=data.pop("aws", {}))  # type: ignore[union-attr]
    nodes = [valid.nodes[0].model_copy(update=data.pop("node0", {})), *valid.nodes[1:]]
    return valid.model_copy(update={"aws": aws, "nodes": nodes})


@pytest.mark.parametrize(
    ("change", "path", "words"),
    [
        (
            {"node0": {"instance_type": "g5.xlarge", "gpus": 1}},
            "nodes[0].instance_type",
            "has no EFA",
        ),
        ({"aws": {"placement_group": None}}, "aws.placement_group", "placement group"),
        ({"aws": {"placement_strategy": "spread"}}, "aws.placement_strategy", "cluster"),
        ({"aws": {"efa": False}}, "aws.gpudirect_rdma", "GPUDirect RDMA runs over EFA"),
        ({"aws": {"capacity_block": True}}, "aws.capacity_reservation_id", "Capacity Block"),
    ],
)
def test_wrong_spec_refused_before_any_resource(
    change: dict[str, Any], path: str, words: str
) -> None:
    mocks = mock_stack("awstest")
    with pytest.raises(SpecError) as error:
        AwsCluster("c", unchecked(change))
    assert path in dict(error.value.problems)
    assert words in dict(error.value.problems)[path]
    assert path in str(error.value)
    assert mocks.resources == []


def test_spec_itself_refuses_efa_on_a_type_without_efa() -> None:
    data = example()
    data["nodes"][0].update(instance_type="g5.xlarge", gpus=1)
    with pytest.raises(ValueError, match=r"nodes\[0\]\.instance_type"):
        ClusterSpec.model_validate(data)


# --- validate refuses what the component refuses -----------------------------------------


def refusals(data: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Any:
    """The problems ``python -m fabric validate`` reports for ``data``, and the component's."""
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(data))
    code = main(["validate", "--json", "--spec", str(path)])
    found = [(p["path"], p["message"]) for p in json.loads(capsys.readouterr().out)["problems"]]
    mock_stack("awstest")
    with pytest.raises(SpecError) as error:
        AwsCluster("c", ClusterSpec.model_validate(data, context={SKIP_RULES: True}))
    return code, found, [(p.path, p.message) for p in error.value.problems]


def _no_head(data: dict[str, Any]) -> None:
    del data["nodes"][1]
    del data["slurm"]["controller"]


@pytest.mark.parametrize(
    ("change", "path", "words"),
    [
        (
            lambda d: d["aws"].update(capacity_block=True),
            "aws.capacity_reservation_id",
            "capacity_block: true launches into a purchased Capacity Block; set its id",
        ),
        (
            lambda d: d["aws"].update(subnet_id="subnet-0abc1234"),
            "aws.vpc_id",
            "subnet_id is set: also set the vpc_id it belongs to",
        ),
        (_no_head, "nodes", "declare a head node, e.g. - {names: head1, role: login}"),
        (
            lambda d: d.update(access={"bastion": {"host": "gpu1"}}),
            "access.bastion.host",
            "gpu1 is a compute node; name a login or controller node, or an address",
        ),
        (
            lambda d: (
                d.update(access={"bastion": {"host": "head1"}}),
                d["aws"].update(vpc_id="vpc-0abc1234"),
            ),
            "access.bastion.host",
            "head1 gets no public address in an existing VPC (aws.vpc_id)",
        ),
        (
            lambda d: d["aws"].update(ami="ami-12345"),
            "aws.ami",
            "'ami-12345' is not an EC2 ami id, e.g. ami-0123456789abcdef0",
        ),
        (
            lambda d: d.update(access={"bastion": {"host": "-oProxyCommand=x"}}),
            "access.bastion.host",
            "is not a host name or address",
        ),
        (
            lambda d: d["aws"].update(egress={"mode": "proxy"}),
            "aws.egress.proxy",
            "egress mode proxy needs the proxy",
        ),
        (
            lambda d: d["aws"].update(egress={"mode": "offline", "image_provides": ["munge"]}),
            "aws.egress.image_provides",
            "the offline image lacks slurmctld",
        ),
        (
            lambda d: d["aws"].update(
                capacity_block=True, capacity_reservation_id="cr-0123456789abcdef0"
            ),
            "aws.placement_group",
            "a Capacity Block places its instances itself",
        ),
        (
            lambda d: d["aws"].update(egress={"mode": "offline", "image_provides": ["git"]}),
            "aws.egress.image_provides",
            "'git' is none of munge, slurmctld",
        ),
        (
            lambda d: d["aws"].update(public_subnet_cidr="10.0.8.0/24"),
            "aws.public_subnet_cidr",
            "overlaps aws.subnet_cidr 10.0.0.0/20",
        ),
    ],
    ids=[
        "capacity-block",
        "subnet-without-vpc",
        "no-head-node",
        "bastion-compute-node",
        "bastion-without-public-address",
        "malformed-ami",
        "bastion-option-injection",
        "proxy-without-url",
        "offline-image-lacks",
        "capacity-block-with-placement-group",
        "offline-unknown-need",
        "public-subnet-overlap",
    ],
)
def test_validate_refuses_what_the_component_refuses(
    change: Any, path: str, words: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = yaml.safe_load((SPECS / "valid" / "aws.yaml").read_text())
    change(data)
    code, validate, component = refusals(data, tmp_path, capsys)
    assert (code, validate) == (1, component)
    assert words in dict(validate)[path]


def test_offline_image_lacks_names_each_need_and_its_hosts() -> None:
    from fabric.spec.egress import offline_image_lacks

    data = example(egress={"mode": "offline", "image_provides": ["munge", "slurmd", "efa"]})
    spec = ClusterSpec.model_validate(data, context={SKIP_RULES: True})
    everyone = ["head1", "gpu01", "gpu02", "gpu03", "gpu04"]
    assert {need: sorted(hosts) for need, hosts in offline_image_lacks(spec).items()} == {
        "nvidia-driver": ["gpu01", "gpu02", "gpu03", "gpu04"],
        "nvidia-fabricmanager": ["gpu01", "gpu02", "gpu03", "gpu04"],  # p5: NVSwitch
        "slurmctld": ["head1"],
        "nfs-client": sorted(everyone),  # the storage role: EFS at /home, NVMe scratch
        "scratch-tools": sorted(everyone),
    }
    assert offline_image_lacks(ClusterSpec.model_validate(example())) == {}  # mode nat
