"""The GPU node acceptance families in the check plan: the fabric manager on every NVSwitch
example (DGX H100, AWS p5, GCP A3, Azure ND H100 v5) and nowhere else, the HCA firmware
minimum from ``hcas[].min_firmware``, the lab told why not; and the NCCL container option."""

from __future__ import annotations

from pathlib import Path

import pytest

from fabric.model.gpus import has_nvswitch
from fabric.spec import load_spec, spec_from_mapping
from fabric.spec.problems import SpecError
from fabric.verify.plan import CheckPlan, describe

REPO = Path(__file__).resolve().parents[2]
NVSWITCH_EXAMPLES = [
    "examples/dgx-h100-ib.yaml",
    "Pulumi.aws-efa.example.yaml",
    "Pulumi.gcp-a3-high.example.yaml",
    "Pulumi.gcp-a3-mega.example.yaml",
    "Pulumi.gcp-a3-ultra.example.yaml",
    "Pulumi.azure-ndv5.example.yaml",
]
NODE_FAMILIES = ("gpu_pcie", "gpu_clocks", "gpudirect_pcie", "hca_firmware", "dcgm_diag")


def _plan(path: Path, edit=None) -> CheckPlan:
    data = load_spec(path).model_dump(mode="json", exclude_none=True)
    if edit:
        edit(data)
    spec = spec_from_mapping(data)
    return CheckPlan(spec=spec, hosts=list(spec.hosts))


@pytest.mark.parametrize("example", NVSWITCH_EXAMPLES)
def test_every_nvswitch_example_lists_the_fabric_manager_on_its_gpu_nodes(example: str) -> None:
    plan = _plan(REPO / example)
    listed = describe(plan)["fabric_manager"]
    assert listed["checks"] == ["test_fabric_manager"]
    assert listed["parameters"] == plan.gpu_hosts and plan.gpu_hosts


def test_the_lab_and_a_pcie_gpu_node_have_no_fabric_manager() -> None:
    lab = describe(_plan(REPO / "Pulumi.lab.yaml"))
    for family in (*NODE_FAMILIES, "fabric_manager"):
        assert "not_generated" in lab[family], family

    def four_gpus(data: dict) -> None:
        for group in data["nodes"]:
            if group.get("gpus"):
                group["gpus"] = 4

    dgx4 = describe(_plan(REPO / "examples/dgx-h100-ib.yaml", four_gpus))
    assert dgx4["fabric_manager"]["not_generated"].startswith("no NVSwitch node")
    assert "parameters" in dgx4["gpu_pcie"]


@pytest.mark.parametrize(
    ("gpus", "kind", "expected"),
    [
        (8, "h100", True),
        (8, "H200", True),
        (8, "a100", True),
        (8, "nvidia-h100-sxm", True),
        (16, "a100", True),
        (4, "h100", False),  # HGX 4-GPU: NVLink without NVSwitch
        (8, "l40s", False),  # PCIe cards
        (8, None, False),
        (1, "h200", False),  # the captured single-H200 VM
    ],
)
def test_nvswitch_systems(gpus: int, kind: str | None, expected: bool) -> None:
    assert has_nvswitch(gpus, kind) is expected


def test_a_firmware_minimum_makes_one_check_per_declared_hca() -> None:
    def minimum(data: dict) -> None:
        for group in data["nodes"]:
            for hca in group.get("hcas", []):
                hca["min_firmware"] = "28.39.1002"

    plan = _plan(REPO / "examples/dgx-h100-ib.yaml", minimum)
    listed = describe(plan)["hca_firmware"]["parameters"]
    declared = [(h, c.device) for h, g in plan.spec.hosts.items() for c in g.hcas]
    assert [(p["host"], p["device"]) for p in listed] == declared
    assert len([p for p in listed if p["host"].startswith("dgx")]) == 4 * 8
    assert listed[0] == {"host": "dgx01", "device": "mlx5_0", "minimum": "28.39.1002"}


def test_a_firmware_minimum_that_is_no_version_is_refused() -> None:
    def bad(data: dict) -> None:
        data["nodes"][0]["hcas"][0]["min_firmware"] = "latest"

    with pytest.raises(SpecError, match="min_firmware"):
        _plan(REPO / "examples/dgx-h100-ib.yaml", bad)


def test_the_gpudirect_pcie_family_is_for_connectx_rails() -> None:
    dgx = describe(_plan(REPO / "examples/dgx-h100-ib.yaml"))
    assert dgx["gpudirect_pcie"]["parameters"] == [f"dgx0{i}" for i in range(1, 5)]
    efa = describe(_plan(REPO / "Pulumi.aws-efa.example.yaml"))
    assert efa["gpudirect_pcie"]["not_generated"].startswith("fabric.kind is efa")


def test_the_nccl_container_reaches_srun_and_a_bad_one_is_refused() -> None:
    from fabric.verify.nccl_run import srun_wrap

    def pyxis(data: dict) -> None:
        # an enroot squashfs image (pyxis: --container-image=PATH)
        data.setdefault("slurm", {})["nccl_container"] = "/shared/images/pytorch-24.04.sqsh"

    plan = _plan(REPO / "examples/dgx-h100-ib.yaml", pyxis)
    image = plan.spec.slurm.nccl_container
    argv = srun_wrap(["all_reduce_perf"], ["dgx01"], 8, 8, 600, container=image)
    assert "--cpu-bind=none" in argv
    assert (
        argv[argv.index("--cpu-bind=none") + 1]
        == "--container-image=/shared/images/pytorch-24.04.sqsh"
    )

    def spaced(data: dict) -> None:
        data.setdefault("slurm", {})["nccl_container"] = "two words"

    with pytest.raises(SpecError, match="nccl_container"):
        _plan(REPO / "examples/dgx-h100-ib.yaml", spaced)
