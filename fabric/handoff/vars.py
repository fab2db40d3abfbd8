"""Role variables from the cluster spec: the spec is the one source of every role's settings.

``role_vars_from_spec(spec)`` returns one flat mapping, written as
``state/<stack>/group_vars/all.yml`` next to the inventory, so that the hand-off and a plain
``ansible-playbook -i state/<stack>/inventory.yml`` see the same values. Per-host values
(``subnet_manager_priority``) are in the inventory itself (``fabric.inventory``).
Every key is a variable a role declares in its ``defaults/main.yml``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from fabric.hostlist import compress
from fabric.spec import ClusterSpec
from fabric.topology.from_spec import graph_from_spec
from fabric.topology.render import render

#: OpenSM partition member keywords (man opensm, PARTITION CONFIGURATION).
SM_MEMBER_KEYWORDS = ("ALL", "ALL_CAS", "ALL_SWITCHES", "SELF")

#: The lab's nodes are containers: what their kernel and limits allow (docs/lab.md).
LAB_SUBNET_MANAGER = {
    # ibsim + umad2sim: no kernel umad device for systemd's unit condition to find.
    "subnet_manager_require_kernel_umad": False,
    # Fail over in ~6 s instead of ~40 s, so failover drills stay short.
    "subnet_manager_sminfo_polling_timeout": 2000,
    "subnet_manager_polling_retry_number": 2,
}
LAB_CLUSTER_HOSTS = {
    # Podman bind-mounts /etc/hosts (no rename over it) and writes a fresh one at every
    # container start (a Redfish power cycle): write in place, put the block back at boot.
    "cluster_hosts_unsafe_writes": True,
    "cluster_hosts_restore_at_boot": True,
}
LAB_SLURM = {
    # Declared CPUs, memory and GPUs are reported as declared: the containers have 2 CPUs
    # and no GPUs.
    "slurm_slurmd_parameters": "config_overrides",
    # No cgroup tree the container controls.
    "slurm_proctrack_type": "proctrack/linuxproc",
    "slurm_task_plugin": "task/none",
    # Declared GPUs are absent: one placeholder file per GPU as its GRES File.
    "slurm_gres_placeholder_dir": "/var/lib/railyard/gres",
    # Container hard limits (nofile 1024, memlock 8 MiB) are below the units' own.
    "slurm_service_limits": {"LimitNOFILE": 1024, "LimitMEMLOCK": 8388608},
}


class _Dumper(yaml.SafeDumper):
    """Safe YAML with multi-line strings (topology.conf) as literal blocks."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


class HandoffError(ValueError):
    """The spec asks for something the roles cannot do; the message names the field."""


def role_vars_from_spec(spec: ClusterSpec) -> dict[str, Any]:
    """Return the group_vars for ``all``: every role's settings derived from ``spec``."""
    out: dict[str, Any] = {
        "railyard_cluster": spec.name,
        "railyard_target": spec.target,
        "railyard_fabric_kind": spec.fabric.kind,
    }
    out |= cluster_hosts_vars(spec)
    out |= rdma_stack_vars(spec)
    out |= hca_vars(spec)
    out |= subnet_manager_vars(spec)
    out |= roce_qos_vars(spec)
    out |= slurm_vars(spec)
    return out


def cluster_hosts_vars(spec: ClusterSpec) -> dict[str, Any]:
    """The /etc/hosts block: on for every target (Slurm needs the names); lab specifics."""
    out: dict[str, Any] = {"cluster_hosts_manage": True}
    if spec.target == "lab":
        out |= LAB_CLUSTER_HOSTS
    return out


def rdma_stack_vars(spec: ClusterSpec) -> dict[str, Any]:
    """The RDMA userspace: the distribution's rdma-core. The spec names no vendor stack
    (DOCA-OFED / MLNX_OFED need a repository or ISO the spec does not carry), and the lab's
    nodes have no driver to restart."""
    out: dict[str, Any] = {"rdma_stack_source": "distro"}
    if spec.fabric.kind == "infiniband":
        # The MAD tools the hand-off and the checks use (ibstat, ibnetdiscover, sminfo).
        out["rdma_stack_extra_packages"] = ["infiniband-diags"]
    if spec.target == "lab":
        out["rdma_stack_restart_driver"] = False
    return out


