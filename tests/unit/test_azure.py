"""The Azure component's resource graph under Pulumi mocks, its inventory through the bastion,
the check plan and the job environment of ``Pulumi.azure-ndv5.example.yaml``, and the scale set
members' reading (fabric/targets/azure/dynamic_members.py)."""

from __future__ import annotations

import base64
import json
import subprocess
from typing import Any

import pulumi
import pytest
import yaml
from conftest import DYNAMIC, Mocks

from fabric.handoff.vars import job_environment
from fabric.spec import ClusterSpec, SpecError, cross_field_problems
from fabric.spec.targets import stack_config_problems
from fabric.state import REPO_ROOT
from fabric.targets.azure.component import AzureCluster
from fabric.targets.azure.dynamic_members import assign, read_members, scale_set_addresses

EXAMPLE = REPO_ROOT / "Pulumi.azure-ndv5.example.yaml"
STACK = yaml.safe_load(EXAMPLE.read_text())["config"]
VMSS = "azure-native:compute:VirtualMachineScaleSet"
VM = "azure-native:compute:VirtualMachine"
NIC = "azure-native:network:NetworkInterface"
PUBLIC_IP = "azure-native:network:PublicIPAddress"


def example(**azure: Any) -> dict[str, Any]:
    data = yaml.safe_load(EXAMPLE.read_text())["config"]["railyard:cluster"]
    data["azure"].update(azure)
    return data


class AzureMocks(Mocks):
    """The one ``Mocks``, plus what Azure computes: a NIC's private address, a public IP's
    address, and the scale set members the Azure CLI would list (instance ids 0.., in order)."""

    def outputs(self, args: pulumi.runtime.MockResourceArgs, count: int) -> dict[str, Any]:
        if args.typ == DYNAMIC and "scale_set" in args.inputs:  # the CLI's instances, in order
            members = {
                h: {"instance_id": str(i), "private_ip": f"10.0.0.{i + 4}"}
                for i, h in enumerate(args.inputs["hosts"])
            }
            return {**args.inputs, "members": members}
        if args.typ.startswith("azure-native:"):  # ``name``: the given one, else autonamed
            given = [v for k, v in args.inputs.items() if k.endswith("Name") and k != "vmName"]
            named = {"name": args.inputs.get("vmName") or next(iter(given[-1:]), args.name)}
            if args.typ.endswith(":ResourceGroup"):
                named["name"] = args.inputs["resourceGroupName"]
            return {**super().outputs(args, count), **named, **self._azure(args, count)}
        return super().outputs(args, count)

    def _azure(self, args: pulumi.runtime.MockResourceArgs, count: int) -> dict[str, Any]:
        if args.typ == NIC:
            configs = [dict(c) for c in args.inputs["ipConfigurations"]]
            configs[0]["privateIPAddress"] = f"10.0.16.{count}"
            return {"ipConfigurations": configs}
        if args.typ == PUBLIC_IP:  # TEST-NET-3, never contacted
            return {"ipAddress": f"203.0.113.{count}"}
        return {}


def build(spec: ClusterSpec) -> tuple[AzureMocks, dict[str, Any]]:
    """Run the component under fresh mocks with the example's stack config."""
    mocks = AzureMocks()
    pulumi.runtime.set_mocks(mocks, project="railyard", stack="azuretest", preview=False)
    config = {k: v for k, v in STACK.items() if isinstance(v, str)}
    pulumi.runtime.set_all_config(config, [])
    names = ["inventory", "hosts"]
    result: dict[str, Any] = {}

    @pulumi.runtime.test
    def run() -> pulumi.Output[Any]:
        component = AzureCluster("c", spec)
        return pulumi.Output.all(*[getattr(component, n) for n in names]).apply(
            lambda values: result.update(zip(names, values, strict=True))
        )

    try:
        run()
        monitor = pulumi.runtime.settings.get_monitor()
        result["urns"] = list(monitor.get_registered_resources())  # type: ignore[union-attr]
    finally:
        pulumi.runtime.set_all_config({}, [])
    return mocks, result


@pytest.fixture(scope="module")
def ndv5() -> tuple[AzureMocks, dict[str, Any]]:
    return build(ClusterSpec.model_validate(example()))


