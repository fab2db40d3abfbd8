"""The GPU check families' parameters, from the spec alone: NCCL runs, rails, rail pairs.

- ``nccl``: an all-reduce on each GPU node (NVLink), then across nodes: the nodes below each
  leaf group (the leaves a node's HCAs are cabled to: one leaf, or a rail-optimized unit's
  rail leaves) and, where there is more than one group, all of them across the spines (the
  multi-node runs go through Slurm's ``srun``, so they need a Slurm controller);
- ``gpu_nic_affinity``: every HCA (rail) of a GPU node and the GPU it serves: GPU k for rail k
  (DGX/HGX numbering), else the HCA's position;
- ``gpudirect``: ``ib_write_bw --use_cuda`` on every rail between pairs of GPU nodes (a ring
  over the nodes, per rail: every HCA of every node once as client);
- ``fabric_manager``: the GPU nodes whose GPUs hang off NVSwitch (:func:`has_nvswitch`);
- ``hca_firmware``: each declared HCA with a firmware minimum (:func:`firmware_minimums`).

:mod:`fabric.verify.plan` exposes these as ``CheckPlan`` properties.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import field
from typing import Literal

from fabric.model.pairs import ring_pairs
from fabric.model.record import record
from fabric.spec import ClusterSpec
from fabric.spec.gpus import gpus_of, has_nvswitch

#: Where ``roles/nccl_tests`` puts the binaries on every GPU node (built, or linked to a
#: declared path): its ``nccl_tests_bin_dir`` default.
NODE_BIN_DIR = "/opt/railyard/nccl-tests/bin"


@record
class GpuRail:
    """One HCA of a GPU node and the GPU it serves."""

    host: str
    device: str
    rail: int
    gpu: int
    link_layer: str
    rate_gbps: int

    @property
    def id(self) -> str:
        """Test id: ``dgx01/mlx5_0``."""
        return f"{self.host}/{self.device}"


@record
class RailPair:
    """Two GPU nodes' HCAs on one rail: ``ib_write_bw --use_cuda`` from source to target."""

    rail: int
    source: str
    target: str
    source_device: str
    target_device: str
    source_gpu: int
    target_gpu: int
    link_layer: str
    rate_gbps: int

    @property
    def id(self) -> str:
        """Test id: ``rail0:dgx01/mlx5_0->dgx02/mlx5_0``."""
        return (
            f"rail{self.rail}:{self.source}/{self.source_device}->"
            f"{self.target}/{self.target_device}"
        )


@record
class NcclRun:
    """One nccl-tests all-reduce: on one node (``node``), below a leaf group (``leaf``), or
    across the spines (``fabric``)."""

    scope: Literal["node", "leaf", "fabric"]
    name: str
    hosts: list[str]
    gpus_per_node: int
    gpu_type: str | None = None
    hcas: list[str] = field(default_factory=list)
    link_layer: str | None = None
    rate_gbps: int | None = None

    @property
    def id(self) -> str:
        """Test id: ``node:dgx01``, ``leaf:leaf01``, ``fabric:spines``."""
        return f"{self.scope}:{self.name}"


#: GPUDirect RDMA paths any one of which serves a GPU node whose NICs are not declared HCAs
#: (an EFA or A3 Ultra ConnectX RoCE node): the health check wants one of them loaded.
GPUDIRECT_PATHS = ["dma-buf", "efa_nv_peermem", "nvidia_peermem"]


def nvswitch_hosts(spec: ClusterSpec, hosts: Sequence[str]) -> list[str]:
    """Selected GPU hosts that are NVSwitch systems, in declaration order."""
    return [h for h in gpu_hosts(spec, hosts) if has_nvswitch(*gpus_of(spec, h))]


@record
class FirmwareMinimum:
    """A declared HCA with the least firmware it may run (``hcas[].min_firmware``)."""

    host: str
    device: str
    minimum: str

    @property
    def id(self) -> str:
        """Test id: ``dgx01/mlx5_0``."""
        return f"{self.host}/{self.device}"


