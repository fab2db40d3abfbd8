"""Issue 40 on AWS under Pulumi mocks: boot disks, images, identity, storage, capacity; and the
specs the AWS rules refuse (a reservation's group, other clouds' storage, machine counts)."""

from __future__ import annotations

from typing import Any

import pulumi
import pytest
import yaml
from conftest import Mocks

from fabric.spec import ClusterSpec
from fabric.state import REPO_ROOT
from fabric.targets.aws.capacity import (
    ICE,
    capacity_hook,
    capacity_message,
    error_hooks_available,
)
from fabric.targets.aws.catalog import IMAGE_PARAMETERS, aws_instance
from fabric.targets.aws.component import AwsCluster
from fabric.targets.aws.section import DEFAULT_IAM_POLICIES

EXAMPLE = REPO_ROOT / "Pulumi.aws-efa.example.yaml"
#: What the public SSM parameters answer in these tests, per machine kind.
AMIS = {"gpu": "ami-0dddddddddddddd01", "cpu": "ami-0ccccccccccccc002"}
GET_PARAMETER = "aws:ssm/getParameter:getParameter"


class CloudMocks(Mocks):
    """The shared mocks, plus the SSM parameter reads and what EFS and FSx compute."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[pulumi.runtime.MockCallArgs] = []

    def call(self, args: pulumi.runtime.MockCallArgs) -> dict[str, Any]:  # type: ignore[override]
        self.calls.append(args)
        if args.token != GET_PARAMETER:
            raise AssertionError(f"unexpected call {args.token}")
        kind = next(k for k, name in IMAGE_PARAMETERS.items() if name == args.args["name"])
        return {"name": args.args["name"], "type": "String", "value": AMIS[kind]}

    def outputs(self, args: pulumi.runtime.MockResourceArgs, count: int) -> dict[str, Any]:
        outs = super().outputs(args, count)
        if args.typ in ("aws:iam/role:Role", "aws:iam/instanceProfile:InstanceProfile"):
            outs.setdefault("name", f"{args.name}-1a2b3c")  # Pulumi's auto-naming
        elif args.typ == "aws:efs/fileSystem:FileSystem":
            outs["dnsName"] = f"fs-0{count:016x}.efs.us-east-2.amazonaws.com"
        elif args.typ == "aws:fsx/lustreFileSystem:LustreFileSystem":
            outs["dnsName"] = f"fs-0{count:016x}.fsx.us-east-2.amazonaws.com"
            outs["mountName"] = "abcdefgh"
        return outs


def example(**aws: Any) -> dict[str, Any]:
    """The example stack's spec (the default image: no ``aws.ami``), ``aws`` changed."""
    data = yaml.safe_load(EXAMPLE.read_text())["config"]["railyard:cluster"]
    data["aws"].update(aws)
    return data


def build(data: dict[str, Any]) -> tuple[CloudMocks, dict[str, Any]]:
    """The component of ``data`` under fresh mocks: the mocks and its inventory and hosts."""
    spec = ClusterSpec.model_validate(data)
    mocks = CloudMocks()
    pulumi.runtime.set_mocks(mocks, project="railyard", stack="awsfirst", preview=False)
    result: dict[str, Any] = {}

    @pulumi.runtime.test
    def run() -> pulumi.Output[Any]:
        cluster = AwsCluster("c", spec)
        return pulumi.Output.all(cluster.inventory, cluster.hosts).apply(
            lambda v: result.update(inventory=v[0]["all"]["hosts"], hosts=v[1])
        )

    run()
    return mocks, result


@pytest.fixture(scope="module")
def p5() -> tuple[CloudMocks, dict[str, Any]]:
    return build(example())


def instances(mocks: Mocks) -> dict[str, dict[str, Any]]:
    return {r.inputs["tags"]["Name"]: r.inputs for r in mocks.of("aws:ec2/instance:Instance")}


