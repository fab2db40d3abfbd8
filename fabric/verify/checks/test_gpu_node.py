"""GPU node acceptance: what NVIDIA's DCGM, Azure's NHC and cluster acceptance check beyond
the GPUs' own errors, judged by the same functions ``railyard-health`` runs on the node
(``fabric.verify.health_gpu``).

``gpu_pcie``: every GPU's PCIe link at its full width (``nvidia-smi -q`` ``GPU Link Info``;
the generation drops while idle, so it is not judged) and every declared HCA's at its speed and
width (sysfs ``current_link_*`` against ``max_link_*``). ``gpu_clocks``: no hardware clock
slowdown (HW Slowdown, HW Thermal, HW Power Brake) active on an idle node; persistence mode off
is recorded as a warning. ``gpudirect_pcie``: no PCI bridge with P2P-blocking ACS on
(``lspci -vvv``), the IOMMU not translating (``/proc/cmdline``). ``hca_firmware``: ``fw_ver``
at the declared ``min_firmware`` or newer. ``dcgm_diag``: ``dcgmi diag -r 1 -j`` passes; a
node without ``dcgmi`` is a harness error (nothing measured). ``fabric_manager``: on NVSwitch
nodes the ``nvidia-fabricmanager`` unit active, its package at the driver's exact version, and
every GPU's fabric registration ``Completed``/``Success``.
"""

from __future__ import annotations

import shlex
from typing import Any

import pytest

from fabric.model.gpus import FirmwareMinimum
from fabric.parsers import dcgmi_diag, lspci, nvidia_driver, nvidia_smi_q, pci_link
from fabric.parsers.errors import ParseError
from fabric.verify import health_gpu
from fabric.verify.facts import Facts
from fabric.verify.harness_error import HarnessError
from fabric.verify.plan import CheckPlan

#: Seconds for one quick read (nvidia-smi -q, lspci, sysfs); for DCGM's level-1 diagnostic.
READ_TIMEOUT = 30
DCGM_TIMEOUT = 600
SMI_Q = f"timeout {READ_TIMEOUT} nvidia-smi -q"


def _ran(host: str, what: str, rc: int, text: str) -> str:
    """The output of a tool that ran; a harness error for one missing or stopped."""
    if rc in (124, 126, 127):
        raise HarnessError(f"{host}: {what} did not run (exit {rc}): {text.strip()[-200:]}")
    return text


def _gpus(facts: Facts, host: str) -> list[nvidia_smi_q.Gpu]:
    rc, text = facts.output(host, SMI_Q)
    _ran(host, "nvidia-smi -q", rc, text)
    try:
        return nvidia_smi_q.gpus(text)
    except ParseError as err:
        raise HarnessError(f"{host}: {err}") from err


def _hcas(plan: CheckPlan, host: str) -> list[str]:
    return [hca.device for hca in plan.spec.hosts[host].hcas]


@pytest.mark.family("gpu_pcie")
def test_gpu_pcie_links(host, facts: Facts, plan: CheckPlan, gpu_host: str) -> None:
    """Every GPU's PCIe link at full width; every declared HCA's at its speed and width."""
    problems = [r for g in _gpus(facts, gpu_host) if (r := health_gpu.pcie_width_reason(g))]
    if hcas := _hcas(plan, gpu_host):
        files = " ".join(
            f"{health_gpu.SYSFS_IB}/{d}/device/{w}_link_{k}"
            for d in hcas
            for w in ("current", "max")
            for k in ("speed", "width")
        )
        rc, text = facts.output(gpu_host, f"timeout {READ_TIMEOUT} grep -H . {files}")
        try:
            links = pci_link.links(_ran(gpu_host, "grep of sysfs", rc, text))
        except ParseError as err:
            raise HarnessError(f"{gpu_host}: {err}") from err
        problems += health_gpu.hca_link_reasons(links, hcas)
    assert not problems, f"{gpu_host}: {'; '.join(problems)}"


@pytest.mark.family("gpu_clocks")
def test_gpu_clocks(host, facts: Facts, gpu_host: str, record_property: Any) -> None:
    """No GPU held down by a hardware slowdown; persistence mode off is a recorded warning."""
    found = _gpus(facts, gpu_host)
    warnings = [w for g in found if (w := health_gpu.persistence_warning(g))]
    if warnings:
        record_property("warnings", "; ".join(warnings))
    problems = [r for g in found if (r := health_gpu.hw_slowdown_reason(g))]
    assert not problems, f"{gpu_host}: {'; '.join(problems)}"


