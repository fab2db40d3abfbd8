"""The GPU check families (nccl, gpudirect, gpu_nic_affinity) in the plan, and their judging
helpers (GPU-NIC affinity, the RoCE GID index) on real captured output."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from fabric.parsers import nvidia_smi_topo, show_gids
from fabric.spec import load_spec, spec_from_mapping
from fabric.verify.gids import roce_gid_index
from fabric.verify.gpu import affinity_problem, nearest_gpu
from fabric.verify.plan import FAMILIES, CheckPlan, describe

REPO = Path(__file__).resolve().parents[2]
DGX = REPO / "examples/dgx-h100-ib.yaml"
FIXTURES = REPO / "tests/fixtures"
GPU_FAMILIES = ("nccl", "gpudirect", "gpu_nic_affinity")


def _plan(path: Path, **changes: object) -> CheckPlan:
    data = load_spec(path).model_dump(mode="json", exclude_none=True)
    data.update(changes)
    spec = spec_from_mapping(data)
    return CheckPlan(spec=spec, hosts=list(spec.hosts))


def test_dgx_h100_plan_lists_the_three_families_with_every_rail_covered() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "fabric", "check", "--plan", "--spec", str(DGX), "--json"],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=True,
        timeout=120,
    )
    plan = json.loads(out.stdout)["families"]
    for family in GPU_FAMILIES:
        assert "parameters" in plan[family], plan[family]
        assert plan[family]["checks"] == list(FAMILIES[family][0])
    nodes = [f"dgx0{i}" for i in range(1, 5)]
    rails = {(r["host"], r["device"], r["gpu"]) for r in plan["gpu_nic_affinity"]["parameters"]}
    assert rails == {(h, f"mlx5_{k}", k) for h in nodes for k in range(8)}
    pairs = plan["gpudirect"]["parameters"]
    assert {(p["source"], p["source_device"], p["source_gpu"]) for p in pairs} == rails
    assert all(p["source_device"] == p["target_device"] for p in pairs)
    runs = {(r["scope"], r["name"]): r for r in plan["nccl"]["parameters"]}
    assert set(runs) == {("node", h) for h in nodes} | {("leaf", "leaf01..leaf08")}
    leaf = runs[("leaf", "leaf01..leaf08")]
    assert leaf["hosts"] == nodes and leaf["hcas"] == [f"mlx5_{k}" for k in range(8)]
    assert (leaf["link_layer"], leaf["rate_gbps"], leaf["gpus_per_node"]) == ("IB", 400, 8)


def test_the_lab_says_no_gpu() -> None:
    lab = describe(_plan(REPO / "Pulumi.lab.yaml"))
    for family in GPU_FAMILIES:
        assert lab[family]["not_generated"].startswith("no GPU: target lab")


def test_without_a_slurm_controller_only_single_node_runs() -> None:
    spec = load_spec(DGX)
    plan = CheckPlan(spec=spec, hosts=["dgx01", "dgx02", "dgx03", "dgx04"])
    assert [r.scope for r in plan.nccl_runs] == ["node"] * 4


def test_a_leaf_with_two_gpu_nodes_gets_a_run_and_one_runs_across_the_spines() -> None:
    """leaf01 holds dgx01-03, leaf02 dgx04 (alone: no leaf run) and head1."""
    spec = load_spec(DGX).model_dump(mode="json", exclude_none=True)
    spec["nodes"][0]["hcas"] = [{"device": "mlx5_0"}]
    spec["fabric"]["topology"] |= {"leaves": 2, "nodes_per_leaf": 3, "rail_optimized": False}
    plan = CheckPlan(
        spec=spec_from_mapping(spec), hosts=["dgx01", "dgx02", "dgx03", "dgx04", "head1"]
    )
    multi = [(r.scope, r.name, r.hosts) for r in plan.nccl_runs if r.scope != "node"]
    assert multi == [
        ("leaf", "leaf01", ["dgx01", "dgx02", "dgx03"]),
        ("fabric", "spines", ["dgx01", "dgx02", "dgx03", "dgx04"]),
    ]


def test_efa_is_not_a_connectx_rail() -> None:
    reasons = _plan(REPO / "examples/aws-p5.yaml").not_generated()
    assert reasons["gpudirect"].startswith("fabric.kind is efa")
    assert "nccl" not in reasons


def topo(name: str) -> nvidia_smi_topo.NvidiaSmiTopo:
    return nvidia_smi_topo.parse((FIXTURES / name).read_text())


def test_affinity_on_a_real_pcie_switch_layout() -> None:
    t = topo("nvidia_smi_topo__nccltests78__1.txt")
    assert affinity_problem(t, "mlx5_0", 0) is None  # PIX
    assert affinity_problem(t, "mlx5_0", 2) is None  # PXB
    assert affinity_problem(t, "mlx5_2", 0) == (
        "mlx5_2 is NODE to GPU0, not PIX or PXB: GPUDirect RDMA between them crosses the CPU"
    )
    assert affinity_problem(t, "mlx5_4", 1) == (
        "mlx5_4 is SYS to GPU1, not PIX or PXB: GPUDirect RDMA between them crosses the "
        "socket interconnect"
    )
    assert nearest_gpu(t, "mlx5_1") == 2 and nearest_gpu(t, "mlx5_0") == 0


def test_affinity_names_the_nearest_gpu_and_missing_devices() -> None:
    t = topo("nvidia_smi_topo__nccl2150__1.txt")
    assert affinity_problem(t, "NIC3", 3) is None
    assert affinity_problem(t, "NIC3", 0) == (
        "NIC3 is NODE to GPU0, not PIX or PXB: GPUDirect RDMA between them crosses the CPU; "
        "the GPU nearest NIC3 is GPU3"
    )
    assert affinity_problem(t, "mlx5_0", 0) == (
        "mlx5_0 is not in nvidia-smi topo -m's matrix (is its driver loaded?)"
    )
    assert affinity_problem(t, "NIC0", 7).startswith("GPU7 is not in nvidia-smi topo -m")


def test_the_h100_vm_has_no_nic_next_to_its_gpu() -> None:
    t = topo("nvidia_smi_topo__h100vm__1.txt")
    assert nearest_gpu(t, "mlx5_0") is None
    assert affinity_problem(t, "mlx5_0", 0) == (
        "mlx5_0 is not in nvidia-smi topo -m's matrix (is its driver loaded?)"
    )


def test_roce_gid_index_is_read_from_show_gids() -> None:
    gids = show_gids.parse((FIXTURES / "show_gids__magnate3__1.txt").read_text())
    assert roce_gid_index(gids, "mlx5_3") == 3
    assert roce_gid_index(gids, "mlx5_0") is None  # only link-local GIDs
    other = show_gids.parse((FIXTURES / "show_gids__microview__1.txt").read_text())
    assert roce_gid_index(other, "mlx5_2") == 3
