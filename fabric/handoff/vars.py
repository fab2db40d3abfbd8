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

from fabric.handoff.health import LAB_SM_POLLING_RETRIES, LAB_SM_POLLING_TIMEOUT_MS
from fabric.hostlist import compress
from fabric.model.cluster import ClusterModel
from fabric.model.gpus import gpus_of, has_nvswitch
from fabric.spec import ClusterSpec
from fabric.spec.constants import SM_MEMBER_KEYWORDS
from fabric.spec.models import EcnQueue
from fabric.targets import hook, parts
from fabric.topology.from_spec import graph_from_spec
from fabric.topology.render import render

#: The lab's nodes are containers: what their kernel and limits allow (docs/lab.md).
LAB_SUBNET_MANAGER = {
    # ibsim + umad2sim: no kernel umad device for systemd's unit condition to find.
    "subnet_manager_require_kernel_umad": False,
    # Fail over in ~6 s instead of ~40 s, so failover drills stay short.
    "subnet_manager_sminfo_polling_timeout": LAB_SM_POLLING_TIMEOUT_MS,
    "subnet_manager_polling_retry_number": LAB_SM_POLLING_RETRIES,
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


def role_vars_from_spec(spec: ClusterSpec, model: ClusterModel | None = None) -> dict[str, Any]:
    """Return the group_vars for ``all``: every role's settings derived from ``spec``, its
    facts read from ``model`` (the run's one :class:`ClusterModel`; built here when none is
    handed in)."""
    model = model if model is not None else ClusterModel(spec)
    out: dict[str, Any] = {
        "railyard_cluster": spec.name,
        "railyard_target": spec.target,
        "railyard_fabric_kind": spec.fabric.kind,
        # slurm, kubernetes or both: site.yml configures Slurm unless it is kubernetes
        "railyard_orchestrator": spec.orchestrator,
    }
    out |= cluster_hosts_vars(spec)
    out |= rdma_stack_vars(spec)
    out |= hca_vars(spec)
    out |= subnet_manager_vars(spec)
    out |= roce_qos_vars(spec)
    for _, handoff in parts("handoff"):  # each target's roles (efa, gcp_gpudirect)
        out |= handoff.role_vars(spec)
    if spec.orchestrator != "kubernetes":
        out |= slurm_vars(spec, model)
    out |= node_health_vars(model, out.get("slurm_extra_config", {}))
    out["railyard_fabric_manager_hosts"] = fabric_manager_hosts(spec)
    if spec.bmc is not None and spec.bmc.endpoints:
        # Where playbooks/remove-node.yml powers a node off (the password is never a variable).
        out["railyard_bmc_endpoints"] = {
            host: {
                "url": e.url.rstrip("/"),
                "system_id": e.system_id or "",
                "username": spec.bmc.username,
                "verify_tls": spec.bmc.verify_tls,
            }
            for host, e in spec.bmc.endpoints.items()
        }
    env = job_environment(spec)
    out["railyard_job_environment"] = env
    out["slurm_task_prolog"] = bool(env)
    # A target's prolog/epilog (the gcp_gpudirect RxDM's) runs through the slurm role's
    # dispatchers; listed last, as the slurm role reads it.
    out["slurm_prolog_epilog_dirs"] = out.pop("slurm_prolog_epilog_dirs", False)
    return out


def fabric_manager_hosts(spec: ClusterSpec) -> list[str]:
    """The GPU nodes on NVSwitch whose fabric manager ``roles/gpu_node`` installs and runs
    at the driver's version (none in the lab: no GPU there)."""
    if spec.simulated:
        return []
    return [host for host in spec.hosts if has_nvswitch(*gpus_of(spec, host))]


def cluster_hosts_vars(spec: ClusterSpec) -> dict[str, Any]:
    """The /etc/hosts block: on for every target (Slurm needs the names); lab specifics."""
    out: dict[str, Any] = {"cluster_hosts_manage": True}
    if spec.simulated:
        out |= LAB_CLUSTER_HOSTS
    return out


def rdma_stack_vars(spec: ClusterSpec) -> dict[str, Any]:
    """The RDMA stack the spec declares (``rdma_stack``: source, version, mirror or ISO and
    their checksums); the lab's nodes have no driver to restart."""
    stack = spec.rdma_stack
    out: dict[str, Any] = {
        "rdma_stack_source": stack.source,
        "rdma_stack_version": stack.version or "",
    }
    for var, value in (
        ("rdma_stack_repo_url", stack.repo_url),
        ("rdma_stack_iso_url", stack.iso_url),
        ("rdma_stack_iso_checksum", stack.checksum),
        ("rdma_stack_repo_gpg_key_url", stack.gpg_key_url),
        ("rdma_stack_repo_gpg_key_checksum", stack.gpg_key_checksum),
    ):
        if value is not None:
            out[var] = value
    if spec.fabric.kind == "infiniband":
        # The MAD tools the hand-off and the checks use (ibstat, ibnetdiscover, sminfo).
        out["rdma_stack_extra_packages"] = ["infiniband-diags"]
    if spec.simulated:
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


def congestion_control_vars(ib: Any) -> dict[str, Any]:
    """``fabric.infiniband.congestion_control`` as the subnet_manager role's
    ``subnet_manager_congestion_control``."""
    return ib.congestion_control.model_dump(mode="json")


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
        "subnet_manager_congestion_control": congestion_control_vars(ib),
    }
    if partitions:
        out["subnet_manager_partitions"] = partitions
    if spec.simulated:
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
        "roce_qos_cnp_priority": roce.cnp_priority,
        "roce_qos_dcqcn_rp": roce.dcqcn.rp.model_dump(),
        "roce_qos_dcqcn_np": roce.dcqcn.np.model_dump(),
        "roce_qos_pfc_watchdog_ms": roce.pfc_watchdog.detection_ms * roce.pfc_watchdog.enabled,
        "roce_qos_cable_length_m": roce.buffer.cable_length_m,
    } | switch_qos_vars(spec)


