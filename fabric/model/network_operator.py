"""The NVIDIA Network Operator's objects for a spec's ``kubernetes.network_operator``: the
``NicClusterPolicy``, one network object per secondary network, and an nv-ipam ``IPPool`` for
each network whose IPAM is nv-ipam. Pure: plain dicts, ready to be applied.

Field names follow the operator's ``mellanox.com/v1alpha1`` API and nv-ipam's
``nv-ipam.nvidia.com/v1alpha1``:

* the driver: ``ofedDriver`` (the DOCA driver container) only with ``driver: container``; with
  ``driver: host`` the nodes keep the RDMA stack railyard installs (``rdma_stack``);
* the device plugin: ``rdmaSharedDevicePlugin`` (resource ``rdma/<resource_name>``, shared by
  up to ``hca_max`` pods, selecting Mellanox HCAs: by the declared RoCE netdevs, else by link
  type) or ``sriovDevicePlugin`` (resource ``nvidia.com/<resource_name>``, RDMA-capable VFs);
* ``secondaryNetwork``: Multus and the CNI plugins, and the IPoIB CNI when a network is IPoIB;
  ``nvIpam`` when a network uses it;
* networks: ``IPoIBNetwork``, ``MacvlanNetwork`` (bridge mode) or ``HostDeviceNetwork`` in the
  ``default`` namespace, their ``ipam`` the CNI IPAM configuration as JSON text.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fabric.spec import ClusterSpec
    from fabric.spec.models import NetworkOperatorSpec, SecondaryNetwork

API = "mellanox.com/v1alpha1"
IPAM_API = "nv-ipam.nvidia.com/v1alpha1"
POLICY_NAME = "nic-cluster-policy"  # the operator acts on the one policy of this name
MELLANOX_VENDOR = "15b3"
NETWORK_KINDS = {
    "ipoib": "IPoIBNetwork",
    "macvlan": "MacvlanNetwork",
    "host-device": "HostDeviceNetwork",
}


def _operator(spec: ClusterSpec) -> NetworkOperatorSpec:
    if spec.kubernetes is None:
        raise ValueError(f"spec {spec.name!r} has no kubernetes section")
    return spec.kubernetes.network_operator


def _image(op: NetworkOperatorSpec, name: str, version: str | None = None) -> dict[str, Any]:
    return {"image": name, "repository": op.repository, "version": version or op.version}


def _device_plugin(spec: ClusterSpec, op: NetworkOperatorSpec) -> tuple[str, dict[str, Any]]:
    """The device plugin's NicClusterPolicy key and its settings (its config as JSON text)."""
    if op.device_plugin == "sriov":
        config = {
            "resourceList": [
                {
                    "resourcePrefix": "nvidia.com",
                    "resourceName": op.resource_name,
                    "selectors": {"vendors": [MELLANOX_VENDOR], "isRdma": True},
                }
            ]
        }
        return "sriovDevicePlugin", {
            **_image(op, "sriov-network-device-plugin"),
            "config": json.dumps(config, indent=2),
        }
    netdevs = sorted({h.netdev for g in spec.nodes for h in g.hcas if h.netdev is not None})
    selectors: dict[str, list[str]] = {"vendors": [MELLANOX_VENDOR]}
    if netdevs:
        selectors["ifNames"] = netdevs
    else:
        selectors["linkTypes"] = ["infiniband" if spec.fabric.kind == "infiniband" else "ether"]
    config = {
        "configList": [
            {"resourceName": op.resource_name, "rdmaHcaMax": op.hca_max, "selectors": selectors}
        ]
    }
    return "rdmaSharedDevicePlugin", {
        **_image(op, "k8s-rdma-shared-dev-plugin"),
        "config": json.dumps(config, indent=2),
    }