#: ConnectX LINK_TYPE_P<n> per HCA link layer (mlxconfig labels).
LINK_TYPES = {"InfiniBand": "IB", "Ethernet": "ETH"}


def hca_vars(spec: ClusterSpec) -> dict[str, Any]:
    """ConnectX port link types from the HCAs' declared link layer.

    One value for every fabric host (group_vars for all): the spec's ConnectX HCAs must
    agree per port, else the field that disagrees is named. Non-ConnectX HCAs (EFA) and a
    fabric without HCAs set nothing.
    """
    wanted: dict[str, str] = {}
    where: dict[str, str] = {}
    for gi, group in enumerate(spec.nodes):
        for hi, hca in enumerate(group.hcas):
            label = LINK_TYPES.get(hca.link_layer)
            if label is None or not hca.device.startswith(("mlx5", "mlx4")):
                continue
            for port in range(1, hca.ports + 1):
                key = f"LINK_TYPE_P{port}"
                field = f"nodes[{gi}].hcas[{hi}].link_layer"
                if wanted.setdefault(key, label) != label:
                    raise HandoffError(
                        f"{field}: {hca.link_layer!r} differs from {where[key]} ({wanted[key]}); "
                        f"ConnectX port link types are set cluster-wide, give every HCA port the same link layer"
                    )
                where.setdefault(key, field)
    return {"hca_mlxconfig": dict(sorted(wanted.items()))} if wanted else {}


def subnet_manager_vars(spec: ClusterSpec) -> dict[str, Any]:
    """OpenSM settings of an InfiniBand fabric (nothing for other fabrics)."""
    ib = spec.fabric.infiniband
    if spec.fabric.kind != "infiniband" or ib is None:
        return {}
    partitions = []
    for i, p in enumerate(ib.partitions):
        if p.members not in SM_MEMBER_KEYWORDS:
            raise HandoffError(
                f"fabric.infiniband.partitions[{i}].members: {p.members!r} is a host list; OpenSM "
                f"partitions name port GUIDs, which are known only after discovery. Use one of "
                f"{', '.join(SM_MEMBER_KEYWORDS)}."
            )
        partitions.append(
            {
                "name": p.name,
                "pkey": p.pkey,
                "members": p.members,
                "membership": p.membership,
                "ipoib": p.ipoib,
            }
        )
    out: dict[str, Any] = {
        "subnet_manager_routing_engine": ib.routing_engine,
        "subnet_manager_lmc": ib.lmc,
        "subnet_manager_sweep_interval": ib.sweep_interval,
        "subnet_manager_mtu": spec.fabric.mtu,
    }
    if partitions:
        out["subnet_manager_partitions"] = partitions
    if spec.target == "lab":
        out |= LAB_SUBNET_MANAGER
    return out


def roce_qos_vars(spec: ClusterSpec) -> dict[str, Any]:
    """Lossless-Ethernet settings of a RoCE fabric (nothing for other fabrics)."""
    roce = spec.fabric.roce
    if spec.fabric.kind != "roce" or roce is None:
        return {}
    netdevs: list[str] = []
    for group in spec.nodes:
        for hca in group.hcas:
            if hca.netdev and hca.netdev not in netdevs:
                netdevs.append(hca.netdev)
    return {
        "roce_qos_interfaces": netdevs,
        "roce_qos_mtu": spec.fabric.mtu,
        "roce_qos_trust": roce.trust,
        "roce_qos_pfc_priority": roce.pfc_priority,
        "roce_qos_rdma_dscp": roce.rdma_dscp,
        "roce_qos_cnp_dscp": roce.cnp_dscp,
        "roce_qos_ecn": roce.ecn,
        "roce_qos_tos": roce.roce_tos,
    }