def switch_qos_vars(spec: ClusterSpec) -> dict[str, Any]:
    """The switches' side of the same lossless settings (roles/switch_qos); per-switch OS,
    ports and connection are host variables (fabric.inventory)."""
    roce = spec.fabric.roce
    if roce is None:
        return {}
    queues = [q for q in roce.ecn_marking if q.priority == roce.pfc_priority]
    queue = queues[0] if queues else EcnQueue(priority=roce.pfc_priority)
    dog = roce.pfc_watchdog
    return {
        "switch_qos_trust": roce.trust,
        "switch_qos_pfc_priority": roce.pfc_priority,
        "switch_qos_rdma_dscp": roce.rdma_dscp,
        "switch_qos_cnp_dscp": roce.cnp_dscp,
        "switch_qos_cnp_priority": roce.cnp_priority,
        "switch_qos_ecn": roce.ecn,
        "switch_qos_ecn_min_threshold": queue.min_bytes,
        "switch_qos_ecn_max_threshold": queue.max_bytes,
        "switch_qos_ecn_probability": queue.probability_percent,
        "switch_qos_rdma_bandwidth_percent": roce.rdma_bandwidth_percent,
        "switch_qos_mtu": spec.fabric.mtu,
        "switch_qos_pfc_watchdog": dog.enabled,
        "switch_qos_pfc_watchdog_detection_ms": dog.detection_ms,
        "switch_qos_pfc_watchdog_restore_ms": dog.restore_ms,
        "switch_qos_pfc_watchdog_action": dog.action,
        "switch_qos_cable_length_m": roce.buffer.cable_length_m,
    }


def job_environment(spec: ClusterSpec) -> dict[str, dict[str, dict[str, str]]]:
    """Per host, the environment the slurm role's task prolog gives every job (``all``) and
    multi-node jobs only (``multinode``), from each target's ``job_environment`` (EFA's
    libfabric provider, GPUDirect-TCPX(O)'s NCCL settings)."""
    out: dict[str, dict[str, dict[str, str]]] = {}
    for _, handoff in parts("handoff"):
        out |= handoff.job_environment(spec)
    return out


def slurm_vars(spec: ClusterSpec, model: ClusterModel | None = None) -> dict[str, Any]:
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
    out |= slurm_topology_vars(spec, compute, model)
    if spec.simulated:
        out |= LAB_SLURM
    return out


#: Where roles/node_health installs railyard's Slurm health check.
HEALTH_PROGRAM = "/usr/local/sbin/railyard-health"