def test_every_instance_boots_from_a_gp3_root_volume(p5: tuple[CloudMocks, Any]) -> None:
    made = instances(p5[0])
    assert sorted(made) == ["gpu01", "gpu02", "gpu03", "gpu04", "head1"]
    for inputs in made.values():
        root = inputs["rootBlockDevice"]
        assert (root["volumeType"], root["volumeSize"], root["encrypted"]) == ("gp3", 200, True)


def test_every_instance_carries_the_nodes_instance_profile(p5: tuple[CloudMocks, Any]) -> None:
    mocks, _ = p5
    (profile,) = mocks.of("aws:iam/instanceProfile:InstanceProfile")
    (role,) = mocks.of("aws:iam/role:Role")
    assert '"Service": "ec2.amazonaws.com"' in role.inputs["assumeRolePolicy"]
    attached = [
        a.inputs["policyArn"] for a in mocks.of("aws:iam/rolePolicyAttachment:RolePolicyAttachment")
    ]
    assert attached == list(DEFAULT_IAM_POLICIES)  # SSM core only: the least the nodes need
    assert profile.inputs["role"] == "c-nodes-role-1a2b3c"
    assert {i["iamInstanceProfile"] for i in instances(mocks).values()} == {
        "c-nodes-profile-1a2b3c"
    }


def test_an_existing_instance_profile_is_used_and_none_made() -> None:
    mocks, _ = build(example(instance_profile="my-cluster-nodes"))
    assert not mocks.of("aws:iam/role:Role") and not mocks.of(
        "aws:iam/instanceProfile:InstanceProfile"
    )
    assert {i["iamInstanceProfile"] for i in instances(mocks).values()} == {"my-cluster-nodes"}


def test_each_machine_kind_boots_its_vendor_image_from_ssm(p5: tuple[CloudMocks, Any]) -> None:
    mocks, _ = p5
    asked = sorted(c.args["name"] for c in mocks.calls if c.token == GET_PARAMETER)
    assert asked == sorted(IMAGE_PARAMETERS.values())  # once per kind, not per node
    assert IMAGE_PARAMETERS["gpu"] == (
        "/aws/service/deeplearning/ami/x86_64/base-oss-nvidia-driver-gpu-ubuntu-22.04/latest/ami-id"
    )
    (template,) = mocks.of("aws:ec2/launchTemplate:LaunchTemplate")
    assert template.inputs["imageId"] == AMIS["gpu"]
    assert instances(mocks)["head1"]["ami"] == AMIS["cpu"]


def test_an_explicit_ami_wins() -> None:
    mocks, _ = build(example(ami="ami-0123456789abcdef0"))
    assert not [c for c in mocks.calls if c.token == GET_PARAMETER]
    (template,) = mocks.of("aws:ec2/launchTemplate:LaunchTemplate")
    assert template.inputs["imageId"] == "ami-0123456789abcdef0"
    assert instances(mocks)["head1"]["ami"] == "ami-0123456789abcdef0"


def test_efs_is_made_in_the_nodes_subnet_and_open_to_nfs_from_the_vpc(
    p5: tuple[CloudMocks, Any],
) -> None:
    mocks, _ = p5
    (efs,) = mocks.of("aws:efs/fileSystem:FileSystem")
    assert efs.inputs["encrypted"] is True
    (target,) = mocks.of("aws:efs/mountTarget:MountTarget")
    assert target.inputs["fileSystemId"] == "c-storage-efs-home-id"
    assert target.inputs["subnetId"] == "c-subnet-id"  # the compute nodes' subnet
    assert target.inputs["securityGroups"] == ["c-storage-nfs-sg-id"]
    rule = mocks.named("c-storage-nfs-in").inputs
    assert (rule["ipProtocol"], rule["fromPort"], rule["toPort"]) == ("tcp", 2049, 2049)
    assert rule["cidrIpv4"] == "10.0.0.0/16"  # the example's aws.vpc_cidr