def firmware_minimums(spec: ClusterSpec, hosts: Sequence[str]) -> list[FirmwareMinimum]:
    """Every selected host's HCAs that declare ``min_firmware``, in declaration order."""
    selected = set(hosts)
    return [
        FirmwareMinimum(host=host, device=hca.device, minimum=hca.min_firmware)
        for host, group in spec.hosts.items()
        if host in selected
        for hca in group.hcas
        if hca.min_firmware
    ]


def gpu_hosts(spec: ClusterSpec, hosts: Sequence[str]) -> list[str]:
    """Selected hosts with GPUs, in declaration order."""
    selected = set(hosts)
    return [h for h in spec.hosts if h in selected and gpus_of(spec, h)[0] > 0]


def gpu_rails(spec: ClusterSpec, hosts: Sequence[str]) -> list[GpuRail]:
    """Every HCA of every selected GPU node, each with the GPU it serves."""
    out = []
    for host in gpu_hosts(spec, hosts):
        gpus = gpus_of(spec, host)[0]
        hcas = spec.hosts[host].hcas
        by_rail = len({h.rail for h in hcas}) == len(hcas)
        for position, hca in enumerate(hcas):
            rail = hca.rail if by_rail else position
            # positional, in field order: 131,072 rails at 16,384 hosts
            out.append(GpuRail(host, hca.device, rail, rail % gpus, hca.link_layer, hca.rate_gbps))
    return out


def rail_pairs(rails: Sequence[GpuRail]) -> list[RailPair]:
    """Per rail, a ring over the nodes that have it: every HCA once as the client."""
    out = []
    by_rail: dict[int, dict[str, GpuRail]] = {}
    for r in rails:
        by_rail.setdefault(r.rail, {})[r.host] = r
    for rail in sorted(by_rail):
        on_rail = by_rail[rail]
        for source, target in ring_pairs(list(on_rail)):
            a, b = on_rail[source], on_rail[target]
            out.append(
                RailPair(
                    rail,
                    source,
                    target,
                    a.device,
                    b.device,
                    a.gpu,
                    b.gpu,
                    a.link_layer,
                    min(a.rate_gbps, b.rate_gbps),
                )
            )
    return out


def _leaf_label(leaves: Sequence[str]) -> str:
    return leaves[0] if len(leaves) == 1 else f"{leaves[0]}..{leaves[-1]}"


def nccl_runs(
    spec: ClusterSpec,
    hosts: Sequence[str],
    leaf_of: Mapping[tuple[str, str], str],
    multi_node: bool,
) -> list[NcclRun]:
    """Each GPU node's run, then (``multi_node``: Slurm can launch them) one run per leaf
    group and one across the spines; ``leaf_of`` maps (host, HCA) to its declared leaf."""
    nodes = gpu_hosts(spec, hosts)
    runs = []
    for host in nodes:
        gpus, gpu_type = gpus_of(spec, host)
        runs.append(
            NcclRun(scope="node", name=host, hosts=[host], gpus_per_node=gpus, gpu_type=gpu_type)
        )
    if not multi_node or len(nodes) < 2:
        return runs
    first = spec.hosts[nodes[0]]
    hcas = [h.device for h in first.hcas]
    layer = {"InfiniBand": "IB", "Ethernet": "RoCE"}.get(first.hcas[0].link_layer) if hcas else None
    shape = {
        "gpus_per_node": gpus_of(spec, nodes[0])[0],
        "gpu_type": gpus_of(spec, nodes[0])[1],
        "hcas": hcas,
        "link_layer": layer,
        "rate_gbps": min((h.rate_gbps for h in first.hcas), default=None),
    }
    groups: dict[tuple[str, ...], list[str]] = {}
    for host in nodes:
        leaves = tuple(
            sorted(
                {
                    leaf_of[(host, h.device)]
                    for h in spec.hosts[host].hcas
                    if (host, h.device) in leaf_of
                }
            )
        )
        if leaves:
            groups.setdefault(leaves, []).append(host)
    for leaves, members in groups.items():
        if len(members) >= 2:
            runs.append(NcclRun(scope="leaf", name=_leaf_label(leaves), hosts=members, **shape))
    if len(groups) != 1:
        runs.append(
            NcclRun(scope="fabric", name="spines" if groups else "all", hosts=nodes, **shape)
        )
    return runs
