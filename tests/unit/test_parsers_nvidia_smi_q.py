"""``nvidia_smi_q``: ``nvidia-smi -q`` on an H200 and an H100 (captured here, driver 580), its
``-d`` sections, and an A100 excerpt with a row remap pending (driver 510, ml-engineering)."""

from __future__ import annotations

import pytest

from fabric.parsers import ParseError, parse
from fabric.parsers.nvidia_smi_q import gpus
from fabric.state import REPO_ROOT

FIXTURES = REPO_ROOT / "tests" / "fixtures"


def h200(n: int) -> str:
    """``nvidia-smi -q`` (1) and its ``-d`` sections (2..5) on the H200."""
    return (FIXTURES / "device" / f"nvidia_smi_q__h200vm__{n}.txt").read_text()


@pytest.mark.parametrize(
    "capture",
    [h200(1), (FIXTURES / "nvidia_smi_q__h100vm__1.txt").read_text()],
    ids=["h200", "h100"],
)
def test_a_healthy_hopper_in_full(capture: str) -> None:
    (gpu,) = gpus(capture)
    assert gpu.bus_id == "00000000:00:06.0"
    assert gpu.persistence_mode == "Enabled"
    assert gpu.dram_uncorrectable == (0, 0)
    assert gpu.sram_uncorrectable == (0, 0)  # Parity + SEC-DED, volatile and aggregate
    assert gpu.retired_pages_pending is None  # N/A: Hopper remaps rows instead
    assert (gpu.remapped_rows, gpu.remap_pending, gpu.remap_failure) == ((0, 0), False, False)
    assert (gpu.pcie_generation, gpu.pcie_width) == ((5, 5), (16, 16))
    assert gpu.clock_reasons_active == ["Idle"]
    assert gpu.fabric == (None, None)  # N/A: no NVSwitch


def test_the_h200_d_sections() -> None:
    """``-d ECC``, ``ROW_REMAPPER``, ``PERFORMANCE``, ``PAGE_RETIREMENT``: each only its own."""
    ecc, remap, perf, pages = (gpus(h200(n))[0] for n in (2, 3, 4, 5))
    assert ecc.dram_uncorrectable == (0, 0) and ecc.remap_pending is None
    assert (remap.remapped_rows, remap.remap_pending) == ((0, 0), False)
    assert remap.dram_uncorrectable == (None, None)
    assert perf.clock_reasons_active == ["Idle"] and perf.persistence_mode is None
    assert pages.retired_pages_pending is None
    assert pages.fields["Retired Pages/Pending Page Blacklist"] == "N/A"


def test_an_a100_with_a_row_remap_pending() -> None:
    """Driver 510's names (``SRAM Uncorrectable`` alone); the author's ``[...]`` cuts skipped."""
    (gpu,) = gpus((FIXTURES / "nvidia_smi_q__mlengineering__1.txt").read_text())
    assert (gpu.bus_id, gpu.product) == ("00000000:10:1C.0", "NVIDIA A100-SXM4-80GB")
    assert gpu.remapped_rows == (1, 0)
    assert (gpu.remap_pending, gpu.remap_failure) == (True, False)
    assert gpu.dram_uncorrectable == (0, 0) and gpu.sram_uncorrectable == (0, 0)
    assert gpu.fields["ECC Errors/Volatile/DRAM Correctable"] == "177"


def test_registry_result_and_other_text() -> None:
    dumped = parse("nvidia_smi_q", h200(1)).model_dump()
    assert dumped["gpus"][0]["remap_pending"] is False
    assert dumped["gpus"][0]["pcie_width_max"] == 16
    with pytest.raises(ParseError, match="^nvidia_smi_q: .*Attached GPUs"):
        parse("nvidia_smi_q", (FIXTURES / "device" / "dmesg__h200vm__2.txt").read_text())
