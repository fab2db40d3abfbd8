"""Role variables derived from the spec: values, lab settings, errors, and that every
variable is one a role declares."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from conftest import bare_metal_access

from fabric.handoff.vars import (
    HandoffError,
    role_vars_from_spec,
    write_group_vars,
)
from fabric.spec import SKIP_RULES, ClusterSpec, SpecError, load_spec, spec_from_mapping
from fabric.state import REPO_ROOT
from fabric.topology.from_spec import graph_from_spec
from fabric.topology.render import render


@pytest.fixture(scope="module")
def lab_spec():
    return load_spec(REPO_ROOT / "Pulumi.lab.yaml")


def _mapping(lab_spec, **changes):
    data = lab_spec.model_dump(mode="json", exclude_none=True)
    for dotted, value in changes.items():
        node = data
        *path, last = dotted.split("__")
        for key in path:
            node = node[key]
        node[last] = value
    return spec_from_mapping(data)


def test_lab_subnet_manager_settings_come_from_the_spec(lab_spec):
    out = role_vars_from_spec(lab_spec)
    assert out["subnet_manager_routing_engine"] == "ftree"
    assert out["subnet_manager_sweep_interval"] == 10
    assert out["subnet_manager_mtu"] == 4096
    assert out["subnet_manager_partitions"] == [
        {"name": "Default", "pkey": "0x7fff", "members": "ALL", "membership": "full", "ipoib": True}
    ]
    assert out["subnet_manager_require_kernel_umad"] is False


def test_lab_slurm_nodes_carry_declared_gpus(lab_spec):
    out = role_vars_from_spec(lab_spec)
    assert out["slurm_controller_host"] == "ctl1"
    assert [n["name"] for n in out["slurm_nodes"]] == [f"gpu0{i}" for i in range(1, 9)]
    assert out["slurm_nodes"][0]["gres"] == [{"name": "gpu", "type": "h100", "count": 8}]
    assert "cpus" not in out["slurm_nodes"][0]
    assert out["slurm_partitions"] == [
        {"name": "gpu", "nodes": "gpu[01-08]", "default": True, "max_time": "INFINITE"}
    ]
    assert out["slurm_slurmd_parameters"] == "config_overrides"


def test_lab_topology_conf_lists_only_slurm_nodes(lab_spec):
    conf = role_vars_from_spec(lab_spec)["slurm_topology_conf"]
    assert [line for line in conf.splitlines() if not line.startswith("#")] == [
        "SwitchName=leaf01 Nodes=gpu[01-05]",
        "SwitchName=leaf02 Nodes=gpu[06-08]",
        "SwitchName=spine01 Switches=leaf[01-02]",
    ]


def test_tree_topology_conf_skips_hosts_outside_slurm(lab_spec):
    conf = render(graph_from_spec(lab_spec), "tree", ["gpu01"])
    assert conf.splitlines()[1:] == [
        "SwitchName=leaf01 Nodes=gpu01",
        "SwitchName=spine01 Switches=leaf01",
    ]


def test_infiniband_topology_is_discovered_and_rendered_for_the_slurm_nodes(lab_spec):
    out = role_vars_from_spec(lab_spec)
    assert out["railyard_topology_discover"] is True
    assert out["railyard_topology_nodes"] == "gpu[01-08]"


def test_rdma_stack_is_the_distributions_with_the_mad_tools(lab_spec):
    out = role_vars_from_spec(lab_spec)
    assert out["rdma_stack_source"] == "distro"
    assert out["rdma_stack_extra_packages"] == ["infiniband-diags"]
    assert out["rdma_stack_version"] == ""


def test_declared_rdma_stack_reaches_the_role(lab_spec):
    pinned = role_vars_from_spec(_mapping(lab_spec, rdma_stack={"version": "44.0-2"}))
    assert (pinned["rdma_stack_source"], pinned["rdma_stack_version"]) == ("distro", "44.0-2")
    key = "sha256:" + "ab" * 32
    doca = {
        "source": "doca",
        "version": "24.10-1.1.4.0",
        "iso_url": "https://mirror.example/doca.iso",
        "checksum": key,
        "gpg_key_url": "https://mirror.example/GPG-KEY",
        "gpg_key_checksum": key,
    }
    out = role_vars_from_spec(_mapping(lab_spec, rdma_stack=doca))
    assert out["rdma_stack_iso_url"] == doca["iso_url"]
    assert out["rdma_stack_iso_checksum"] == key
    assert out["rdma_stack_repo_gpg_key_url"] == doca["gpg_key_url"]
    assert "rdma_stack_repo_url" not in out


@pytest.mark.parametrize(
    ("stack", "path"),
    [
        ({"source": "doca", "repo_url": "https://m.example/doca"}, "rdma_stack.version"),
        ({"source": "mlnx_ofed", "version": "23.10-1.1.9.0"}, "rdma_stack.repo_url"),
        ({"version": "44.0-2", "repo_url": "https://m.example/x"}, "rdma_stack.repo_url"),
        ({"source": "doca", "checksum": "md5:00"}, "rdma_stack.checksum"),
    ],
    ids=["doca-no-version", "no-url", "distro-with-url", "bad-checksum"],
)
def test_bad_rdma_stack_names_the_field(lab_spec, stack, path):
    data = lab_spec.model_dump(mode="json", exclude_none=True) | {"rdma_stack": stack}
    with pytest.raises(SpecError) as err:
        spec_from_mapping(data)
    assert path in [p.path for p in err.value.problems]


def test_hca_link_type_follows_the_link_layer(lab_spec):
    assert role_vars_from_spec(lab_spec)["hca_mlxconfig"] == {"LINK_TYPE_P1": "IB"}


def test_lab_keeps_the_hosts_block_across_container_restarts(lab_spec):
    out = role_vars_from_spec(lab_spec)
    assert out["cluster_hosts_manage"] is True
    assert out["cluster_hosts_restore_at_boot"] is True


def test_no_topology_without_a_declared_fabric_topology(lab_spec):
    data = lab_spec.model_dump(mode="json", exclude_none=True)
    del data["fabric"]["topology"]
    out = role_vars_from_spec(spec_from_mapping(data))
    assert out["slurm_topology_plugin"] == "none"
    assert out["slurm_topology_conf"] == ""


def test_block_topology_reaches_the_slurm_role(lab_spec):
    """The slurm role, not the hand-off, knows the installed Slurm: it refuses block below 23.11."""
    out = role_vars_from_spec(
        _mapping(lab_spec, slurm__topology_plugin="block", slurm__block_size=3)
    )
    assert out["slurm_topology_plugin"] == "block"
    assert "BlockName=leaf01 Nodes=gpu[01-05]" in out["slurm_topology_conf"].splitlines()
    assert "BlockSizes=3" in out["slurm_topology_conf"].splitlines()
    assert out["railyard_topology_args"] == ["--plugin", "block", "--block-size", "3"]


def test_topology_yaml_reaches_the_slurm_role(lab_spec):
    out = role_vars_from_spec(_mapping(lab_spec, slurm__topology_plugin="yaml"))
    doc = yaml.safe_load(out["slurm_topology_conf"])
    assert out["slurm_topology_plugin"] == "yaml" and doc[0]["topology"] == "fabric"
    assert out["railyard_topology_args"] == ["--plugin", "yaml"]


def test_host_list_partition_members_are_refused(lab_spec):
    data = lab_spec.model_dump(mode="json", exclude_none=True)
    data["fabric"]["infiniband"]["partitions"][0]["members"] = "gpu[01-02]"
    with pytest.raises(SpecError, match=r"partitions\[0\]\.members.*port GUIDs"):
        spec_from_mapping(data)  # validate refuses it first (fabric.spec.rules)
    unchecked = ClusterSpec.model_validate(data, context={SKIP_RULES: True})
    with pytest.raises(HandoffError, match=r"partitions\[0\]\.members"):
        role_vars_from_spec(unchecked)


def test_baremetal_target_gets_no_lab_overrides(lab_spec):
    data = lab_spec.model_dump(mode="json", exclude_none=True)
    data["target"] = "baremetal"
    data.pop("lab", None)
    data.update(bare_metal_access(list(lab_spec.hosts)))
    out = role_vars_from_spec(spec_from_mapping(data))
    assert "subnet_manager_require_kernel_umad" not in out
    assert "slurm_proctrack_type" not in out


def test_roce_fabric_sets_roce_qos_and_no_opensm():
    spec = spec_from_mapping(
        {
            "name": "roce",
            "target": "baremetal",
            "nodes": [
                {
                    "names": "n[1-2]",
                    "hcas": [{"device": "mlx5_0", "link_layer": "Ethernet", "netdev": "ens1f0np0"}],
                },
                {"names": "head", "role": "controller"},
            ],
            "fabric": {"kind": "roce", "mtu": 9000, "roce": {"pfc_priority": 3, "rdma_dscp": 26}},
            **bare_metal_access(["n1", "n2", "head"]),
        }
    )
    out = role_vars_from_spec(spec)
    assert out["roce_qos_interfaces"] == ["ens1f0np0"]
    assert out["roce_qos_mtu"] == 9000
    assert out["roce_qos_tos"] == 106
    assert not any(k.startswith("subnet_manager_") for k in out)
    assert out["slurm_controller_host"] == "head"


def _declared(role: str) -> set[str]:
    path = REPO_ROOT / "roles" / role / "defaults" / "main.yml"
    return set(yaml.safe_load(path.read_text()) or {})


ROLES = (
    "subnet_manager",
    "roce_qos",
    "slurm",
    "rdma_stack",
    "hca",
    "cluster_hosts",
    "efa",
    "gcp_gpudirect",
    "node_health",
)


@pytest.mark.parametrize(
    "stack",
    [
        "Pulumi.lab.yaml",
        "Pulumi.aws-efa.example.yaml",
        "Pulumi.gcp-a3-high.example.yaml",
        "examples/kubernetes-ib.yaml",
    ],
)
def test_every_variable_is_declared_by_its_role(stack):
    out = role_vars_from_spec(load_spec(REPO_ROOT / stack))
    per_host = {k for hosts in out.get("railyard_gcp_gpudirect", {}).values() for k in hosts}
    for key in set(out) | per_host:
        if key.startswith("railyard_"):
            continue
        role = next(r for r in ROLES if key.startswith(r + "_"))
        assert key in _declared(role), f"{key} is not in roles/{role}/defaults/main.yml"


def test_group_vars_file_round_trips_and_is_rewritten_only_on_change(lab_spec, tmp_path):
    path = write_group_vars(lab_spec, tmp_path)
    assert path == tmp_path / "group_vars" / "all.yml"
    assert yaml.safe_load(path.read_text()) == role_vars_from_spec(lab_spec)
    mtime = path.stat().st_mtime_ns
    write_group_vars(lab_spec, tmp_path)
    assert path.stat().st_mtime_ns == mtime


def _cloud(stack: str, **changes: Any):
    data = load_spec(REPO_ROOT / stack).model_dump(mode="json", exclude_none=True)
    for dotted, value in changes.items():
        node = data
        *path, last = dotted.split("__")
        for key in path:
            node = node[int(key)] if key.isdigit() else node[key]
        node[last] = value
    return spec_from_mapping(data)


def test_efa_hand_off_from_the_aws_example():
    out = role_vars_from_spec(_cloud("Pulumi.aws-efa.example.yaml"))
    assert out["railyard_efa_hosts"] == {f"gpu0{i}": 32 for i in range(1, 5)}
    assert out["efa_gpudirect_rdma"] is True
    assert out["efa_ptrace_scope"] == 0
    assert "efa_installer_url" not in out  # no mirror in the example: the AMI carries EFA
    env = out["railyard_job_environment"]
    assert set(env) == {"gpu01", "gpu02", "gpu03", "gpu04"}  # not the head node
    assert env["gpu01"] == {
        "all": {"FI_PROVIDER": "efa", "FI_EFA_USE_DEVICE_RDMA": "1"},
        "multinode": {},
    }
    assert out["slurm_task_prolog"] is True
    assert out["slurm_prolog_epilog_dirs"] is False


def test_efa_installer_and_p4d_without_gpudirect():
    url = "https://mirror.example.internal/aws-efa-installer-1.38.0.tar.gz"
    checksum = "sha256:" + "ab" * 32
    out = role_vars_from_spec(
        _cloud(
            "Pulumi.aws-efa.example.yaml",
            nodes__0__instance_type="p4d.24xlarge",
            nodes__0__gpu_type="a100",
            aws__gpudirect_rdma=False,
            aws__efa_installer_url=url,
            aws__efa_installer_version="1.38.0",
            aws__efa_installer_checksum=checksum,
        )
    )
    assert set(out["railyard_efa_hosts"].values()) == {4}
    assert (out["efa_installer_url"], out["efa_installer_checksum"]) == (url, checksum)
    assert out["efa_installer_version"] == "1.38.0"
    assert out["efa_gpudirect_rdma"] is False
    assert out["railyard_job_environment"]["gpu01"]["all"] == {"FI_PROVIDER": "efa"}


def test_efa_installer_url_without_checksum_is_a_spec_problem_naming_the_field():
    with pytest.raises(SpecError, match=r"aws.efa_installer_checksum: required with"):
        _cloud(
            "Pulumi.aws-efa.example.yaml",
            aws__efa_installer_url="https://mirror.example.internal/efa.tar.gz",
        )


def test_gcp_a3_high_hand_off():
    out = role_vars_from_spec(_cloud("Pulumi.gcp-a3-high.example.yaml"))
    a3 = out["railyard_gcp_gpudirect"]
    assert set(a3) == {"a3-01", "a3-02"}
    assert a3["a3-01"] == {
        "gcp_gpudirect_machine_type": "a3-highgpu-8g",
        "gcp_gpudirect_transport": "gpudirect-tcpx",
        "gcp_gpudirect_subnets": [
            "172.16.0.0/20",
            "172.16.16.0/20",
            "172.16.32.0/20",
            "172.16.48.0/20",
        ],
        "gcp_gpudirect_mtu": 8244,
    }
    env = out["railyard_job_environment"]["a3-01"]
    assert env["all"] == {}
    assert env["multinode"]["NCCL_NET"] == "GPUDirectTCPX_v7"
    assert env["multinode"]["NCCL_GPUDIRECTTCPX_UNIX_CLIENT_PREFIX"] == "/run/tcpx-${SLURM_JOB_ID}"
    assert out["slurm_prolog_epilog_dirs"] is True
    assert out["railyard_roce_hosts"] == []


def test_gcp_a3_mega_and_ultra():
    mega = role_vars_from_spec(
        _cloud(
            "Pulumi.gcp-a3-high.example.yaml",
            nodes__0__instance_type="a3-megagpu-8g",
            gcp__gpu_subnet_cidrs=[],
        )
    )
    host = mega["railyard_gcp_gpudirect"]["a3-01"]
    assert host["gcp_gpudirect_transport"] == "gpudirect-tcpxo"
    assert len(set(host["gcp_gpudirect_subnets"])) == 8
    assert "NCCL_FASTRAK_IFNAME" in mega["railyard_job_environment"]["a3-01"]["multinode"]
    ultra = role_vars_from_spec(
        _cloud(
            "Pulumi.gcp-a3-high.example.yaml",
            nodes__0__instance_type="a3-ultragpu-8g",
            nodes__0__gpu_type="h200",
            gcp__gpu_subnet_cidrs=[],
            gcp__region="europe-west1",  # the zones the catalog knows offer A3 Ultra
            gcp__zone="europe-west1-b",
        )
    )
    assert ultra["railyard_roce_hosts"] == ["a3-01", "a3-02"]
    assert ultra["railyard_gcp_gpudirect"]["a3-01"]["gcp_gpudirect_mtu"] == 8896
    ultra_env = ultra["railyard_job_environment"]["a3-01"]  # gIB, multi-node jobs only
    assert ultra_env["all"] == {}
    assert ultra_env["multinode"]["NCCL_NET"] == "gIB"
    assert ultra_env["multinode"]["LD_LIBRARY_PATH"].startswith("/usr/local/gib/lib64:")
    assert ultra["slurm_task_prolog"] is True
    assert ultra["slurm_prolog_epilog_dirs"] is False
