"""GPU node acceptance beyond the GPUs' own errors, on real captures: PCIe link width and
generation (nvidia-smi -q, sysfs), hardware clock slowdowns, the NVSwitch fabric and its
manager, HCA firmware against a minimum, ACS on PCIe bridges and the IOMMU mode, DCGM's
diagnostic, the driver's version. A failing case is a real capture with ONE value changed."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from fabric.parsers import dcgmi_diag, lspci, nvidia_driver, pci_link, proc_cmdline
from fabric.parsers.nvidia_smi_q import gpus
from fabric.verify import health_gpu

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
DEVICE = FIXTURES / "device"
H200_Q = (DEVICE / "nvidia_smi_q__h200vm__1.txt").read_text()
H200_PERF = (DEVICE / "nvidia_smi_q__h200vm__4.txt").read_text()
H200_SYSFS = (DEVICE / "sysfs__h200vm__1.txt").read_text()
H200_LSPCI = (DEVICE / "lspci__h200vm__1.txt").read_text()
H200_CMDLINE = (DEVICE / "proc_cmdline__h200vm__1.txt").read_text()
DCGM = (FIXTURES / "dcgmi_diag__dcgmjsontest__1.txt").read_text()


def derived(capture: str, key: str, old: str, new: str) -> str:
    """A copy of a real ``nvidia-smi -q`` capture with ONE value changed."""
    lines = capture.splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if re.match(rf"\s*{key}\s+: {old}$", line))
    lines[at] = lines[at].replace(f": {old}", f": {new}")
    return "".join(lines)


# -- PCIe link: the GPU (nvidia-smi -q) ---------------------------------------------------


def test_the_h200_runs_gen5_x16_and_gives_no_reason() -> None:
    (gpu,) = gpus(H200_Q)
    assert (gpu.pcie_generation, gpu.pcie_width) == ((5, 5), (16, 16))
    assert health_gpu.pcie_width_reason(gpu) is None
    assert health_gpu.pcie_warning(gpu) is None


def test_a_narrow_gpu_link_drains_and_a_lower_generation_only_warns() -> None:
    (narrow,) = gpus(derived(H200_Q, "Current", "16x", "8x"))
    assert health_gpu.pcie_width_reason(narrow) == (
        "GPU 00000000:00:06.0: PCIe Gen5 x8, capable of Gen5 x16"
    )
    assert health_gpu.pcie_warning(narrow) is None  # one line, the drain's
    (idle,) = gpus(derived(H200_Q, "Current", "5", "1"))
    assert health_gpu.pcie_width_reason(idle) is None
    assert (
        health_gpu.pcie_warning(idle) == "GPU 00000000:00:06.0: PCIe Gen1 x16, capable of Gen5 x16"
    )


# -- PCIe link: sysfs (the HCA's, read the same way as the GPU's capture) --------------------


def test_sysfs_link_files_of_the_h200() -> None:
    (link,) = pci_link.links(H200_SYSFS)
    assert link == pci_link.Link("0000:00:06.0", (32.0, 32.0), (16, 16))
    assert link.generation == (5, 5)
    assert pci_link.degraded(link) is None


def test_an_hca_link_below_its_maximum_drains_naming_the_device() -> None:
    # the capture's lines under an HCA's sysfs folder (/sys/class/infiniband/<dev>/device is
    # the same PCI device folder), with the current width halved
    text = H200_SYSFS.replace(
        "/sys/bus/pci/devices/0000:00:06.0", "/sys/class/infiniband/mlx5_0/device"
    )
    text = text.replace("current_link_width:16", "current_link_width:8")
    (link,) = pci_link.links(text)
    assert link.device == "mlx5_0"
    assert health_gpu.hca_link_reasons([link], ["mlx5_0"]) == [
        "mlx5_0: PCIe Gen5 x8, capable of Gen5 x16"
    ]
    assert health_gpu.hca_link_reasons([link], ["mlx5_1"]) == []


def test_text_without_link_files_is_a_parse_error() -> None:
    try:
        pci_link.links(H200_CMDLINE)
    except ValueError as err:
        assert "current_link_speed" in str(err)
    else:
        raise AssertionError("no ParseError")


# -- clocks, persistence ------------------------------------------------------------------


def test_the_idle_h200_is_not_slowed() -> None:
    (gpu,) = gpus(H200_PERF)
    assert gpu.clock_reasons_active == ["Idle"]
    assert health_gpu.hw_slowdown_reason(gpu) is None
    assert health_gpu.clocks_warning(gpu) is None


def test_a_power_brake_fails_acceptance_and_warns_in_the_health_check() -> None:
    (gpu,) = gpus(derived(H200_PERF, "HW Power Brake Slowdown", "Not Active", "Active"))
    assert health_gpu.hw_slowdown_reason(gpu) == (
        "GPU 00000000:00:06.0: hardware clock slowdown: HW Power Brake Slowdown"
    )
    assert health_gpu.clocks_warning(gpu) == (
        "GPU 00000000:00:06.0: clocks slowed: HW Power Brake Slowdown"
    )
    (sw,) = gpus(derived(H200_PERF, "SW Thermal Slowdown", "Not Active", "Active"))
    assert health_gpu.hw_slowdown_reason(sw) is None  # software: the GPU protecting itself
    assert health_gpu.clocks_warning(sw) is not None


# -- the NVSwitch fabric and its manager ----------------------------------------------------


def test_no_nvswitch_on_the_h200_vm() -> None:
    found = gpus(H200_Q)
    assert not health_gpu.nvswitch(found)
    assert health_gpu.fabric_reason(found[0], manager_active=False) is None


def test_a_fabric_in_progress_drains_only_without_the_manager() -> None:
    (gpu,) = gpus(derived(H200_Q, "State", "N/A", "In Progress"))
    assert health_gpu.nvswitch([gpu])
    assert health_gpu.fabric_reason(gpu, manager_active=False) == (
        "GPU 00000000:00:06.0: NVLink fabric In Progress and nvidia-fabricmanager not running"
    )
    assert health_gpu.fabric_reason(gpu, manager_active=True) is None
    assert (
        health_gpu.fabric_warning(gpu)
        == "GPU 00000000:00:06.0: NVLink fabric In Progress, no status"
    )


def test_a_failed_registration_drains_even_with_the_manager() -> None:
    done = derived(H200_Q, "State", "N/A", "Completed")
    (gpu,) = gpus(derived(done, "Status", "N/A", "Failure"))
    assert health_gpu.fabric_reason(gpu, manager_active=True) == (
        "GPU 00000000:00:06.0: NVLink fabric registration failed: Failure"
    )


def _replay(outputs: dict[str, tuple[int, str]]):
    calls: list[tuple[list[str], float]] = []

    def run(argv: Sequence[str], timeout: float) -> tuple[int, str]:
        calls.append((list(argv), timeout))
        for key, answer in outputs.items():
            if key in " ".join(argv):
                return answer
        return 0, ""

    return run, calls


def test_the_health_check_asks_systemctl_on_an_nvswitch_node_only() -> None:
    nvswitch_q = derived(H200_Q, "State", "N/A", "In Progress")
    run, calls = _replay(
        {
            "dmesg": (0, ""),
            "nvlink": (0, ""),
            "nvidia-smi -q": (0, nvswitch_q),
            "systemctl": (3, "inactive\n"),
        }
    )
    failures, harness, warnings = health_gpu.check_fitness({"gpus": 1}, run)
    assert failures == [
        "GPU 00000000:00:06.0: NVLink fabric In Progress and nvidia-fabricmanager not running"
    ]
    assert harness == []
    assert (["systemctl", "is-active", "nvidia-fabricmanager"], health_gpu.SMI_TIMEOUT) in calls
    run, calls = _replay({"nvidia-smi -q": (0, H200_Q)})
    health_gpu.check_fitness({"gpus": 1}, run)
    assert not any(argv[0] == "systemctl" for argv, _ in calls)


# -- HCA firmware ---------------------------------------------------------------------------


def test_firmware_against_a_declared_minimum_on_real_sysfs() -> None:
    found = health_gpu.firmware_versions((FIXTURES / "sysfs__gpud__1.txt").read_text())
    assert found["mlx5_0"] == "28.41.1000"
    assert health_gpu.firmware_reasons(found, {"mlx5_0": "28.39.1002"}) == []
    assert health_gpu.firmware_reasons(found, {"mlx5_0": "28.41.1000"}) == []
    assert health_gpu.firmware_reasons(found, {"mlx5_0": "28.42.1000", "mlx5_2": "1.0"}) == [
        "mlx5_0: firmware 28.41.1000 older than the declared minimum 28.42.1000",
        "mlx5_2: firmware version unreadable, 1.0 or newer declared",
    ]
    assert health_gpu.version_key("28.41.1000") > health_gpu.version_key("28.9.9999")


# -- ACS and the IOMMU ---------------------------------------------------------------------


def test_the_h200_vm_has_no_acs_and_no_iommu_setting() -> None:
    (gpu,) = lspci.devices(H200_LSPCI)
    assert (gpu.address, gpu.link_cap, gpu.link_sta) == ("00:06.0", (32.0, 16), (32.0, 16))
    assert gpu.acs_ctl == {} and not gpu.bridge
    assert health_gpu.acs_reasons([gpu]) == []
    assert proc_cmdline.iommu_mode(H200_CMDLINE) == "default"
    assert health_gpu.iommu_reason(H200_CMDLINE) is None


def test_acs_on_bridges_as_nccls_guide_greps_them() -> None:
    found = lspci.devices((FIXTURES / "lspci_acsctl__nccl606__1.txt").read_text())
    assert len(found) == 9 and all(d.address is None for d in found)
    assert [d.acs_on for d in found].count(["SrcValid"]) == 4
    (reason,) = health_gpu.acs_reasons(found)
    assert reason.startswith("PCIe ACS on for peer-to-peer on 4 bridge(s): ? (SrcValid+)")


def test_acs_on_the_amd_bridge_above_a_connectx6() -> None:
    (bridge,) = lspci.devices((FIXTURES / "lspci__rccl547__1.txt").read_text())
    assert bridge.address == "40:01.1" and bridge.bridge
    assert bridge.acs_on == ["SrcValid", "ReqRedir", "CmpltRedir", "UpstreamFwd"]
    assert health_gpu.acs_reasons([bridge]) == [
        "PCIe ACS on for peer-to-peer on 1 bridge(s): 40:01.1 "
        "(SrcValid+ ReqRedir+ CmpltRedir+ UpstreamFwd+); disable it"
    ]


def test_iommu_modes_from_the_kernels_parameters_only() -> None:
    kernel, _, init = H200_CMDLINE.partition(" -- ")
    assert proc_cmdline.iommu_mode(f"{kernel} intel_iommu=on -- {init}") == "translated"
    assert proc_cmdline.iommu_mode(f"{kernel} intel_iommu=on iommu=pt -- {init}") == "passthrough"
    assert proc_cmdline.iommu_mode(f"{kernel} amd_iommu=off -- {init}") == "off"
    assert proc_cmdline.iommu_mode(f"{kernel} -- intel_iommu=on") == "default"  # init's, not ours
    assert health_gpu.iommu_reason(f"{kernel} intel_iommu=on") == (
        "IOMMU in translated mode (kernel command line): add iommu=pt for GPUDirect RDMA"
    )


def test_the_platform_checks_run_only_what_the_configuration_asks() -> None:
    acs = (FIXTURES / "lspci__rccl547__1.txt").read_text()
    run, calls = _replay(
        {
            "nvidia-smi -q": (0, H200_Q),
            "cat /proc/cmdline": (0, H200_CMDLINE),
            "lspci": (0, acs),
            "fw_ver": (0, (FIXTURES / "sysfs__gpud__1.txt").read_text()),
            "link_": (0, H200_SYSFS),
        }
    )
    assert health_gpu.check_fitness({"gpus": 1}, run)[0] == []
    assert len(calls) == 3
    config = {
        "gpus": 1,
        "hcas": ["0000:00:06.0"],
        "gpudirect_pcie": True,
        "hca_firmware": {"mlx5_0": "28.42.1000"},
    }
    run, calls = _replay(
        {
            "nvidia-smi -q": (0, H200_Q),
            "cat /proc/cmdline": (0, H200_CMDLINE),
            "lspci": (0, acs),
            "fw_ver": (0, (FIXTURES / "sysfs__gpud__1.txt").read_text()),
            "link_": (0, H200_SYSFS),
        }
    )
    failures, harness, _ = health_gpu.check_fitness(config, run)
    assert harness == []
    assert failures == [
        "mlx5_0: firmware 28.41.1000 older than the declared minimum 28.42.1000",
        "PCIe ACS on for peer-to-peer on 1 bridge(s): 40:01.1 "
        "(SrcValid+ ReqRedir+ CmpltRedir+ UpstreamFwd+); disable it",
    ]
    assert all(timeout <= 2 * health_gpu.PLATFORM_TIMEOUT for argv, timeout in calls[3:])


def test_a_missing_lspci_is_a_harness_error_not_a_drain() -> None:
    run, _ = _replay({"nvidia-smi -q": (0, H200_Q), "lspci": (127, "lspci: not found")})
    failures, harness, _ = health_gpu.check_fitness({"gpudirect_pcie": True}, run)
    assert failures == [] and harness == ["lspci -vvv: lspci: not found"]


# -- DCGM and the driver ---------------------------------------------------------------------


def test_dcgm_diag_json_as_dcgms_own_test_reads_it() -> None:
    found = dcgmi_diag.results(DCGM)
    assert len(found) == 17 and {r.status for r in found} == {"PASS"}
    assert found[0] == dcgmi_diag.Result("Deployment", "Denylist", "0,1,2,3,4,5,6,7", "PASS", ())
    assert dcgmi_diag.failures(found) == []
    # the same document with the last GPU's software test failed
    failed = DCGM[::-1].replace('"SSAP"', '"LIAF"', 1)[::-1]
    assert dcgmi_diag.failures(dcgmi_diag.results(failed)) == ["Custom/software on GPU 7: FAIL"]


def test_text_that_is_no_diagnostic_is_a_parse_error() -> None:
    for text in ("Error: unable to establish a connection to the host engine", '{"a": 1}'):
        try:
            dcgmi_diag.results(text)
        except ValueError as err:
            assert "dcgmi_diag" in str(err)
        else:
            raise AssertionError(text)


def test_the_driver_version_from_proc_and_from_nvidia_smi() -> None:
    proc = (DEVICE / "proc_driver_nvidia_version__h200vm__1.txt").read_text()
    smi = (DEVICE / "nvidia_smi_version__h200vm__1.txt").read_text()
    assert nvidia_driver.driver_version(proc) == nvidia_driver.driver_version(smi) == "580.159.04"
    assert nvidia_driver.branch("580.159.04") == "580"
