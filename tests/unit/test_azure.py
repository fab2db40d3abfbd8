"""The Azure component's resource graph under Pulumi mocks, its inventory through the bastion,
its host keys, the check plan and the job environment of ``Pulumi.azure-ndv5.example.yaml``;
the scale set members' reading on the REST API's documented response
(fabric/targets/azure/dynamic_members.py) and the placement read from instance metadata
(fabric/targets/azure/placement.py)."""

from __future__ import annotations

import base64
import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pulumi
import pytest
import yaml
from conftest import DYNAMIC, Mocks

from fabric.handoff.vars import job_environment
from fabric.spec import ClusterSpec, SpecError, cross_field_problems
from fabric.spec.targets import stack_config_problems
from fabric.state import REPO_ROOT
from fabric.targets.azure.component import AzureCluster, compute_name_prefix
from fabric.targets.azure.dynamic_hostkeys import generate
from fabric.targets.azure.dynamic_members import (
    assign,
    computer_name,
    nic_list_url,
    read_members,
    scale_set_addresses,
)

EXAMPLE = REPO_ROOT / "Pulumi.azure-ndv5.example.yaml"
FIXTURES = REPO_ROOT / "tests" / "fixtures"
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
    address, the scale set members the REST API would list (instance ids 0.., in order), and
    the host key pairs (generated for real)."""

    def outputs(self, args: pulumi.runtime.MockResourceArgs, count: int) -> dict[str, Any]:
        if args.typ == DYNAMIC and "scale_set" in args.inputs:  # the API's instances, in order
            prefix = args.inputs["computer_name_prefix"]
            members = {
                h: {
                    "instance_id": str(i),
                    "private_ip": f"10.0.0.{i + 4}",
                    "computer_name": computer_name(prefix, str(i)),
                }
                for i, h in enumerate(args.inputs["hosts"])
            }
            return {**args.inputs, "members": members}
        if args.typ == DYNAMIC and args.name.endswith("-hostkey"):  # a HostKeyPair
            private, public = generate()
            return {"private_key": private, "public_key": public}
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
    azure = [r for r in mocks.resources if r.typ.startswith("azure-native:")]
    assert all(r.inputs["resourceGroupName"] == "railyard-ndv5" for r in azure)


@pytest.mark.parametrize("mode", ["proxy", "offline"])
def test_no_nat_without_egress_nat(mode: str) -> None:
    egress: dict[str, Any] = {"mode": mode}
    if mode == "proxy":
        egress["proxy"] = "http://proxy.example:3128"
    else:
        egress["image_provides"] = [
            *("munge", "slurmd", "slurmctld", "nvidia-driver", "nvidia-fabricmanager")
        ]
    mocks, _ = build(ClusterSpec.model_validate(example(egress=egress)))
    assert not mocks.of("azure-native:network:NatGateway")
    assert "natGateway" not in mocks.named("c-subnet").inputs
    if mode == "proxy":
        (vmss,) = mocks.of(VMSS)
        data = _custom_data(_inputs(vmss)["virtualMachineProfile"]["osProfile"])
        assert data["apt"] == {"http_proxy": egress["proxy"], "https_proxy": egress["proxy"]}


#: How Pulumi's mocks pass a secret input: wrapped under its signature key.
SECRET_SIG = "4dabf18193072939515e22adb298388d"


def _plain(value: Any) -> Any:
    """``value`` with every secret unwrapped."""
    if isinstance(value, dict):
        if value.get(SECRET_SIG) == "1b47061264138c4ac30d75fd1eb44270":
            return _plain(value["value"])
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _inputs(resource: pulumi.runtime.MockResourceArgs) -> dict[str, Any]:
    return _plain(resource.inputs)


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
    inputs = _inputs(vmss)
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
    profile = _inputs(vmss)["virtualMachineProfile"]
    assert {k: profile.get(k) for k in expected} == expected


def test_head_node_public_with_its_name_at_boot(ndv5: tuple[AzureMocks, dict[str, Any]]) -> None:
    mocks, out = ndv5
    (head,) = mocks.of(VM)
    assert _inputs(head)["hardwareProfile"] == {"vmSize": "Standard_D8s_v5"}
    os_profile = _inputs(head)["osProfile"]
    assert os_profile["computerName"] == "head1"
    data = _custom_data(os_profile)
    assert data["hostname"] == data["fqdn"] == "head1"  # SlurmctldHost=head1
    assert data["preserve_hostname"] is False
    assert _inputs(head)["networkProfile"]["networkInterfaces"][0]["id"] == "c-head1-nic-id"
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


def test_host_keys_are_made_and_pinned_before_first_contact_bastion_first(
    ndv5: tuple[AzureMocks, dict[str, Any]],
) -> None:
    """Every node's host key is railyard's, given at boot by cloud-init and pinned as declared
    (never recorded on trust): the head node its own, the scale set's instances one shared."""
    mocks, out = ndv5
    pins = {r.inputs["host"]: r for r in mocks.of(DYNAMIC) if "host" in r.inputs}
    assert sorted(pins) == ["gpu01", "gpu02", "gpu03", "gpu04", "head1"]
    assert pins["head1"].name == "c-hostkey-bastion"
    assert pins["gpu01"].inputs["jump"]["address"] == out["hosts"]["head1"]["public_ip"]
    assert mocks.names.index("c-hostkey-bastion") < mocks.names.index("c-hostkey-gpu01")
    sources = {h: p.inputs["source"] for h, p in pins.items()}
    assert all(s["declared"] is True and len(s["keys"]) == 1 for s in sources.values())
    assert all(s["keys"][0].startswith("ssh-ed25519 ") for s in sources.values())
    assert len({s["keys"][0] for h, s in sources.items() if h != "head1"}) == 1
    assert sources["head1"]["keys"] != sources["gpu01"]["keys"]
    # the key each VM boots with is the one pinned for it, and the only one it has
    (head,) = mocks.of(VM)
    (vmss,) = mocks.of(VMSS)
    for data, host in (
        (_custom_data(_inputs(head)["osProfile"]), "head1"),
        (_custom_data(_inputs(vmss)["virtualMachineProfile"]["osProfile"]), "gpu01"),
    ):
        assert data["ssh_keys"]["ed25519_public"] == sources[host]["keys"][0]
        assert data["ssh_keys"]["ed25519_private"].startswith("-----BEGIN OPENSSH PRIVATE KEY")
        assert data["ssh_deletekeys"] is True and data["ssh_genkeytypes"] == []
    # the private key reaches Azure only inside a secret
    assert head.inputs["osProfile"][SECRET_SIG] and vmss.inputs["virtualMachineProfile"][SECRET_SIG]
    pairs = [r for r in mocks.of(DYNAMIC) if r.name.endswith("-hostkey")]
    assert sorted(r.name for r in pairs) == ["c-compute-hostkey", "c-head1-hostkey"]
    assert not any(r.inputs.get("private_key") for r in pairs)  # made by the provider