def test_every_node_gets_the_mount_vars(p5: tuple[CloudMocks, Any]) -> None:
    _, out = p5
    for host, host_vars in out["inventory"].items():
        (home,) = host_vars["storage_shared"]
        assert home["name"] == "home" and home["kind"] == "efs", host
        assert home["server"].endswith(".efs.us-east-2.amazonaws.com")
        assert (home["export"], home["mount"]) == ("/", "/home")
        assert "nfsvers=4.1" in home["options"]


def test_the_instance_store_is_the_scratch_layout(p5: tuple[CloudMocks, Any]) -> None:
    _, out = p5
    gpu = out["inventory"]["gpu01"]["storage_scratch_layout"]
    assert gpu == {
        "mount": "/scratch",
        "filesystem": "xfs",
        "devices": "nvme",
        "count": 8,
        "size_gb": 3840,
        "source": "instance store",
    }
    assert out["inventory"]["head1"]["storage_scratch_layout"]["count"] == 0  # c6i: EBS only


def test_fsx_for_lustre_is_made_and_its_mount_name_exported() -> None:
    data = example()
    data["storage"]["shared"].append(
        {"name": "data", "kind": "fsx_lustre", "mount": "/fsx", "size_gib": 1200}
    )
    mocks, out = build(data)
    (fsx,) = mocks.of("aws:fsx/lustreFileSystem:LustreFileSystem")
    assert fsx.inputs["storageCapacity"] == 1200
    assert fsx.inputs["deploymentType"] == "SCRATCH_2"
    assert fsx.inputs["subnetIds"] == "c-subnet-id"
    assert fsx.inputs["securityGroupIds"] == ["c-efa-sg-id"]  # Lustre's 988 between members
    _, lustre = out["inventory"]["gpu01"]["storage_shared"]
    assert (lustre["export"], lustre["mount"]) == ("/abcdefgh", "/fsx")
    assert lustre["server"].endswith(".fsx.us-east-2.amazonaws.com")


@pytest.mark.parametrize(
    ("group", "field"), [("efa-p5-odcr-pg", "groupName"), ("pg-0123456789abcdef0", "groupId")]
)
def test_an_existing_placement_group_is_reused_not_made(group: str, field: str) -> None:
    mocks, _ = build(example(placement_group=group, placement_group_existing=True))
    assert not mocks.of("aws:ec2/placementGroup:PlacementGroup")
    (template,) = mocks.of("aws:ec2/launchTemplate:LaunchTemplate")
    placement = template.inputs["placement"]
    assert placement[field] == group
    other = "groupId" if field == "groupName" else "groupName"
    assert placement.get(other) is None
    assert placement["availabilityZone"] == "us-east-2b"


def test_a_placement_group_id_is_existing_without_the_flag() -> None:
    mocks, _ = build(example(placement_group="pg-0123456789abcdef0"))
    assert not mocks.of("aws:ec2/placementGroup:PlacementGroup")


def refusal(data: dict[str, Any]) -> str:
    """The spec's refusal of ``data``, as its one error text."""
    with pytest.raises(ValueError) as raised:
        ClusterSpec.model_validate(data)
    return str(raised.value)


def test_a_reservation_in_another_group_is_refused_naming_both() -> None:
    text = refusal(
        example(
            capacity_reservation_id="cr-0123456789abcdef0",
            capacity_reservation_placement_group=(
                "arn:aws:ec2:us-east-2:123456789012:placement-group/odcr-pg"
            ),
            placement_group="other-pg",
            placement_group_existing=True,
        )
    )
    assert "aws.placement_group" in text
    assert "'other-pg'" in text and "'odcr-pg'" in text and "cr-0123456789abcdef0" in text


def test_a_reservation_with_a_group_railyard_would_make_is_refused() -> None:
    text = refusal(example(capacity_reservation_id="cr-0123456789abcdef0"))
    assert "railyard would create 'efa-p5-pg'" in text
    assert "placement_group_existing: true" in text


def test_a_reservation_in_its_own_group_is_accepted() -> None:
    ClusterSpec.model_validate(
        example(
            capacity_reservation_id="cr-0123456789abcdef0",
            capacity_reservation_placement_group="odcr-pg",
            placement_group="odcr-pg",
            placement_group_existing=True,
        )
    )