def test_the_example_validates_as_shipped() -> None:
    spec = ClusterSpec.model_validate(example())
    assert cross_field_problems(spec) == []
    assert stack_config_problems(STACK, spec) == []


def test_every_child_is_parented_to_the_component(ndv5: tuple[AzureMocks, dict[str, Any]]) -> None:
    mocks, out = ndv5
    children = [u for u in out["urns"] if not u.endswith("railyard:azure:Cluster::c")]
    assert len(children) == len(mocks.resources) - 1 > 10
    assert all("::railyard:azure:Cluster$" in urn for urn in children)


def test_resource_group_vnet_subnets_and_nat(ndv5: tuple[AzureMocks, dict[str, Any]]) -> None:
    mocks, _ = ndv5
    (group,) = mocks.of("azure-native:resources:ResourceGroup")
    assert group.inputs["resourceGroupName"] == "railyard-ndv5"
    assert group.inputs["location"] == "eastus"
    (vnet,) = mocks.of("azure-native:network:VirtualNetwork")
    assert vnet.inputs["addressSpace"] == {"addressPrefixes": ["10.0.0.0/16"]}
    subnets = {r.name: r.inputs for r in mocks.of("azure-native:network:Subnet")}
    assert subnets["c-subnet"]["addressPrefix"] == "10.0.0.0/20"
    assert subnets["c-public-subnet"]["addressPrefix"] == "10.0.16.0/24"
    (nat,) = mocks.of("azure-native:network:NatGateway")
    assert nat.inputs["sku"] == {"name": "Standard"}
    assert nat.inputs["publicIpAddresses"] == [{"id": "c-nat-ip-id"}]
    # the compute subnet's egress is the NAT gateway; the head node's subnet has none
    assert subnets["c-subnet"]["natGateway"] == {"id": "c-nat-id"}
    assert "natGateway" not in subnets["c-public-subnet"]
    assert all(r.inputs["resourceGroupName"] == "railyard-ndv5" for r in mocks.resources[2:6])


@pytest.mark.parametrize("mode", ["proxy", "offline"])
def test_no_nat_without_egress_nat(mode: str) -> None:
    egress: dict[str, Any] = {"mode": mode}
    if mode == "proxy":
        egress["proxy"] = "http://proxy.example:3128"
    else:
        egress["image_provides"] = ["munge", "slurmd", "slurmctld", "nvidia-driver"]
    mocks, _ = build(ClusterSpec.model_validate(example(egress=egress)))
    assert not mocks.of("azure-native:network:NatGateway")
    assert "natGateway" not in mocks.named("c-subnet").inputs
    if mode == "proxy":
        (vmss,) = mocks.of(VMSS)
        data = _custom_data(vmss.inputs["virtualMachineProfile"]["osProfile"])
        assert data["apt"] == {"http_proxy": egress["proxy"], "https_proxy": egress["proxy"]}


def _custom_data(os_profile: dict[str, Any]) -> dict[str, Any]:
    text = base64.b64decode(os_profile["customData"]).decode()
    assert text.startswith("#cloud-config\n")
    return yaml.safe_load(text) or {}