def test_the_private_host_key_is_a_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    """The pair's private half is a secret output, the customData carrying it a secret; the
    provider makes a real ed25519 pair once and never changes it."""
    from fabric.targets.azure.component import with_host_key
    from fabric.targets.azure.dynamic_hostkeys import HostKeyPair, HostKeyPairProvider

    options: list[pulumi.ResourceOptions | None] = []
    real = pulumi.dynamic.Resource.__init__

    def spy(self: Any, provider: Any, name: str, props: Any, opts: Any = None) -> None:
        options.append(opts)
        real(self, provider, name, props, opts)

    monkeypatch.setattr(pulumi.dynamic.Resource, "__init__", spy)
    pulumi.runtime.set_mocks(AzureMocks(), project="railyard", stack="azuretest", preview=False)
    seen: list[bool] = []

    @pulumi.runtime.test
    def run() -> pulumi.Output[Any]:
        data = with_host_key("#cloud-config\n{}\n", HostKeyPair("k-hostkey"))
        return pulumi.Output.all(data, data.is_secret()).apply(lambda v: seen.append(v[1]))

    run()
    assert seen == [True]
    (opts,) = options
    assert opts is not None and opts.additional_secret_outputs == ["private_key"]
    made = HostKeyPairProvider().create({}).outs
    assert made["private_key"].startswith("-----BEGIN OPENSSH PRIVATE KEY-----\n")
    assert made["public_key"].split()[0] == "ssh-ed25519" and len(made["public_key"].split()) == 2
    assert HostKeyPairProvider().diff("id", made, {}).changes is False


def test_compute_nodes_are_named_by_azure_and_slurm_by_the_spec(
    ndv5: tuple[AzureMocks, dict[str, Any]],
) -> None:
    """The scale set's computer name prefix (at most 15 characters) and each host's computer
    name in the hosts output; the inventory names the hosts as declared."""
    mocks, out = ndv5
    (vmss,) = mocks.of(VMSS)
    prefix = _inputs(vmss)["virtualMachineProfile"]["osProfile"]["computerNamePrefix"]
    assert prefix == "ndv5-"
    assert [out["hosts"][h]["computer_name"] for h in ("gpu01", "gpu04")] == [
        "ndv5-000000",
        "ndv5-000003",
    ]
    assert "hostname" not in _custom_data(_inputs(vmss)["virtualMachineProfile"]["osProfile"])
    assert sorted(out["inventory"]["all"]["hosts"]) == ["gpu01", "gpu02", "gpu03", "gpu04", "head1"]
    long = ClusterSpec.model_validate({**example(), "name": "a-very-long-cluster-name"})
    assert len(compute_name_prefix(long)) == 15