def nic_cluster_policy(spec: ClusterSpec) -> dict[str, Any]:
    """The ``NicClusterPolicy`` of ``spec`` (which has a kubernetes section)."""
    op = _operator(spec)
    policy: dict[str, Any] = {}
    if op.driver == "container":
        policy["ofedDriver"] = _image(op, "doca-driver", op.driver_version)
    key, plugin = _device_plugin(spec, op)
    policy[key] = plugin
    kinds = {net.kind for net in op.secondary_networks}
    if kinds:
        secondary = {
            "cniPlugins": _image(op, "plugins"),
            "multus": _image(op, "multus-cni"),
        }
        if "ipoib" in kinds:
            secondary["ipoib"] = _image(op, "ipoib-cni")
        policy["secondaryNetwork"] = secondary
    if any(net.ipam.type == "nv-ipam" for net in op.secondary_networks):
        policy["nvIpam"] = {**_image(op, "nvidia-k8s-ipam"), "enableWebhook": False}
    return {
        "apiVersion": API,
        "kind": "NicClusterPolicy",
        "metadata": {"name": POLICY_NAME},
        "spec": policy,
    }


def _compute_hosts(spec: ClusterSpec) -> int:
    return sum(len(g.hosts) for g in spec.nodes if g.role == "compute" and g.hcas)


def _ipam(spec: ClusterSpec, net: SecondaryNetwork) -> dict[str, Any]:
    """The CNI IPAM configuration of ``net``."""
    ipam = net.ipam
    if ipam.type == "nv-ipam":
        return {"type": "nv-ipam", "poolName": net.name}
    if ipam.type == "whereabouts":
        config: dict[str, Any] = {"type": "whereabouts", "range": str(ipam.range)}
        if ipam.exclude:
            config["exclude"] = [str(e) for e in ipam.exclude]
    else:  # host-local: no exclusions (a rule refuses them)
        config = {"type": "host-local", "subnet": str(ipam.range)}
    if ipam.gateway is not None:
        config["gateway"] = str(ipam.gateway)
    return config


def ip_pool(spec: ClusterSpec, net: SecondaryNetwork, namespace: str) -> dict[str, Any]:
    """nv-ipam's ``IPPool`` for ``net``: the range split into equal per-node blocks (one per
    compute node with HCAs, a power of two), the gateway and exclusions carried over."""
    ipam = net.ipam
    usable = ipam.range.num_addresses - 2  # network and broadcast
    per_node = usable // max(1, _compute_hosts(spec))
    block = 1 << max(1, per_node.bit_length() - 1) if per_node >= 2 else 2
    pool: dict[str, Any] = {"subnet": str(ipam.range), "perNodeBlockSize": block}
    if ipam.gateway is not None:
        pool["gateway"] = str(ipam.gateway)
    if ipam.exclude:
        pool["exclusions"] = [
            {"startIP": str(e.network_address), "endIP": str(e.broadcast_address)}
            for e in ipam.exclude
        ]
    return {
        "apiVersion": IPAM_API,
        "kind": "IPPool",
        "metadata": {"name": net.name, "namespace": namespace},
        "spec": pool,
    }


def network_object(spec: ClusterSpec, net: SecondaryNetwork) -> dict[str, Any]:
    """The operator's network object for ``net`` (its NetworkAttachmentDefinition's source)."""
    op = _operator(spec)
    body: dict[str, Any] = {"networkNamespace": "default"}
    if net.kind == "host-device":
        body["resourceName"] = f"nvidia.com/{op.resource_name}"
    else:
        body["master"] = net.master
    if net.kind == "macvlan":
        body["mode"] = "bridge"
    body["ipam"] = json.dumps(_ipam(spec, net), indent=2)
    return {
        "apiVersion": API,
        "kind": NETWORK_KINDS[net.kind],
        "metadata": {"name": net.name},
        "spec": body,
    }


def network_operator_objects(spec: ClusterSpec) -> list[dict[str, Any]]:
    """The NicClusterPolicy, then each network's IPPool (nv-ipam) and network object."""
    op = _operator(spec)
    objects = [nic_cluster_policy(spec)]
    for net in op.secondary_networks:
        if net.ipam.type == "nv-ipam":
            objects.append(ip_pool(spec, net, op.namespace))
        objects.append(network_object(spec, net))
    return objects