def test_gpu_nodes_are_one_uniform_scale_set_in_one_placement_group(
    ndv5: tuple[AzureMocks, dict[str, Any]],
) -> None:
    """Azure's InfiniBand grouping: one Uniform scale set, singlePlacementGroup, every compute
    node in it, no overprovisioned extra VM on the fabric."""
    mocks, out = ndv5
    (vmss,) = mocks.of(VMSS)
    inputs = vmss.inputs
    assert inputs["orchestrationMode"] == "Uniform"
    assert inputs["singlePlacementGroup"] is True
    assert inputs["overprovision"] is False
    assert inputs["platformFaultDomainCount"] == 1
    assert inputs["sku"] == {"name": "Standard_ND96isr_H100_v5", "tier": "Standard", "capacity": 4}
    assert inputs["upgradePolicy"] == {"mode": "Manual"}
    profile = inputs["virtualMachineProfile"]
    assert profile["priority"] == "Regular"
    assert "capacityReservation" not in profile and "evictionPolicy" not in profile
    (nic,) = profile["networkProfile"]["networkInterfaceConfigurations"]
    assert nic["enableAcceleratedNetworking"] is True
    assert nic["ipConfigurations"][0]["subnet"] == {"id": "c-subnet-id"}
    assert "publicIPAddressConfiguration" not in nic["ipConfigurations"][0]
    assert profile["storageProfile"]["imageReference"] == {
        "publisher": "microsoft-dsvm",
        "offer": "ubuntu-hpc",
        "sku": "2204",
        "version": "latest",
    }
    linux = profile["osProfile"]["linuxConfiguration"]
    assert linux["disablePasswordAuthentication"] is True
    assert linux["ssh"]["publicKeys"] == [
        {
            "path": "/home/azureuser/.ssh/authorized_keys",
            "keyData": STACK["railyard:sshPublicKey"],
        }
    ]
    # no compute node is a VM of its own: all four are the scale set's
    assert [r.inputs["vmName"] for r in mocks.of(VM)] == ["head1"]
    assert [out["hosts"][h]["instance_id"] for h in ("gpu01", "gpu02", "gpu03", "gpu04")] == [
        "0",
        "1",
        "2",
        "3",
    ]
    assert {out["hosts"][h]["scale_set"] for h in ("gpu01", "gpu04")} == {"ndv5-compute"}


@pytest.mark.parametrize(
    ("capacity", "expected"),
    [
        (
            "spot",
            {"priority": "Spot", "evictionPolicy": "Delete", "billingProfile": {"maxPrice": -1}},
        ),
        (
            "reservation",
            {
                "priority": "Regular",
                "capacityReservation": {
                    "capacityReservationGroup": {
                        "id": "/subscriptions/0/resourceGroups/rg/providers/"
                        "Microsoft.Compute/capacityReservationGroups/crg"
                    }
                },
            },
        ),
    ],
)
def test_spot_and_reserved_capacity(capacity: str, expected: dict[str, Any]) -> None:
    group = (
        "/subscriptions/0/resourceGroups/rg/providers/Microsoft.Compute/capacityReservationGroups/crg"
        if capacity == "reservation"
        else None
    )
    mocks, _ = build(
        ClusterSpec.model_validate(example(capacity=capacity, capacity_reservation_group=group))
    )
    (vmss,) = mocks.of(VMSS)
    profile = vmss.inputs["virtualMachineProfile"]
    assert {k: profile.get(k) for k in expected} == expected


def test_head_node_public_with_its_name_at_boot(ndv5: tuple[AzureMocks, dict[str, Any]]) -> None:
    mocks, out = ndv5
    (head,) = mocks.of(VM)
    assert head.inputs["hardwareProfile"] == {"vmSize": "Standard_D8s_v5"}
    os_profile = head.inputs["osProfile"]
    assert os_profile["computerName"] == "head1"
    data = _custom_data(os_profile)
    assert data["hostname"] == data["fqdn"] == "head1"  # SlurmctldHost=head1
    assert data["preserve_hostname"] is False
    assert head.inputs["networkProfile"]["networkInterfaces"][0]["id"] == "c-head1-nic-id"
    nic = mocks.named("c-head1-nic").inputs
    assert nic["ipConfigurations"][0]["subnet"]["id"] == "c-public-subnet-id"
    assert nic["ipConfigurations"][0]["publicIPAddress"] == {"id": "c-head1-ip-id"}
    assert nic["networkSecurityGroup"] == {"id": "c-head-nsg-id"}
    (rule,) = mocks.named("c-head-nsg").inputs["securityRules"]
    assert (rule["sourceAddressPrefix"], rule["destinationPortRange"]) == ("203.0.113.0/24", "22")
    assert out["hosts"]["head1"]["public_ip"].startswith("203.0.113.")


