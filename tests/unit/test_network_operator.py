"""The Network Operator's objects from a spec (fabric.model.network_operator)."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from fabric.model.network_operator import (
    ip_pool,
    network_operator_objects,
    nic_cluster_policy,
)
from fabric.spec import load_spec, spec_from_mapping
from fabric.state import REPO_ROOT

SPECS = REPO_ROOT / "tests" / "unit" / "specs" / "valid"


def _spec(base: str, kubernetes: dict[str, Any] | None = None, **extra: Any) -> Any:
    data = yaml.safe_load((SPECS / f"{base}.yaml").read_text())
    if kubernetes is not None:
        data["orchestrator"] = "both"
        data["kubernetes"] = kubernetes
    data.update(extra)
    return spec_from_mapping(data)


def _roce(network_operator: dict[str, Any]) -> Any:
    return _spec(
        "roce",
        {
            "api_server": "https://10.10.0.2:6443",
            "token": {"config": "kubernetesToken"},
            "network_operator": {"repository": "registry.lab.example/mellanox", **network_operator},
        },
    )


def test_lab_policy_shares_infiniband_hcas_with_ipoib_over_nv_ipam() -> None:
    spec = load_spec(SPECS / "kubernetes.yaml")
    policy, pool, network = network_operator_objects(spec)
    assert (policy["apiVersion"], policy["kind"]) == ("mellanox.com/v1alpha1", "NicClusterPolicy")
    assert policy["metadata"] == {"name": "nic-cluster-policy"}
    body = policy["spec"]
    assert "ofedDriver" not in body  # driver: host keeps the nodes' RDMA stack
    plugin = body["rdmaSharedDevicePlugin"]
    assert (plugin["image"], plugin["repository"], plugin["version"]) == (
        "k8s-rdma-shared-dev-plugin",
        "registry.lab.example/mellanox",
        "network-operator-v26.4.1",
    )
    assert json.loads(plugin["config"]) == {
        "configList": [
            {
                "resourceName": "rdma_shared_device_a",
                "rdmaHcaMax": 63,
                "selectors": {"vendors": ["15b3"], "linkTypes": ["infiniband"]},
            }
        ]
    }
    assert set(body["secondaryNetwork"]) == {"cniPlugins", "multus", "ipoib"}
    assert body["nvIpam"]["enableWebhook"] is False
    assert pool == {
        "apiVersion": "nv-ipam.nvidia.com/v1alpha1",
        "kind": "IPPool",
        "metadata": {"name": "ib-net", "namespace": "nvidia-network-operator"},
        "spec": {"subnet": "198.18.64.0/20", "perNodeBlockSize": 256, "gateway": "198.18.64.1"},
    }
    assert (network["kind"], network["spec"]["master"]) == ("IPoIBNetwork", "ib0")
    assert json.loads(network["spec"]["ipam"]) == {"type": "nv-ipam", "poolName": "ib-net"}


def test_roce_policy_selects_the_declared_netdevs_and_macvlan_uses_whereabouts() -> None:
    spec = _roce(
        {
            "secondary_networks": [
                {
                    "name": "roce-net",
                    "kind": "macvlan",
                    "master": "ens1np0",
                    "ipam": {
                        "type": "whereabouts",
                        "range": "10.20.0.0/16",
                        "exclude": ["10.20.0.0/24"],
                    },
                }
            ]
        }
    )
    policy, network = network_operator_objects(spec)
    config = json.loads(policy["spec"]["rdmaSharedDevicePlugin"]["config"])
    selectors = config["configList"][0]["selectors"]
    assert selectors == {"vendors": ["15b3"], "ifNames": [f"ens{n}np0" for n in range(1, 9)]}
    assert "ipoib" not in policy["spec"]["secondaryNetwork"]
    assert "nvIpam" not in policy["spec"]
    assert network["kind"] == "MacvlanNetwork"
    assert network["spec"]["mode"] == "bridge"
    assert json.loads(network["spec"]["ipam"]) == {
        "type": "whereabouts",
        "range": "10.20.0.0/16",
        "exclude": ["10.20.0.0/24"],
    }


def test_sriov_host_device_network_takes_the_plugins_resource() -> None:
    spec = _roce(
        {
            "device_plugin": "sriov",
            "resource_name": "hostdev",
            "driver": "container",
            "driver_version": "doca3.4.1-26.04-1.1.0.0-1",
            "secondary_networks": [
                {"name": "vf-net", "kind": "host-device", "ipam": {"range": "10.30.0.0/24"}}
            ],
        }
    )
    policy, pool, network = network_operator_objects(spec)
    body = policy["spec"]
    assert body["ofedDriver"] == {
        "image": "doca-driver",
        "repository": "registry.lab.example/mellanox",
        "version": "doca3.4.1-26.04-1.1.0.0-1",
    }
    assert "rdmaSharedDevicePlugin" not in body
    resource = json.loads(body["sriovDevicePlugin"]["config"])["resourceList"][0]
    assert resource == {
        "resourcePrefix": "nvidia.com",
        "resourceName": "hostdev",
        "selectors": {"vendors": ["15b3"], "isRdma": True},
    }
    assert network["kind"] == "HostDeviceNetwork"
    assert network["spec"]["resourceName"] == "nvidia.com/hostdev"
    assert "master" not in network["spec"]
    assert pool["spec"]["perNodeBlockSize"] == 32  # 254 addresses over 4 nodes: 63 -> 32


def test_pool_exclusions_are_address_ranges() -> None:
    spec = _roce(
        {
            "secondary_networks": [
                {
                    "name": "roce-net",
                    "kind": "macvlan",
                    "master": "ens2np0",
                    "ipam": {"range": "10.20.0.0/22", "exclude": ["10.20.0.0/28"]},
                }
            ]
        }
    )
    net = spec.kubernetes.network_operator.secondary_networks[0]
    pool = ip_pool(spec, net, "ns")
    assert pool["spec"]["exclusions"] == [{"startIP": "10.20.0.0", "endIP": "10.20.0.15"}]


def test_a_spec_without_kubernetes_is_refused() -> None:
    with pytest.raises(ValueError, match="has no kubernetes section"):
        nic_cluster_policy(load_spec(SPECS / "lab.yaml"))
