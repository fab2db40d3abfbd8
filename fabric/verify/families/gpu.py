"""The GPU families, listed after the targets' own: ``nccl`` (nccl-tests all-reduce),
``gpudirect`` (``ib_write_bw --use_cuda`` per rail) and ``gpu_nic_affinity`` (each rail's
GPU and HCA on one PCIe switch); their parameters come from ``fabric.model.gpus``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fabric.model.gpus import GpuRail, NcclRun, RailPair, gpu_hosts, gpu_rails, nccl_runs
from fabric.model.gpus import rail_pairs as _rail_pairs
from fabric.model.ports import ca_links
from fabric.verify.families.base import Family, Fixture, Source

if TYPE_CHECKING:
    from fabric.verify.plan import CheckPlan

#: Where ``check --plan`` lists these families: after the targets' own.
ORDER = 900


def _gpu_hosts(plan: CheckPlan) -> list[str]:
    """Selected hosts with GPUs (declared, or from the instance catalog)."""
    return gpu_hosts(plan.spec, plan.hosts)


def _gpu_rails(plan: CheckPlan) -> list[GpuRail]:
    """Every HCA of every selected GPU node and the GPU it serves (``gpu_nic_affinity``)."""
    return gpu_rails(plan.spec, plan.hosts)


def _gpudirect_pairs(plan: CheckPlan) -> list[RailPair]:
    """Per rail, pairs of GPU nodes for ``ib_write_bw --use_cuda`` (``gpudirect``)."""
    return _rail_pairs(plan.gpu_rails)


def _nccl_runs(plan: CheckPlan) -> list[NcclRun]:
    """nccl-tests all-reduce runs: each GPU node, each leaf group and across the spines
    (multi-node runs through Slurm: only with a Slurm controller selected)."""
    leaf_of = {(h, d): sw for (h, d, _), (_, _, sw, _) in ca_links(plan.expected_graph).items()}
    return nccl_runs(plan.spec, plan.hosts, leaf_of, plan.slurm_controller is not None)


def _no_gpu(plan: CheckPlan) -> str | None:
    """Why no GPU family is generated: no GPU first (the lab has none)."""
    if plan.simulated:
        return "no GPU: target lab (nccl-tests, ib_write_bw --use_cuda and nvidia-smi need one)"
    if not plan.gpu_hosts:
        return "no GPU: no selected host declares gpus (nodes[].gpus or a GPU instance type)"
    return None


def _gpudirect_why(plan: CheckPlan) -> str | None:
    kind = plan.spec.fabric.kind
    if reason := _no_gpu(plan):
        return reason
    if kind not in ("infiniband", "roce"):
        return (
            f"fabric.kind is {kind}: ib_write_bw --use_cuda runs over ConnectX rails "
            "(efa_gpudirect covers EFA)"
        )
    return None if plan.gpudirect_pairs else "fewer than two selected GPU hosts on a rail"


SOURCES: dict[str, Source] = {
    "gpu_hosts": _gpu_hosts,
    "gpu_rails": _gpu_rails,
    "gpudirect_pairs": _gpudirect_pairs,
    "nccl_runs": _nccl_runs,
}
FAMILIES = (
    Family(
        "nccl",
        ("test_nccl_allreduce",),
        "nccl_runs",
        _no_gpu,
        fixtures=(
            Fixture(
                "nccl_run",
                lambda plan: plan.nccl_runs,
                ident=lambda r: r.id,
                on=lambda plan, r: plan.slurm_controller or r.hosts[0],
                subject=lambda _, r: (
                    f"host:{r.hosts[0]}" if r.scope == "node" else f"fabric:{r.name}"
                ),
            ),
        ),
    ),
    Family(
        "gpudirect",
        ("test_gpudirect_write_bandwidth",),
        "gpudirect_pairs",
        _gpudirect_why,
        fixtures=(
            Fixture(
                "rail_pair",
                lambda plan: plan.gpudirect_pairs,
                ident=lambda p: p.id,
                on=lambda _, p: p.source,
                subject=lambda _, p: f"pair:{p.source}->{p.target}",
                group=lambda p: f"target-{p.target}",
            ),
        ),
    ),
    Family(
        "gpu_nic_affinity",
        ("test_gpu_nic_affinity",),
        "gpu_rails",
        lambda plan: (
            _no_gpu(plan)
            or (None if plan.gpu_rails else "no selected GPU host declares HCAs (rails)")
        ),
        fixtures=(
            Fixture(
                "gpu_rail",
                lambda plan: plan.gpu_rails,
                ident=lambda r: r.id,
                on=lambda _, r: r.host,
                subject=lambda _, r: f"port:{r.host}/{r.device}/1",
            ),
        ),
    ),
)