def slurm_vars(spec: ClusterSpec) -> dict[str, Any]:
    """Slurm settings: nodes with their shape and GPUs, partitions, topology."""
    compute = spec.hosts_with_role("compute")
    controller = spec.slurm.controller or next(iter(spec.hosts_with_role("controller")), None)
    if controller is None:
        raise HandoffError(
            "slurm.controller: no controller host declared (and no node has role controller)"
        )
    if controller not in spec.hosts:
        raise HandoffError(f"slurm.controller: {controller!r} is not a declared host")
    nodes = []
    for host in compute:
        group = spec.hosts[host]
        node: dict[str, Any] = {"name": host}
        if group.cpus:
            node["cpus"] = group.cpus
        if group.memory_mb:
            node["real_memory"] = group.memory_mb
        if group.gpus:
            gres: dict[str, Any] = {"name": "gpu", "count": group.gpus}
            if group.gpu_type:
                gres["type"] = group.gpu_type
            node["gres"] = [gres]
        nodes.append(node)
    out: dict[str, Any] = {
        "slurm_cluster_name": spec.slurm.cluster_name or spec.name,
        "slurm_controller_host": controller,
        "slurm_compute_group": "compute",
        "slurm_nodes": nodes,
    }
    if spec.slurm.partitions:
        out["slurm_partitions"] = [
            {"name": p.name, "nodes": p.nodes, "default": p.default, "max_time": p.max_time}
            for p in spec.slurm.partitions
        ]
    out |= slurm_topology_vars(spec, compute)
    if spec.target == "lab":
        out |= LAB_SLURM
    return out


def slurm_topology_vars(spec: ClusterSpec, slurm_nodes: list[str]) -> dict[str, Any]:
    """TopologyPlugin and topology.conf.

    topology.conf from the declared fabric (``fabric.topology.render.render``, the
    ``fabric.topology.slurm`` writers), restricted to the Slurm nodes. An InfiniBand fabric
    also sets ``railyard_topology_discover``: site.yml then replaces it by the one rendered from
    ``ibnetdiscover`` run on a subnet manager once OpenSM is up (playbooks/topology.yml).
    """
    if spec.slurm.topology_plugin == "block":
        raise HandoffError(
            "slurm.topology_plugin: block needs Slurm 23.11 or later; the roles install the "
            "distribution's Slurm (22.05 on Debian 12). Use tree."
        )
    if spec.fabric.topology is None:
        return {
            "slurm_topology_plugin": "none",
            "slurm_topology_conf": "",
            "railyard_topology_discover": False,
        }
    conf = render(graph_from_spec(spec), "tree", slurm_nodes)
    return {
        "slurm_topology_plugin": "tree",
        "slurm_topology_conf": conf,
        "railyard_topology_discover": spec.fabric.kind == "infiniband",
        "railyard_topology_nodes": compress(slurm_nodes),
    }


def write_group_vars(spec: ClusterSpec, state_dir: Path) -> Path:
    """Write ``role_vars_from_spec(spec)`` to ``state_dir/group_vars/all.yml``; return the path."""
    from fabric.state import StateLayout

    path = StateLayout.at(state_dir).group_vars_all
    path.parent.mkdir(parents=True, exist_ok=True)
    header = (
        "# Generated from the cluster spec by fabric.handoff.vars; edit the spec, not this file.\n"
    )
    text = header + yaml.dump(
        role_vars_from_spec(spec), Dumper=_Dumper, sort_keys=True, default_flow_style=False
    )
    if not path.exists() or path.read_text() != text:
        path.write_text(text)
    return path


__all__ = [
    "HandoffError",
    "cluster_hosts_vars",
    "hca_vars",
    "rdma_stack_vars",
    "role_vars_from_spec",
    "slurm_vars",
    "subnet_manager_vars",
    "roce_qos_vars",
    "write_group_vars",
]
