"""The health check's configuration per compute node (``railyard_node_health``), from the
cluster model (``fabric.model.cluster.ClusterModel``): the node's declared InfiniBand ports,
what each must show and where its cable ends; on a cloud instance without declared HCAs, what
its type has (``fabric.catalog``): the EFA devices, or the A3 GPU NICs, and the GPUDirect RDMA
paths that serve it.

``roles/node_health`` writes it as the JSON file ``fabric/verify/health.py`` reads on the node.
"""

from __future__ import annotations

from typing import Any

from fabric.catalog import gpudirect_write_floor, single_node_allreduce
from fabric.graph import FabricGraph
from fabric.model.cluster import ClusterModel
from fabric.model.gpus import NODE_BIN_DIR, gpu_rails, gpus_of
from fabric.model.ports import SIM_DEVICE, HcaPort, expected_ib_mtu
from fabric.spec import ClusterSpec
from fabric.targets import hook

#: OpenSM's failover polling as ``roles/subnet_manager`` configures it by default
#: (``subnet_manager_sminfo_polling_timeout`` ms, ``subnet_manager_polling_retry_number``; a
#: unit test keeps these equal to the role's defaults), and in the lab, where the hand-off sets
#: the shorter values (``fabric.handoff.vars.LAB_SUBNET_MANAGER``) so failover drills stay short.
SM_POLLING_TIMEOUT_MS = 10000
SM_POLLING_RETRIES = 4
LAB_SM_POLLING_TIMEOUT_MS = 2000
LAB_SM_POLLING_RETRIES = 2
#: The least margin (s) after the STANDBY's takeover: its first heavy sweep as MASTER.
SM_TAKEOVER_MARGIN_S = 10


def sm_failover_seconds(spec: ClusterSpec) -> float:
    """The declared failover window: how long a node may see no subnet manager answer before
    the health check drains it. A STANDBY polls the MASTER every polling timeout and takes
    over after that many failed polls (timeout x retries), then sweeps as the new MASTER (the
    margin: two sweep intervals, at least ``SM_TAKEOVER_MARGIN_S``)."""
    timeout_ms, retries = SM_POLLING_TIMEOUT_MS, SM_POLLING_RETRIES
    if spec.simulated:
        timeout_ms, retries = LAB_SM_POLLING_TIMEOUT_MS, LAB_SM_POLLING_RETRIES
    ib = spec.fabric.infiniband
    sweep = ib.sweep_interval if ib is not None else 0
    return timeout_ms / 1000 * retries + max(SM_TAKEOVER_MARGIN_S, 2 * sweep)


def _speed(graph: FabricGraph | None, port: HcaPort) -> str:
    """The declared speed of ``port``'s cable, or "" when it has none."""
    link = next(
        (
            link
            for link in (graph.links if graph else [])
            for end in (link.a, link.b)
            if graph.cas.get(end.guid) is not None
            and graph.cas[end.guid].host == port.host
            and graph.cas[end.guid].device == port.device
            and end.port == port.port
        ),
        None,
    )
    return link.speed if link else ""


def health_config(
    spec: ClusterSpec, host: str, ports: list[HcaPort], graph: FabricGraph | None
) -> dict[str, Any]:
    """The health check's configuration for ``host``: its InfiniBand ``ports`` (of
    :func:`fabric.model.ports.hca_ports`) in ``graph`` (:func:`fabric.model.ports.expected_graph`)."""
    simulated = spec.simulated
    mtu = expected_ib_mtu(spec.fabric.mtu, simulated)
    config: dict[str, Any] = {
        "node": host,
        "ports": [
            {
                "ca": SIM_DEVICE if simulated else p.device,
                "device": p.device,
                "port": p.port,
                "width": p.width.upper(),
                "speed": _speed(graph, p),
                "rate_gbps": p.rate_gbps,
                "mtu": mtu,
                "cable": f"{p.switch} p{p.switch_port}" if p.switch else "no declared cable",
                "switch_port": p.switch_port,
            }
            for p in ports
            if p.host == host
        ],
        "thresholds": spec.health.counters.model_dump(exclude_none=True),
        "sm_failover_s": sm_failover_seconds(spec),
    }
    if simulated:  # the lab's tools reach ibsim through a preload set in /etc/environment
        config["env_file"] = "/etc/environment"
    if slow := slow_config(spec, host):
        config["slow"] = slow
    return config | gpu_config(spec, host)