def test_inventory_reaches_the_gpu_nodes_through_the_head_node(
    ndv5: tuple[AzureMocks, dict[str, Any]],
) -> None:
    _, out = ndv5
    inventory = out["inventory"]["all"]
    head_public = out["hosts"]["head1"]["public_ip"]
    jump = inventory["vars"]["ansible_ssh_common_args"]
    assert f"-W %h:%p azureuser@{head_public}'" in jump
    assert jump.count("StrictHostKeyChecking=yes") == 2
    assert inventory["vars"]["ansible_user"] == "azureuser"
    for index, host in enumerate(("gpu01", "gpu02", "gpu03", "gpu04")):
        private = f"10.0.0.{index + 4}"
        assert out["hosts"][host]["private_ip"] == private
        assert inventory["hosts"][host] == {
            "ansible_host": private,
            "slurm_node_addr": private,
            "cluster_hosts_address_var": "slurm_node_addr",
        }
    assert inventory["hosts"]["head1"]["ansible_host"] == head_public
    assert inventory["hosts"]["head1"]["slurm_node_addr"] == out["hosts"]["head1"]["private_ip"]


def test_host_keys_are_pinned_at_first_contact_bastion_first(
    ndv5: tuple[AzureMocks, dict[str, Any]],
) -> None:
    mocks, out = ndv5
    pins = {r.inputs["host"]: r for r in mocks.of(DYNAMIC) if "scale_set" not in r.inputs}
    assert sorted(pins) == ["gpu01", "gpu02", "gpu03", "gpu04", "head1"]
    assert pins["head1"].name == "c-hostkey-bastion"
    assert all(not p.inputs.get("source") for p in pins.values())  # first contact
    assert pins["gpu01"].inputs["jump"]["address"] == out["hosts"]["head1"]["public_ip"]
    assert mocks.names.index("c-hostkey-bastion") < mocks.names.index("c-hostkey-gpu01")


def test_check_plan_lists_infiniband_sm_nccl_and_slurm_topology() -> None:
    from fabric.spec import load_spec
    from fabric.verify.plan import CheckPlan, describe

    spec = load_spec(EXAMPLE)
    plan = CheckPlan(spec=spec, hosts=list(spec.hosts))
    families = describe(plan)
    for family in ("ports", "ib", "phy", "sm", "ib_pairs", "nccl", "gpudirect", "slurm"):
        assert "parameters" in families[family], (family, families[family])
    ports = families["ports"]["parameters"]
    assert len(ports) == 32  # 4 nodes x 8 NDR ports
    assert {p["device"] for p in ports} == {f"mlx5_ib{n}" for n in range(8)}
    assert {p["rate_gbps"] for p in ports} == {400}
    (sm,) = families["sm"]["parameters"]
    assert "external" in json.dumps(sm)
    # IPoIB only where declared: no HCA names a netdev, so no MTU path family runs
    assert "not_generated" in families["netdev_mtu"] and "not_generated" in families["path_mtu"]
    # Azure lays out the fabric: no declared tree for Slurm's, and no provider placement
    assert "fat tree" in families["slurm_topology"]["not_generated"]
    assert "not_generated" in families["slurm_provider_topology"]
    assert plan.slurm_nodes == ["gpu01", "gpu02", "gpu03", "gpu04"]
    assert plan.slurm_controller == "head1"


def test_jobs_get_the_nd_v5_nccl_environment() -> None:
    env = job_environment(ClusterSpec.model_validate(example()))
    assert sorted(env) == ["gpu01", "gpu02", "gpu03", "gpu04"]
    assert env["gpu01"] == {
        "all": {
            "NCCL_IB_PCI_RELAXED_ORDERING": "1",
            "NCCL_TOPO_FILE": "/opt/microsoft/ndv5/topo.xml",
            "NCCL_IGNORE_CPU_AFFINITY": "1",
            "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
            "NCCL_SOCKET_IFNAME": "eth0",
        },
        "multinode": {},
    }


def test_other_targets_get_no_azure_environment() -> None:
    data = yaml.safe_load((REPO_ROOT / "tests/unit/specs/valid/lab.yaml").read_text())
    env = job_environment(ClusterSpec.model_validate(data))
    assert not any("NCCL_TOPO_FILE" in e["all"] for e in env.values())