def test_computer_names_are_the_prefix_and_the_base36_instance_id() -> None:
    """Azure's own example: prefix nsgvmss, instance 85 -> nsgvmss00002D."""
    assert computer_name("nsgvmss", "85") == "nsgvmss00002D"
    assert computer_name("ndv5-", "0") == "ndv5-000000"
    assert computer_name("ndv5-", "36") == "ndv5-000010"


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
    # Azure lays out the fabric: no declared tree; Slurm's topology is the provider's placement
    assert "slurm_provider_topology" in families["slurm_topology"]["not_generated"]
    (placed,) = families["slurm_provider_topology"]["parameters"]
    assert placed == {
        "provider": "azure",
        "controller": "head1",
        "nodes": ["gpu01", "gpu02", "gpu03", "gpu04"],
        "region": "eastus",
    }
    for family in ("azure_sriov", "azure_nccl_topology"):
        assert [p["host"] for p in families[family]["parameters"]] == plan.slurm_nodes
    assert plan.slurm_nodes == ["gpu01", "gpu02", "gpu03", "gpu04"]
    assert plan.slurm_controller == "head1"


def test_check_plan_command_on_the_example(capsys: pytest.CaptureFixture[str]) -> None:
    """``railyard check --plan --spec Pulumi.azure-ndv5.example.yaml`` lists the InfiniBand,
    SM, NCCL and Slurm-topology families with parameters, and Azure's own."""
    from fabric.cli import main

    assert main(["check", "--plan", "--spec", str(EXAMPLE), "--json"]) == 0
    families = json.loads(capsys.readouterr().out)["families"]
    generated = {name for name, family in families.items() if "parameters" in family}
    assert {"ports", "ib", "phy", "sm", "ib_pairs", "nccl", "gpudirect", "slurm"} <= generated
    assert {"slurm_provider_topology", "azure_sriov", "azure_nccl_topology"} <= generated
    assert "slurm_topology" not in generated  # Azure's fabric has no declared tree


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

#: The REST API's documented response of "Network Interfaces - List Virtual Machine Scale Set
#: Network Interfaces" (tests/fixtures/SOURCES.md): instances 0 and 1 of vmss1.
NIC_LIST = json.loads((FIXTURES / "azure_vmss_nic_list__restspecs__example.json").read_text())
VMSS_ID = "/subscriptions/subid/resourceGroups/rg1/providers/Microsoft.Compute/virtualMachineScaleSets/vmss1"


def test_scale_set_addresses_read_the_documented_response() -> None:
    assert scale_set_addresses(NIC_LIST) == {"0": "10.0.0.4", "1": "10.0.0.5"}


@pytest.mark.parametrize(
    ("page", "message"),
    [([], "no 'value' array"), ({"value": [{"name": "nic1"}]}, "value[0] has no 'properties'")],
)
def test_a_page_that_is_no_rest_list_is_named(page: Any, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        scale_set_addresses(page)


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


def _rest(*bodies: Any) -> tuple[Any, list[tuple[list[str], float]]]:
    """A runner answering ``az rest`` with ``bodies`` in turn, and the calls it saw."""
    calls: list[tuple[list[str], float]] = []

    def run(argv: Any, timeout: float) -> subprocess.CompletedProcess[str]:
        calls.append((list(argv), timeout))
        return subprocess.CompletedProcess(argv, 0, json.dumps(bodies[len(calls) - 1]), "")

    return run, calls


def test_members_are_polled_and_paged_until_every_host_has_an_address() -> None:
    """The first read finds one instance; the second follows nextLink to the second page."""
    first, second = NIC_LIST["value"]
    run, calls = _rest(
        {"value": [second]},
        {"value": [second], "nextLink": "https://example.invalid/next"},
        {"value": [first]},
    )
    props = {"scale_set_id": VMSS_ID, "hosts": ["a", "b"], "computer_name_prefix": "ndv5-"}
    members = read_members(props, {}, run=run, sleep=lambda _: None)
    assert members == {
        "a": {"instance_id": "0", "private_ip": "10.0.0.4", "computer_name": "ndv5-000000"},
        "b": {"instance_id": "1", "private_ip": "10.0.0.5", "computer_name": "ndv5-000001"},
    }
    argv, timeout = calls[0]
    assert argv[:4] == ["az", "rest", "--method", "get"]
    assert argv[argv.index("--url") + 1] == nic_list_url(VMSS_ID)
    assert nic_list_url(VMSS_ID).startswith(f"{VMSS_ID}/networkInterfaces?api-version=")
    assert calls[2][0][calls[2][0].index("--url") + 1] == "https://example.invalid/next"
    assert all(t <= 120 for _, t in calls)


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        (FileNotFoundError(), "az not found"),
        (subprocess.TimeoutExpired(["az"], 120), "no answer within 120 s"),
        (subprocess.CompletedProcess([], 1, "", "ERROR: (AuthorizationFailed) denied\n"), "exit 1"),
        (subprocess.CompletedProcess([], 0, "<html>", ""), "printed no JSON"),
    ],
)
def test_an_az_failure_is_one_line(answer: Any, message: str) -> None:
    def run(argv: Any, timeout: float) -> subprocess.CompletedProcess[str]:
        if isinstance(answer, BaseException):
            raise answer
        return answer

    props = {"scale_set_id": VMSS_ID, "hosts": ["a"], "computer_name_prefix": "p"}
    with pytest.raises(RuntimeError, match=message) as error:
        read_members(props, {}, run=run, sleep=lambda _: None)
    assert "\n" not in str(error.value)