def gpu_config(spec: ClusterSpec, host: str) -> dict[str, Any]:
    """The GPU fitness checks' configuration for ``host`` (``fabric/verify/health_gpu.py``):
    the GPU count it must show, its declared HCAs (their PCIe links), whether GPUDirect needs
    ACS off and an IOMMU in passthrough (an InfiniBand or RoCE fabric), and each HCA's least
    firmware; empty for a node without GPUs or the lab's (no GPU there)."""
    gpus = gpus_of(spec, host)[0]
    if not gpus or spec.simulated:
        return {}
    hcas = spec.hosts[host].hcas
    gpu: dict[str, Any] = {"gpus": gpus}
    if hcas:
        gpu["hcas"] = [hca.device for hca in hcas]
        gpu["gpudirect_pcie"] = spec.fabric.kind in ("infiniband", "roce")
        if firmware := {hca.device: hca.min_firmware for hca in hcas if hca.min_firmware}:
            gpu["hca_firmware"] = firmware
    return {"gpu": gpu}


def slow_config(spec: ClusterSpec, host: str) -> dict[str, Any]:
    """The opt-in slow path's measurements for ``host`` (``railyard-health --slow``,
    ``fabric/verify/health_gpu.py``): the single-node all-reduce and each rail's GPUDirect
    loopback, each with its catalog floor and source; empty for a node without GPUs, in the
    lab, or where no source gives a floor."""
    if spec.simulated:
        return {}
    gpus, gpu_type = gpus_of(spec, host)
    if not gpus:
        return {}
    slow: dict[str, Any] = {}
    if target := single_node_allreduce(gpu_type, gpus):
        slow["nccl"] = {
            "binary": f"{NODE_BIN_DIR}/all_reduce_perf",
            "gpus": gpus,
            "size": target.size,
            "min_busbw": target.min_busbw,
            "source": target.source,
        }
    rails = []
    for rail in gpu_rails(spec, [host]):
        floor = gpudirect_write_floor(rail.rate_gbps, gpus_of(spec, host)[1])
        if floor is not None:
            rails.append(
                {"device": rail.device, "gpu": rail.gpu, "min_gbps": floor[0], "source": floor[1]}
            )
    if rails:
        slow["gpudirect"] = rails
    return slow


def cloud_health_config(spec: ClusterSpec, host: str) -> dict[str, Any]:
    """The health check's configuration for a cloud compute instance without declared HCAs:
    what its target's ``health_config`` (``model.py``) adds (AWS: the catalog's EFA device
    count; GCP: the A3 GPU NICs); empty when the target adds nothing for its type."""
    own = hook(spec.target, "model", "health_config")
    added = own(spec, host) if own is not None else {}
    base = {"node": host, "ports": [], "thresholds": {}}
    return base | added | gpu_config(spec, host) if added else {}


#: Where ``roles/node_health`` puts the API server's token and CA on a node (its defaults
#: ``node_health_kube_token_file`` and ``node_health_kube_ca_file``; a unit test keeps them equal).
KUBE_TOKEN_FILE = "/etc/railyard/kube-token"
KUBE_CA_FILE = "/etc/railyard/kube-ca.crt"


def orchestrator_config(spec: ClusterSpec) -> dict[str, Any]:
    """What the health check tells besides its output: ``"slurm": false`` unless the
    orchestrator runs Slurm (then ``scontrol`` is never run), and with a ``kubernetes`` section
    where the node's taint is set (the API server, the token and CA files the role installs) when
    the spec gives a token."""
    out: dict[str, Any] = {}
    if spec.orchestrator == "kubernetes":
        out["slurm"] = False
    if spec.kubernetes is not None and spec.kubernetes.token is not None:
        # railyard-health speaks bearer tokens only: with a client certificate, no taint
        kube: dict[str, Any] = {
            "api_server": spec.kubernetes.api_server,
            "token_file": KUBE_TOKEN_FILE,
        }
        if spec.kubernetes.ca_certificate is not None:
            kube["ca_file"] = KUBE_CA_FILE
        out["kubernetes"] = kube
    return out


def health_configs(model: ClusterModel) -> dict[str, dict[str, Any]]:
    """Compute node -> its health check's configuration: every compute node with a declared
    InfiniBand port, and every EFA or A3 compute instance without declared HCAs; each with
    :func:`orchestrator_config`."""
    spec, ib = model.spec, model.ib_ports
    with_ports = {p.host for p in ib}
    out = {
        host: health_config(spec, host, ib, model.expected_graph)
        for host in spec.hosts_with_role("compute")
        if host in with_ports
    }
    if spec.fabric.kind in ("efa", "gcp-gpudirect"):
        for host in spec.hosts_with_role("compute"):
            if not spec.hosts[host].hcas and (config := cloud_health_config(spec, host)):
                out[host] = config
    extra = orchestrator_config(spec)
    return {host: config | extra for host, config in out.items()}