def node_health_vars(model: ClusterModel, extra: dict[str, Any]) -> dict[str, Any]:
    """The health check per compute node with InfiniBand ports, or on EFA and A3 instances
    (``railyard_node_health``:
    host -> ``fabric.handoff.health.health_configs``), and slurm.conf's HealthCheckProgram,
    HealthCheckInterval and HealthCheckNodeState from ``health`` (interval 0: none); with
    ``orchestrator: kubernetes`` (no slurmd) the role's timer at that interval instead."""
    from fabric.handoff.health import health_configs

    spec = model.spec
    if spec.fabric.kind not in ("infiniband", "efa", "gcp-gpudirect"):
        return {}
    configs = health_configs(model)
    out: dict[str, Any] = {"railyard_node_health": configs}
    if spec.orchestrator == "kubernetes":
        # no slurmd to run it: roles/node_health's systemd timer, every health.interval
        out["node_health_timer_interval"] = spec.health.interval if configs else 0
    elif configs and spec.health.interval > 0:
        out["slurm_extra_config"] = extra | {
            "HealthCheckProgram": HEALTH_PROGRAM,
            "HealthCheckInterval": spec.health.interval,
            "HealthCheckNodeState": ",".join(spec.health.node_state),
        }
    return out


def slurm_topology_vars(
    spec: ClusterSpec, slurm_nodes: list[str], model: ClusterModel | None = None
) -> dict[str, Any]:
    """TopologyPlugin and its file: topology.conf (tree, block) or topology.yaml (yaml).

    The file from the declared fabric (``fabric.topology.render.render``, the
    ``fabric.topology.slurm`` writers), restricted to the Slurm nodes. An InfiniBand fabric
    also sets ``railyard_topology_discover``: site.yml then replaces it by the one rendered from
    ``ibnetdiscover`` run on a subnet manager once OpenSM is up, with
    ``railyard_topology_args``. The slurm role refuses block below Slurm 23.11 and yaml below
    25.05, naming the installed version (Debian 12 ships 22.05).
    """
    plugin, size = spec.slurm.topology_plugin, spec.slurm.block_size
    args = ["--plugin", plugin] + ([] if size is None else ["--block-size", str(size)])
    placement = hook(spec.target, "model", "PLACEMENT_COMMAND")
    if spec.fabric.topology is None and placement is not None and slurm_nodes:
        # site.yml reads each node's placement and renders the file from the provider's
        # topology (python -m fabric topology --from-placement); none placed: no topology
        return {
            "slurm_topology_plugin": plugin,
            "slurm_topology_conf": "",
            "railyard_topology_discover": False,
            "railyard_topology_provider": spec.target,
            "railyard_topology_region": getattr(spec.section, "region", ""),
            "railyard_placement_command": placement,
            "railyard_topology_nodes": compress(slurm_nodes),
            "railyard_topology_args": args,
        }
    if spec.fabric.topology is None:
        return {
            "slurm_topology_plugin": "none",
            "slurm_topology_conf": "",
            "railyard_topology_discover": False,
        }
    # the model's graph; built again only when it could not be built, to raise why
    graph = model.declared_graph if model is not None else None
    conf = render(graph or graph_from_spec(spec), plugin, slurm_nodes, size)
    return {
        "slurm_topology_plugin": plugin,
        "slurm_topology_conf": conf,
        "railyard_topology_discover": spec.fabric.kind == "infiniband",
        "railyard_topology_nodes": compress(slurm_nodes),
        "railyard_topology_args": args,
    }


def write_group_vars(spec: ClusterSpec, state_dir: Path, model: ClusterModel | None = None) -> Path:
    """Write ``role_vars_from_spec(spec, model)`` to ``state_dir/group_vars/all.yml``; return
    the path."""
    from fabric.state import StateLayout

    path = StateLayout.at(state_dir).group_vars_all
    path.parent.mkdir(parents=True, exist_ok=True)
    header = (
        "# Generated from the cluster spec by fabric.handoff.vars; edit the spec, not this file.\n"
    )
    text = header + yaml.dump(
        role_vars_from_spec(spec, model), Dumper=_Dumper, sort_keys=True, default_flow_style=False
    )
    if not path.exists() or path.read_text() != text:
        path.write_text(text)
    return path


__all__ = [
    "HandoffError",
    "cluster_hosts_vars",
    "job_environment",
    "hca_vars",
    "rdma_stack_vars",
    "role_vars_from_spec",
    "slurm_vars",
    "subnet_manager_vars",
    "roce_qos_vars",
    "switch_qos_vars",
    "write_group_vars",
]