@pytest.mark.parametrize(
    ("shared", "says"),
    [
        ({"kind": "filestore", "size_gib": 1024}, "filestore is Google Cloud's; on AWS use efs"),
        ({"kind": "managed_lustre"}, "managed_lustre is Google Cloud's"),
        ({"kind": "efs", "size_gib": 100}, "EFS grows as it is written"),
        ({"kind": "fsx_lustre", "size_gib": 1300}, "FSx for Lustre takes 1200, 2400"),
        ({"kind": "fsx_lustre", "size_gib": 1200, "tier": "BASIC_SSD"}, "is no fsx_lustre tier"),
    ],
)
def test_storage_aws_cannot_make_is_refused(shared: dict[str, Any], says: str) -> None:
    data = example()
    data["storage"]["shared"] = [{"name": "data", "mount": "/data", **shared}]
    assert says in refusal(data)


def test_a_cloud_file_system_needs_one_zone() -> None:
    data = example()
    del data["aws"]["availability_zone"]
    assert "storage.shared[0] (efs) is mounted through one zone's mount target" in refusal(data)


def test_declared_efa_devices_must_match_the_instance_type() -> None:
    data = example()
    data["nodes"][0]["hcas"] = [
        {"device": f"rdmap{i}s0", "link_layer": "Ethernet", "rate_gbps": 100} for i in range(4)
    ]
    assert "4 EFA devices declared, but p5.48xlarge has 32" in refusal(data)


def test_declared_gpus_must_match_the_instance_type() -> None:
    data = example()
    data["nodes"][0]["gpus"] = 4
    assert "4 GPUs, but p5.48xlarge has 8" in refusal(data)


def test_the_catalog_knows_p5s_instance_store() -> None:
    p5 = aws_instance("p5.48xlarge")
    assert p5 is not None and (p5.gpus, p5.efa_interfaces) == (8, 32)
    assert (p5.local_nvme, p5.local_nvme_gb) == (8, 3840)


def test_running_out_of_capacity_is_one_line_naming_type_zone_count() -> None:
    errors = [
        "creating EC2 Instance: operation error EC2: RunInstances, https response error"
        f" StatusCode: 500, api error {ICE}: We currently do not have sufficient p5.48xlarge"
        " capacity in the Availability Zone you requested (us-east-2b)."
    ]
    hosts = ["gpu01", "gpu02", "gpu03", "gpu04"]
    text = capacity_message(errors, "gpu03", "p5.48xlarge", "us-east-2b", hosts)
    assert text is not None and "\n" not in text
    assert "no p5.48xlarge capacity in us-east-2b for the 4 instances" in text
    assert "gpu03 was not made. Left made:" in text and "pulumi destroy" in text
    assert capacity_message(["AccessDenied"], "gpu03", "p5.48xlarge", None, hosts) is None


def test_the_capacity_hook_logs_once_and_never_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    logged: list[str] = []
    monkeypatch.setattr(pulumi.log, "error", lambda message, *a, **k: logged.append(message))
    hook = capacity_hook("gpu01", "p5.48xlarge", None, ["gpu01"])
    args = pulumi.ErrorHookArgs(
        urn="urn:pulumi:s::railyard::aws:ec2/instance:Instance::c-gpu01",
        id="",
        name="c-gpu01",
        type="aws:ec2/instance:Instance",
        failed_operation="create",
        errors=[f"api error {ICE}: no capacity"],
    )
    assert hook(args) is False
    assert logged == [capacity_message(args.errors, "gpu01", "p5.48xlarge", None, ["gpu01"])]
    assert "the subnet's zone" in logged[0]


def test_mocks_have_no_error_hooks_so_none_is_bound(p5: tuple[CloudMocks, Any]) -> None:
    """The engine's callback server runs hooks; Pulumi's mocks have none, so the component
    binds none there (a bound one would fail registration)."""
    assert error_hooks_available() is False
    assert len(instances(p5[0])) == 5
