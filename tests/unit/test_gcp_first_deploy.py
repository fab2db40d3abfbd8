"""Issue 40 on GCP under Pulumi mocks: boot disks, images, identity, OS Login, storage and
local SSD scratch on every example stack, as Cluster Toolkit's A3 blueprints deploy them; and
the specs the catalog refuses (boot disk types, file systems GCP lacks, zones)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pulumi
import pytest
import yaml
from conftest import Mocks, build_component, mock_stack
from test_gcp import gcp_outputs  # noqa: F401  (autouse: Filestore, Lustre, account outputs)

from fabric.components.target import TARGET_OUTPUTS
from fabric.spec import SKIP_RULES, ClusterSpec, SpecError
from fabric.spec.load import spec_from_mapping
from fabric.state import REPO_ROOT
from fabric.targets.gcp.catalog import boot_disk_types, gcp_machine
from fabric.targets.gcp.component import COMPUTE_SCOPES, GcpCluster
from fabric.targets.gcp.rules import config_problems

INSTANCE = "gcp:compute/instance:Instance"
ACCOUNT = "gcp:serviceaccount/account:Account"
MEMBER = "gcp:projects/iAMMember:IAMMember"
FILESTORE = "gcp:filestore/instance:Instance"
LUSTRE = "gcp:lustre/instance:Instance"
EXAMPLES = {
    "a3-high": REPO_ROOT / "Pulumi.gcp-a3-high.example.yaml",
    "a3-mega": REPO_ROOT / "Pulumi.gcp-a3-mega.example.yaml",
    "a3-ultra": REPO_ROOT / "Pulumi.gcp-a3-ultra.example.yaml",
    "examples/gcp-a3-mega": REPO_ROOT / "examples" / "gcp-a3-mega.yaml",
}
#: Local SSDs per A3 kind: 16 (High, Mega) and 32 (Ultra) of 375 GiB (catalog's sources).
LOCAL_SSDS = {"a3-highgpu-8g": 16, "a3-megagpu-8g": 16, "a3-ultragpu-8g": 32}


def cluster(path: Path) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text())
    return data["config"]["railyard:cluster"] if "config" in data else data


def build(data: dict[str, Any]) -> tuple[Mocks, dict[str, Any]]:
    spec = ClusterSpec.model_validate(data)
    return build_component(lambda: GcpCluster("c", spec), "gcptest", TARGET_OUTPUTS)


@pytest.fixture(scope="module", params=sorted(EXAMPLES))
def deployed(request: Any) -> tuple[dict[str, Any], Mocks, dict[str, Any]]:
    data = cluster(EXAMPLES[request.param])
    return (data, *build(data))


def test_every_instance_boots_from_a_disk_type_its_machine_supports(deployed: Any) -> None:
    data, mocks, _ = deployed
    instances = mocks.of(INSTANCE)
    assert len(instances) == len(ClusterSpec.model_validate(data).hosts)
    for inst in instances:
        machine = inst.inputs["machineType"]
        disk = inst.inputs["bootDisk"]["initializeParams"]
        assert disk["type"] in boot_disk_types(machine), machine
        assert disk["type"] == boot_disk_types(machine)[0]  # the blueprint's pick
    types = {
        i.inputs["machineType"]: i.inputs["bootDisk"]["initializeParams"]["type"] for i in instances
    }
    a3 = {t: d for t, d in types.items() if t.startswith("a3-")}
    expected = {
        "a3-highgpu-8g": "pd-ssd",
        "a3-megagpu-8g": "pd-ssd",
        "a3-ultragpu-8g": "hyperdisk-balanced",
    }
    assert a3 == {t: expected[t] for t in a3}
    assert types["n2-standard-8"] == "pd-balanced"


def test_every_instance_boots_googles_image_for_its_a3_kind(deployed: Any) -> None:
    _, mocks, _ = deployed
    instances = mocks.of(INSTANCE)
    compute = next(i for i in instances if i.inputs["machineType"].startswith("a3-"))
    image = gcp_machine(compute.inputs["machineType"]).image  # type: ignore[union-attr]
    assert image.startswith(("projects/ubuntu-os-cloud/", "projects/ubuntu-os-accelerator-images/"))
    assert {i.inputs["bootDisk"]["initializeParams"]["image"] for i in instances} == {image}


def test_every_instance_runs_as_the_least_role_service_account(deployed: Any) -> None:
    data, mocks, _ = deployed
    (account,) = mocks.of(ACCOUNT)
    email = f"{account.inputs['accountId']}@{data['gcp']['project']}.iam.gserviceaccount.com"
    assert account.inputs["accountId"] == f"{data['gcp'].get('network_prefix', 'railyard')}-nodes"
    grants = {m.inputs["role"]: m.inputs["member"] for m in mocks.of(MEMBER)}
    assert grants == {
        "roles/logging.logWriter": f"serviceAccount:{email}",
        "roles/monitoring.metricWriter": f"serviceAccount:{email}",
    }
    for inst in mocks.of(INSTANCE):
        assert inst.inputs["serviceAccount"] == {"email": email, "scopes": COMPUTE_SCOPES}


def test_filestore_home_is_created_and_handed_to_every_host(deployed: Any) -> None:
    data, mocks, out = deployed
    (filestore,) = mocks.of(FILESTORE)
    prefix = data["gcp"].get("network_prefix", "railyard")
    assert filestore.inputs["name"] == f"{prefix}-home"
    assert filestore.inputs["tier"] == "BASIC_SSD"
    assert filestore.inputs["location"] == data["gcp"]["zone"]
    assert filestore.inputs["fileShares"] == {"name": "home", "capacityGb": 2560}
    (network,) = filestore.inputs["networks"]
    assert network == {
        "network": f"{prefix}-sys",
        "modes": ["MODE_IPV4"],
        "connectMode": "DIRECT_PEERING",
    }
    count = mocks.resources.index(filestore) + 1
    address = f"10.0.{count}.2"  # what test_gcp.cloud_outputs reports for it
    hosts = out["inventory"]["all"]["hosts"]
    assert sorted(hosts) == sorted(ClusterSpec.model_validate(data).hosts)
    for host in hosts.values():
        assert host["storage_shared"] == [
            {
                "name": "home",
                "kind": "filestore",
                "server": address,
                "export": "/home",
                "mount": "/home",
                "options": "defaults,_netdev",
            }
        ]


def test_a3_local_ssds_are_attached_as_nvme_scratch(deployed: Any) -> None:
    _, mocks, _ = deployed
    for inst in mocks.of(INSTANCE):
        machine = inst.inputs["machineType"]
        disks = inst.inputs.get("scratchDisks")
        if machine.startswith("a3-"):
            assert disks == [{"interface": "NVME", "size": 375}] * LOCAL_SSDS[machine]
            assert gcp_machine(machine).local_ssds == LOCAL_SSDS[machine]  # type: ignore[union-attr]
        else:
            assert disks is None


def test_metadata_keys_is_the_default_login(deployed: Any) -> None:
    _, mocks, _ = deployed
    for inst in mocks.of(INSTANCE):
        assert "enable-oslogin" not in inst.inputs["metadata"]


# --- options -------------------------------------------------------------------------------


def high() -> dict[str, Any]:
    return cluster(EXAMPLES["a3-high"])


@pytest.fixture()
def ssh_key() -> Any:
    pulumi.runtime.set_all_config({"railyard:sshPublicKey": "ssh-ed25519 AAAAexample railyard"}, [])
    yield
    pulumi.runtime.set_all_config({}, [])


def test_os_login_sets_enable_oslogin_and_no_ssh_keys(ssh_key: None) -> None:
    data = high()
    data["gcp"]["access"] = "os_login"
    mocks, _ = build(data)
    for inst in mocks.of(INSTANCE):
        metadata = inst.inputs["metadata"]
        assert metadata["enable-oslogin"] == "TRUE"
        assert "ssh-keys" not in metadata


def test_metadata_keys_puts_the_config_key(ssh_key: None) -> None:
    mocks, _ = build(high())
    assert mocks.instance("a3-01")["metadata"]["ssh-keys"] == (
        "railyard:ssh-ed25519 AAAAexample railyard"
    )


def test_an_explicit_image_and_service_account_win() -> None:
    data = high()
    data["gcp"]["image"] = "projects/my-gpu-project/global/images/family/a3-high-tcpx-image"
    data["gcp"]["service_account"] = "nodes-sa@my-gpu-project.iam.gserviceaccount.com"
    data["gcp"]["boot_disk_type"] = "hyperdisk-balanced"
    mocks, _ = build(data)
    assert not mocks.of(ACCOUNT) and not mocks.of(MEMBER)
    for inst in mocks.of(INSTANCE):
        assert inst.inputs["bootDisk"]["initializeParams"]["image"] == data["gcp"]["image"]
        assert inst.inputs["serviceAccount"]["email"] == data["gcp"]["service_account"]
    assert mocks.instance("a3-01")["bootDisk"]["initializeParams"]["type"] == "hyperdisk-balanced"
    assert mocks.instance("head1")["bootDisk"]["initializeParams"]["type"] == "pd-balanced"


def test_managed_lustre_with_private_service_access_and_an_nfs_server() -> None:
    data = high()
    data["storage"]["shared"] = [
        {"name": "home", "kind": "managed_lustre", "mount": "/home", "size_gib": 36000},
        {
            "name": "data",
            "kind": "nfs",
            "server": "nfs1.example",
            "export": "/srv",
            "mount": "/data",
        },
    ]
    mocks, out = build(data)
    (reserved,) = mocks.of("gcp:compute/globalAddress:GlobalAddress")
    assert reserved.inputs["purpose"] == "VPC_PEERING"
    (peering,) = mocks.of("gcp:servicenetworking/connection:Connection")
    assert peering.inputs["reservedPeeringRanges"] == [reserved.inputs["name"]]
    (lustre,) = mocks.of(LUSTRE)
    assert lustre.inputs["capacityGib"] == "36000"
    assert lustre.inputs["perUnitStorageThroughput"] == "500"
    assert lustre.inputs["network"] == "c-sys-id"
    assert not mocks.of(FILESTORE)
    shared = out["inventory"]["all"]["hosts"]["a3-01"]["storage_shared"]
    assert [(s["kind"], s["export"], s["mount"]) for s in shared] == [
        ("managed_lustre", "/home", "/home"),
        ("nfs", "/srv", "/data"),
    ]
    assert shared[0]["server"].endswith("@tcp") and shared[1]["server"] == "nfs1.example"


# --- refusals ------------------------------------------------------------------------------


def problems(data: dict[str, Any]) -> dict[str, str]:
    """What the spec rules say of ``data``, by field."""
    with pytest.raises(SpecError) as error:
        spec_from_mapping(data)
    return dict(error.value.problems)


def ultra() -> dict[str, Any]:
    return cluster(EXAMPLES["a3-ultra"])


def test_pd_standard_on_a3_ultra_is_refused_naming_the_machine_and_its_types() -> None:
    data = ultra()
    data["gcp"]["boot_disk_type"] = "pd-standard"
    said = problems(data)["gcp.boot_disk_type"]
    assert "'pd-standard' is not a boot disk type a3-ultragpu-8g supports" in said
    assert "hyperdisk-balanced, hyperdisk-extreme" in said


def test_the_component_refuses_before_any_resource() -> None:
    data = ultra()
    data["gcp"]["boot_disk_type"] = "pd-standard"
    spec = ClusterSpec.model_validate(data, context={SKIP_RULES: True})
    mocks = mock_stack("gcptest")
    with pytest.raises(SpecError, match=r"gcp\.boot_disk_type"):
        GcpCluster("c", spec)
    assert mocks.resources == []


@pytest.mark.parametrize(
    ("kind", "what"), [("efs", "Amazon EFS"), ("fsx_lustre", "FSx for Lustre")]
)
def test_aws_file_systems_are_refused_on_gcp(kind: str, what: str) -> None:
    data = high()
    data["storage"]["shared"] = [{"name": "home", "kind": kind}]
    said = problems(data)["storage.shared[0].kind"]
    assert said.startswith(f"{kind}: target gcp offers filestore, managed_lustre, nfs")


@pytest.mark.parametrize(
    ("region", "zone", "path", "words"),
    [
        (
            "us-central1",
            "us-central1-z",
            "gcp.zone",
            "'us-central1-z' does not offer a3-highgpu-8g",
        ),
        (
            "us-west4",
            "us-west4-a",
            "gcp.zone",
            "known zones: us-central1-a, us-central1-c, us-west1-a",
        ),
        ("mars-north1", "mars-north1-a", "gcp.region", "'mars-north1' is not a region the catalog"),
    ],
    ids=["zone-unknown", "zone-without-the-machine", "region-unknown"],
)
def test_zones_are_checked_against_the_catalog(
    region: str, zone: str, path: str, words: str
) -> None:
    data = high()
    data["gcp"].update(region=region, zone=zone)
    assert words in problems(data)[path]


def test_a3_ultra_outside_its_zones_is_refused() -> None:
    data = ultra()
    data["gcp"].update(region="us-central1", zone="us-central1-a")
    assert "known zones: europe-west1-b" in problems(data)["gcp.zone"]


@pytest.mark.parametrize(
    ("entry", "path", "words"),
    [
        ({"tier": "PREMIUM"}, "tier", "'PREMIUM' is not a Filestore tier"),
        (
            {"kind": "managed_lustre", "tier": None, "size_gib": 1200},
            "size_gib",
            "below Managed Lustre's 9000",
        ),
        (
            {"kind": "managed_lustre", "tier": "300", "size_gib": 9000},
            "tier",
            "use one of 125, 250, 500, 1000",
        ),
    ],
)
def test_file_system_sizes_and_tiers_are_checked(
    entry: dict[str, Any], path: str, words: str
) -> None:
    data = high()
    data["storage"]["shared"][0].update(entry)
    assert words in problems(data)[f"storage.shared[0].{path}"]


def test_a_file_system_name_must_fit_an_instance_name() -> None:
    data = high()
    data["gcp"]["network_prefix"] = "railyard-a3-high-cluster-in-the-north-east-zone"
    data["storage"]["shared"][0]["name"] = "h" * 20
    assert "use at most 15" in problems(data)["storage.shared[0].name"]


def test_a_head_series_without_boot_disk_types_is_refused() -> None:
    data = high()
    data["nodes"][1]["instance_type"] = "x9-standard-8"
    assert "no boot disk type for its series" in problems(data)["nodes[1].instance_type"]


def test_the_stack_configs_boot_disk_type_points_to_the_spec() -> None:
    spec = ClusterSpec.model_validate(high())
    found = config_problems({"railyard:bootDiskType": "pd-standard"}, spec)
    assert [p.path for p in found] == ["config railyard:bootDiskType"]
    assert "gcp.boot_disk_type" in found[0].message