# --- where Azure places the compute nodes -------------------------------------------------------

IMDS_IN_SCALE_SET = (FIXTURES / "azure_imds_instance__azuredocs__1.json").read_text()
IMDS_NO_SCALE_SET = (FIXTURES / "azure_imds_instance__azuredocs__2.json").read_text()


def test_placement_is_the_scale_sets_placement_group() -> None:
    """Documented IMDS responses: two VMs of one placement group under one switch; a VM of no
    scale set is left out and named."""
    from fabric.targets.azure.placement import graph
    from fabric.topology.render import slurm_switch_view

    readings = {
        "gpu01": (IMDS_IN_SCALE_SET, 0, ""),
        "gpu02": (IMDS_IN_SCALE_SET, 0, ""),
        "gpu03": (IMDS_NO_SCALE_SET, 0, ""),
    }
    placed = graph(readings, "eastus")
    view = slurm_switch_view(placed, ["gpu01", "gpu02", "gpu03"])
    assert view == {"pg-f67c14ab-e92c-408c-ae2d-da15866ec79a": (["gpu01", "gpu02"], [])}
    (warning,) = placed.warnings
    assert warning.startswith("gpu03: no placement group")


def test_the_placement_command_reads_instance_metadata_without_a_proxy() -> None:
    from fabric.targets.azure.model import PLACEMENT_COMMAND

    assert "--noproxy '*'" in PLACEMENT_COMMAND and "-H Metadata:true" in PLACEMENT_COMMAND
    assert "http://169.254.169.254/metadata/instance?api-version=" in PLACEMENT_COMMAND
    assert "-m 5" in PLACEMENT_COMMAND  # every call has a timeout


@pytest.mark.parametrize(
    ("reading", "message"),
    [
        (("", 7, "curl: (7) Failed to connect"), "did not answer \\(exit 7\\)"),
        (("<html>", 0, ""), "not JSON"),
        (('{"network": {}}', 0, ""), "no compute.placementGroupId"),
    ],
)
def test_an_unreadable_placement_is_a_harness_error(
    reading: tuple[str, int, str], message: str
) -> None:
    from fabric.targets.azure.placement import graph
    from fabric.verify.harness import HarnessError

    with pytest.raises(HarnessError, match=f"gpu01: .*{message}"):
        graph({"gpu01": reading}, "")


def test_the_hand_off_renders_slurms_topology_from_the_placement_groups(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The hand-off's variables name Azure's placement command; ``railyard topology
    --from-placement --provider azure`` (what site.yml runs on the nodes' readings) writes one
    switch per placement group."""
    from fabric.cli import main
    from fabric.handoff.vars import role_vars_from_spec
    from fabric.spec import load_spec
    from fabric.targets.azure.model import PLACEMENT_COMMAND

    got = role_vars_from_spec(load_spec(EXAMPLE))
    assert got["railyard_topology_provider"] == "azure"
    assert got["railyard_placement_command"] == PLACEMENT_COMMAND
    assert got["railyard_topology_nodes"] == "gpu[01-04]"
    readings = tmp_path / "placement.json"
    reading = {"stdout": IMDS_IN_SCALE_SET, "rc": 0, "stderr": ""}
    readings.write_text(json.dumps({h: reading for h in ("gpu01", "gpu02")}))
    argv = ["topology", "--from-placement", str(readings), "--provider", "azure"]
    assert main([*argv, "--nodes", "gpu[01-02]"]) == 0
    out = capsys.readouterr().out
    assert "SwitchName=pg-f67c14ab-e92c-408c-ae2d-da15866ec79a Nodes=gpu[01-02]" in out