@pytest.mark.family("gpudirect_pcie")
def test_gpudirect_acs_iommu(host, facts: Facts, gpu_host: str) -> None:
    """No PCI bridge reroutes peer-to-peer traffic (ACS), and the IOMMU does not translate."""
    rc, cmdline = facts.output(gpu_host, f"timeout {READ_TIMEOUT} cat /proc/cmdline")
    problems = [r] if (r := health_gpu.iommu_reason(_ran(gpu_host, "cat", rc, cmdline))) else []
    rc, text = facts.output(gpu_host, f"timeout {READ_TIMEOUT} lspci -vvv")
    if "Capabilities: <access denied>" in text:
        raise HarnessError(f"{gpu_host}: lspci -vvv ran without root: ACSCtl is not shown")
    try:
        problems += health_gpu.acs_reasons(lspci.devices(_ran(gpu_host, "lspci -vvv", rc, text)))
    except ParseError as err:
        raise HarnessError(f"{gpu_host}: {err}") from err
    assert not problems, f"{gpu_host}: {'; '.join(problems)}"


@pytest.mark.family("hca_firmware")
def test_hca_firmware(host, facts: Facts, firmware_hca: FirmwareMinimum) -> None:
    """The HCA's firmware (sysfs ``fw_ver``) is its declared minimum or newer."""
    path = f"{health_gpu.SYSFS_IB}/{firmware_hca.device}/fw_ver"
    rc, text = facts.output(firmware_hca.host, f"timeout {READ_TIMEOUT} grep -H . {path}")
    found = health_gpu.firmware_versions(_ran(firmware_hca.host, "grep", rc, text))
    problems = health_gpu.firmware_reasons(found, {firmware_hca.device: firmware_hca.minimum})
    assert not problems, f"{firmware_hca.host}: {'; '.join(problems)}"


@pytest.mark.family("dcgm_diag")
def test_dcgm_diag(host, gpu_host: str) -> None:
    """DCGM's level-1 diagnostic passes every test on every GPU."""
    if host.run("command -v dcgmi").rc != 0:
        raise HarnessError(f"{gpu_host}: dcgmi is not installed (DCGM): nothing diagnosed")
    result = host.run(f"timeout {DCGM_TIMEOUT} dcgmi diag -r 1 -j")
    text = _ran(gpu_host, "dcgmi diag -r 1 -j", result.rc, result.stdout + result.stderr)
    try:
        found = dcgmi_diag.results(result.stdout or text)
    except ParseError as err:
        raise HarnessError(f"{gpu_host}: dcgmi diag (exit {result.rc}): {err}") from err
    problems = dcgmi_diag.failures(found)
    assert not problems, f"{gpu_host}: {'; '.join(problems)}"


#: The installed fabric manager packages as ``NAME VERSION`` lines, Debian's or RPM's.
FM_PACKAGES = (
    "dpkg-query -W -f '${Package} ${Version}\\n' 'nvidia-fabricmanager*' 2>/dev/null"
    " || rpm -q --qf '%{NAME} %{VERSION}\\n' -a 'nvidia-fabric*manager*'"
)


@pytest.mark.family("fabric_manager")
def test_fabric_manager(host, facts: Facts, nvswitch_host: str) -> None:
    """The fabric manager runs at the driver's exact version; every GPU's fabric is done."""
    rc, text = facts.output(
        nvswitch_host, f"timeout {READ_TIMEOUT} cat /proc/driver/nvidia/version"
    )
    try:
        driver = nvidia_driver.driver_version(_ran(nvswitch_host, "cat", rc, text))
    except ParseError as err:
        raise HarnessError(f"{nvswitch_host}: no NVIDIA driver loaded: {err}") from err
    active = host.run(
        f"timeout {READ_TIMEOUT} systemctl is-active {health_gpu.FABRIC_MANAGER_UNIT}"
    )
    _ran(nvswitch_host, "systemctl", active.rc, active.stdout + active.stderr)
    running = active.rc == 0 and active.stdout.strip() == "active"
    problems = (
        []
        if running
        else [f"{health_gpu.FABRIC_MANAGER_UNIT} is {active.stdout.strip() or 'not active'}"]
    )
    rc, text = facts.output(
        nvswitch_host, f"timeout {READ_TIMEOUT} sh -c {shlex.quote(FM_PACKAGES)}"
    )
    installed = nvidia_driver.fabric_manager_packages(text)
    want = f"nvidia-fabricmanager-{nvidia_driver.branch(driver)}"
    if not installed:
        problems.append(f"no nvidia-fabricmanager package installed ({want} {driver} needed)")
    elif (have := installed.get(want, next(iter(installed.values())))) != driver:
        problems.append(f"fabric manager {have}, driver {driver}: they must be the same version")
    problems += [
        r for g in _gpus(facts, nvswitch_host) if (r := health_gpu.fabric_reason(g, running))
    ]
    assert not problems, f"{nvswitch_host}: {'; '.join(problems)}"