def test_wrong_spec_refused_before_any_resource() -> None:
    """A spec built without its validators (as a caller bypassing model_validate would) is
    refused by the component before it registers anything."""
    valid = ClusterSpec.model_validate(example())
    sizes = [valid.nodes[0].model_copy(update={"instance_type": "Standard_ND96asr_v4"})]
    spec = valid.model_copy(update={"nodes": [*sizes, *valid.nodes[1:]]})
    mocks = AzureMocks()
    pulumi.runtime.set_mocks(mocks, project="railyard", stack="azuretest", preview=False)
    with pytest.raises(SpecError) as error:
        AzureCluster("c", spec)
    assert (
        "is not a known InfiniBand GPU size" in dict(error.value.problems)["nodes[0].instance_type"]
    )
    assert mocks.resources == []


def test_stack_config_must_name_the_location_and_a_key() -> None:
    spec = ClusterSpec.model_validate(example())
    problems = {p.path: p.message for p in stack_config_problems({}, spec)}
    assert (
        "pulumi config set azure-native:location eastus" in problems["config azure-native:location"]
    )
    assert "SSH keys only" in problems["config railyard:sshPublicKey"]
    other = {"azure-native:location": "westeurope", "railyard:sshPublicKey": "ssh-ed25519 A"}
    (problem,) = stack_config_problems(other, spec)
    assert problem.path == "config azure-native:location"


# --- which instance is which host --------------------------------------------------------------

#: The shape ``az vmss nic list`` prints (properties flattened), two instances.
CLI_NICS = [
    {
        "name": "eth0",
        "virtualMachine": {
            "id": "/subscriptions/0/resourceGroups/rg/providers/Microsoft.Compute/"
            "virtualMachineScaleSets/ndv5-compute/virtualMachines/3"
        },
        "ipConfigurations": [{"name": "ipconfig", "primary": True, "privateIPAddress": "10.0.0.7"}],
    },
    {
        "properties": {  # the REST shape
            "virtualMachine": {"id": ".../virtualMachineScaleSets/ndv5-compute/virtualMachines/1"},
            "ipConfigurations": [{"properties": {"privateIPAddress": "10.0.0.5"}}],
        }
    },
]


def test_scale_set_addresses_read_both_shapes() -> None:
    assert scale_set_addresses(CLI_NICS) == {"3": "10.0.0.7", "1": "10.0.0.5"}
    assert scale_set_addresses({"value": CLI_NICS[1:]}) == {"1": "10.0.0.5"}


def test_hosts_take_instances_in_id_order_and_keep_them() -> None:
    found = {"3": "10.0.0.7", "1": "10.0.0.5", "10": "10.0.0.9"}
    first = assign({}, found, ["gpu01", "gpu02", "gpu03"])
    assert [first[h]["instance_id"] for h in ("gpu01", "gpu02", "gpu03")] == ["1", "3", "10"]
    # instance 3 was replaced by 11: gpu02 takes it, the others keep theirs
    again = assign(first, {"1": "10.0.0.5", "10": "10.0.0.9", "11": "10.0.0.12"}, list(first))
    assert {h: m["instance_id"] for h, m in again.items()} == {
        "gpu01": "1",
        "gpu02": "11",
        "gpu03": "10",
    }
    with pytest.raises(ValueError, match="gpu03 got none"):
        assign({}, {"1": "10.0.0.5", "3": "10.0.0.7"}, ["gpu01", "gpu02", "gpu03"])


def test_members_are_polled_until_every_host_has_an_address() -> None:
    answers = [json.dumps(CLI_NICS[:1]), json.dumps(CLI_NICS)]
    calls: list[list[str]] = []

    def run(argv: Any, timeout: float) -> subprocess.CompletedProcess[str]:
        calls.append(list(argv))
        return subprocess.CompletedProcess(argv, 0, answers[len(calls) - 1], "")

    props = {"resource_group": "rg", "scale_set": "ndv5-compute", "hosts": ["a", "b"]}
    members = read_members(props, {}, run=run, sleep=lambda _: None)
    assert members == {
        "a": {"instance_id": "1", "private_ip": "10.0.0.5"},
        "b": {"instance_id": "3", "private_ip": "10.0.0.7"},
    }
    assert calls[0][:3] == ["az", "vmss", "nic"] and "ndv5-compute" in calls[0]
