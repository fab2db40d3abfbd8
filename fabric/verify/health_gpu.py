"""The health check's opt-in slow path: what training sees, on one node, against its floors.

``railyard-health --slow`` (roles/node_health with ``node_health_gpu_prolog``, or by hand) adds
two measurements to the fast port checks, both needing the GPUs idle, so neither runs unless
asked: a single-node nccl-tests all-reduce (its peak bus bandwidth against the catalog's floor
for the node's GPUs) and, per rail, an ``ib_write_bw --use_cuda`` loopback through the HCA
(server and client on the same device, buffers in the GPU nearest it: the GPUDirect RDMA path
between that GPU and that NIC) against the rail's floor. A result below its floor is a failure
(the node is drained, ``railyard: ...``); a tool that could not run or did not finish is a
harness error (nothing changed).

Standard library only, installed beside ``health.py``; the configuration's ``slow`` section is
written by :func:`fabric.handoff.health.slow_config` from the catalog (``fabric.catalog``).

**GPU fitness** (:func:`check_fitness`, every run on GPU hardware, cheap: three tool calls): the
kernel log's XIDs since boot (``dmesg``), each GPU's ECC, row remapper and retired pages
(``nvidia-smi -q``), its NVLink links (``nvidia-smi nvlink -s``) and the GPU count against the
configuration's ``gpu.gpus``. Each check is a small function over parsed output giving a
reason or None; a reason drains the node (``railyard: XID 79 on GPU 0000:a1:00 ...``) and the
next run without it resumes it (an XID stays in the kernel log until a reboot). Persistence
mode off, a PCIe link below its maximum, a hardware clock slowdown and an unfinished NVLink
fabric registration are warnings: printed, never drained. A tool that is missing, did not
finish or printed something unreadable is a harness error: nothing changes. The parsers are
``fabric.parsers.dmesg_xid``, ``nvidia_smi_q`` and ``nvidia_smi_nvlink`` (standard library only;
``roles/node_health`` installs them under the program's directory as ``fabric/parsers/``).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import Any

try:  # on the node: fabric/parsers/ beside the program; on the controller: the package
    from fabric.parsers import (
        dmesg_xid,
        lspci,
        nvidia_smi_nvlink,
        nvidia_smi_q,
        pci_link,
        proc_cmdline,
    )
    from fabric.parsers.errors import ParseError
except ImportError:  # the program run as a script from a checkout: the package is 2 folders up
    sys.path.append(str(Path(__file__).resolve().parents[2]))
    from fabric.parsers import (
        dmesg_xid,
        lspci,
        nvidia_smi_nvlink,
        nvidia_smi_q,
        pci_link,
        proc_cmdline,
    )
    from fabric.parsers.errors import ParseError

#: Seconds the nccl-tests run may take; seconds one ib_write_bw side may take.
NCCL_TIMEOUT = 600.0
WRITE_BW_TIMEOUT = 60.0
#: Seconds the loopback server gets to listen before the client connects.
SERVER_SETTLE = 2.0
#: A whole slow run's alarm (seconds): the nccl sweep and one loopback per rail.
SLOW_RUN_TIMEOUT = 1200

_NCCL_ROW = re.compile(r"^\s*\d+\s+\d+\s+[A-Za-z]\w*\s")
_BW_ROW = re.compile(r"^\s*\d+\s+\d+\s+[\d.]+\s+(?P<avg>[\d.]+)\s+[\d.]+\s*$")

#: ``(argv, timeout) -> (exit code, output)``: 124 timed out, 127 could not start.
Run = Callable[[Sequence[str], float], tuple[int, str]]


def read_table(text: str) -> tuple[float | None, int]:
    """(the highest bus bandwidth in GB/s, the wrong elements) of an nccl-tests table: each
    row ends with out-of-place then in-place ``time algbw busbw #wrong``."""
    found: list[float] = []
    wrong = 0
    for line in text.splitlines():
        if not _NCCL_ROW.match(line) or "NCCL INFO" in line:
            continue
        tokens = line.split()
        if len(tokens) < 11:
            continue
        for busbw, check in ((tokens[-6], tokens[-5]), (tokens[-2], tokens[-1])):
            try:
                found.append(float(busbw))
            except ValueError:
                pass
            if check.isdecimal():
                wrong += int(check)
    return (max(found) if found else None), wrong


def write_bw_gbps(text: str) -> float | None:
    """The highest ``BW average[Gb/sec]`` of ``ib_write_bw --report_gbits`` rows."""
    values = [float(m["avg"]) for line in text.splitlines() if (m := _BW_ROW.match(line))]
    return max(values) if values else None


def _last(text: str, rc: int) -> str:
    lines = text.strip().splitlines()
    return lines[-1].strip()[:120] if lines else f"exit {rc}"


def check_nccl(nccl: dict[str, Any], run: Run) -> tuple[list[str], list[str]]:
    """(failures, harness errors) of the single-node all-reduce against ``min_busbw``."""
    argv = [
        str(nccl["binary"]),
        "-b", "1G",
        "-e", str(nccl.get("size", "16G")),
        "-f", "2",
        "-g", str(nccl["gpus"]),
        "-c", "1",
    ]  # fmt: skip
    rc, text = run(argv, NCCL_TIMEOUT)
    if rc in (124, 127):
        return [], [f"nccl-tests: {_last(text, rc)}"]
    peak, wrong = read_table(text)
    if peak is None:
        return [f"nccl-tests all_reduce printed no result (exit {rc}): {_last(text, rc)}"], []
    if wrong:
        return [f"nccl-tests all_reduce: {wrong} wrong elements"], []
    floor = float(nccl["min_busbw"])
    if peak < floor:
        return [
            f"NCCL all_reduce busbw {peak:g} GB/s < {floor:g} on {nccl['gpus']} GPUs "
            f"({nccl.get('source', 'catalog')})"
        ], []
    return [], []


#: The GPUDirect write test as Azure's NHC runs it, the test its floors hold for
#: (``customTests/azure_ib_write_bw_gdr.nhc``: one 8 MiB size, ``-F``, a warm-up pass; the
#: same as ``fabric.catalog.GPUDIRECT_WRITE``, repeated here: standard library only).
GPUDIRECT_WRITE = ("-s", "8388608", "-F", "--perform_warm_up", "--report_gbits")
#: A perftest built without CUDA: its usage lacks ``--use_cuda=<...>``, and it refuses the
#: option (``unrecognized option '--use_cuda=0'``, or `` Unsupported memory type``).
_USAGE_CUDA = re.compile(r"^\s+--use_cuda=<", re.M)
_NO_CUDA = re.compile(r"unrecognized option '--use_cuda|^\s*Unsupported memory type\s*$", re.M)
NO_CUDA_FIX = (
    "install a perftest built with CUDA (MLNX_OFED/DOCA's, or ./configure with CUDA_H_PATH)"
)


def _numa_node(device: str) -> int | None:
    """The HCA's NUMA node (sysfs; -1 or unreadable on a VM: None)."""
    try:
        node = int(Path(f"/sys/class/infiniband/{device}/device/numa_node").read_text())
    except (OSError, ValueError):
        return None
    return node if node >= 0 else None


def _write_bw_argv(rail: dict[str, Any], numa: int | None = None) -> list[str]:
    argv = ["numactl", "-N", str(numa), "-m", str(numa)] if numa is not None else []
    argv += ["ib_write_bw", "-d", str(rail["device"]), f"--use_cuda={rail['gpu']}"]
    argv += GPUDIRECT_WRITE
    if rail.get("gid_index") is not None:
        argv += ["-x", str(rail["gid_index"])]
    return argv


def perftest_without_cuda(usage: str) -> bool:
    """Whether ``ib_write_bw -h`` printed a usage without ``--use_cuda`` (built without CUDA)."""
    return "Usage:" in usage and not _USAGE_CUDA.search(usage)


def _usage() -> str:
    try:
        done = subprocess.run(
            ["ib_write_bw", "-h"], capture_output=True, text=True, timeout=10, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return done.stdout + done.stderr


def check_rail(rail: dict[str, Any]) -> tuple[list[str], list[str]]:
    """(failures, harness errors) of one rail's ``ib_write_bw --use_cuda`` loopback, run as
    NHC runs it (NUMA-bound where numactl and the HCA's node are there); a perftest without
    CUDA is a harness error, never a drain."""
    name = f"{rail['device']} GPU{rail['gpu']}"
    if perftest_without_cuda(_usage()):
        return [], [f"{name}: ib_write_bw has no --use_cuda (built without CUDA): {NO_CUDA_FIX}"]
    numa = _numa_node(str(rail["device"])) if shutil.which("numactl") else None
    argv = _write_bw_argv(rail, numa)
    try:
        server = subprocess.Popen(
            [*argv, "-p", str(rail.get("port", 18515))],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    except OSError as exc:
        return [], [f"{name}: ib_write_bw: {exc.strerror or exc}"]
    try:
        time.sleep(SERVER_SETTLE)
        if server.poll() is not None:
            return [f"{name}: ib_write_bw --use_cuda server exited {server.returncode} at once"], []
        try:
            done = subprocess.run(
                [*argv, "-p", str(rail.get("port", 18515)), "127.0.0.1"],
                capture_output=True,
                text=True,
                timeout=WRITE_BW_TIMEOUT,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return [], [f"{name}: ib_write_bw timed out after {WRITE_BW_TIMEOUT:g}s"]
        text = done.stdout + done.stderr
        if refused := _NO_CUDA.search(text):
            return [], [f"{name}: {refused.group(0).strip()} (built without CUDA): {NO_CUDA_FIX}"]
        gbps = write_bw_gbps(text)
        if gbps is None:
            return [
                f"{name}: ib_write_bw --use_cuda gave no result: {_last(text, done.returncode)}"
            ], []
        floor = float(rail["min_gbps"])
        if gbps < floor:
            return [
                f"{name}: GPUDirect ib_write_bw {gbps:g} Gb/s < {floor:g} "
                f"({rail.get('source', 'catalog')})"
            ], []
        return [], []
    finally:
        if server.poll() is None:
            server.terminate()
            try:
                server.wait(timeout=5)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()


def check_slow(slow: dict[str, Any], run: Run) -> tuple[list[str], list[str]]:
    """Every slow measurement the configuration declares: (failures, harness errors)."""
    failures: list[str] = []
    harness: list[str] = []
    if slow.get("nccl"):
        more, errors = check_nccl(slow["nccl"], run)
        failures += more
        harness += errors
    for rail in slow.get("gpudirect", []):
        more, errors = check_rail(rail)
        failures += more
        harness += errors
    return failures, harness


#: Seconds for one ``nvidia-smi`` call (``-q`` on eight GPUs takes a few seconds when the
#: driver is not kept loaded) and for ``dmesg``; the three fit the fast run's 20 s alarm.
SMI_TIMEOUT = 6.0
DMESG_TIMEOUT = 3.0
#: Clock event reasons that mean the hardware slowed the GPU (not idle or a setting).
SLOWDOWNS = ("HW Slowdown", "HW Thermal Slowdown", "HW Power Brake Slowdown", "SW Thermal Slowdown")


def xid_reason(found: Sequence[dmesg_xid.Xid], ignore: Collection[int] = ()) -> str | None:
    """The first XID of the kernel log (codes in ``ignore`` aside), and how many there are."""
    judged = [x for x in found if x.code not in ignore]
    if not judged:
        return None
    first = judged[0]
    more = f" (+{len(judged) - 1} more XID lines)" if len(judged) > 1 else ""
    return f"XID {first.code} on GPU {first.pci} since boot: {first.text[:90]}{more}"


def ecc_reason(gpu: nvidia_smi_q.Gpu) -> str | None:
    """Uncorrectable ECC errors since the driver loaded (volatile DRAM and SRAM counts)."""
    dram, sram = gpu.dram_uncorrectable[0] or 0, gpu.sram_uncorrectable[0] or 0
    if dram + sram == 0:
        return None
    return f"GPU {gpu.bus_id}: {dram + sram} uncorrectable ECC errors (DRAM {dram}, SRAM {sram})"


def remap_reason(gpu: nvidia_smi_q.Gpu) -> str | None:
    """A row remap that failed, or one pending (it takes effect at the GPU's next reset)."""
    if gpu.remap_failure:
        return f"GPU {gpu.bus_id}: row remapping failed"
    if gpu.remap_pending:
        return f"GPU {gpu.bus_id}: row remap pending (reset the GPU to apply it)"
    return None


def retired_reason(gpu: nvidia_smi_q.Gpu) -> str | None:
    """Retired pages pending (pre-Ampere page retirement: applied at the GPU's next reset)."""
    if gpu.retired_pages_pending:
        return f"GPU {gpu.bus_id}: retired pages pending (reset the GPU to retire them)"
    return None


def nvlink_reasons(found: Sequence[nvidia_smi_nvlink.GpuLinks]) -> list[str]:
    """A GPU with an inactive link while others are up: on itself (some of its links up) or on
    the node (all its links down while another GPU's are up). No GPU with a link up: the
    machine has no NVLink in use, nothing to judge."""
    if not any(gpu.active for gpu in found):
        return []
    return [
        f"GPU {gpu.index} NVLink {', '.join(map(str, gpu.inactive))} inactive "
        f"({len(gpu.active)} of {len(gpu.links)} up)"
        for gpu in found
        if gpu.inactive
    ]


def count_reason(found: int, declared: int | None) -> str | None:
    """Fewer GPUs than the spec declares for the node."""
    if declared is not None and found < declared:
        return f"{found} GPUs visible to nvidia-smi, {declared} declared"
    return None


def persistence_warning(gpu: nvidia_smi_q.Gpu) -> str | None:
    """Persistence mode off: a warning only. Jobs run correctly without it (the driver loads
    per job, slower), and NVIDIA deprecates the mode for the nvidia-persistenced daemon."""
    if gpu.persistence_mode == "Disabled":
        return f"GPU {gpu.bus_id}: persistence mode Disabled (run nvidia-persistenced)"
    return None


def pcie_warning(gpu: nvidia_smi_q.Gpu) -> str | None:
    """A PCIe link generation below its maximum at full width: a warning, since the
    generation drops while the GPU is idle (``nvidia-smi -q``'s documentation: the current
    link generation "may be reduced when the GPU is not in use")."""
    (gen, gen_max), (width, width_max) = gpu.pcie_generation, gpu.pcie_width
    if None in (gen, gen_max, width, width_max) or width < width_max:  # type: ignore[operator]
        return None
    if gen < gen_max:  # type: ignore[operator]
        return f"GPU {gpu.bus_id}: PCIe Gen{gen} x{width}, capable of Gen{gen_max} x{width_max}"
    return None


def pcie_width_reason(gpu: nvidia_smi_q.Gpu) -> str | None:
    """A PCIe link narrower than the GPU and its slot can run (``Link Width`` current below
    max): lanes do not power down with load, so a narrow link is a seating, riser or cable
    fault, and every transfer through it is slower; it drains."""
    (gen, gen_max), (width, width_max) = gpu.pcie_generation, gpu.pcie_width
    if width is None or width_max is None or width >= width_max:
        return None
    return f"GPU {gpu.bus_id}: PCIe Gen{gen} x{width}, capable of Gen{gen_max} x{width_max}"


def clocks_warning(gpu: nvidia_smi_q.Gpu) -> str | None:
    """A hardware or thermal clock slowdown active now: a warning in the health check, as
    Azure's NHC GPU throttle plugin (``check_gpu_throttle.sh``: any active reason but idle,
    none and SW power cap) and DCGM exporter's alert rules (``GPUPowerBrakeThrottle``,
    severity warning) treat it; one reading can catch a passing event. The ``gpu_clocks``
    check family fails a node hardware-throttled at acceptance."""
    active = [r for r in gpu.clock_reasons_active if r in SLOWDOWNS]
    return f"GPU {gpu.bus_id}: clocks slowed: {', '.join(active)}" if active else None


#: Clock event reasons that fail acceptance (``gpu_clocks``): the hardware itself held the
#: clocks down (an external power brake, the GPU's thermal protection, or either as HW
#: Slowdown), which an idle node never needs.
HW_SLOWDOWNS = ("HW Slowdown", "HW Thermal Slowdown", "HW Power Brake Slowdown")


def hw_slowdown_reason(gpu: nvidia_smi_q.Gpu) -> str | None:
    """A hardware slowdown active (:data:`HW_SLOWDOWNS`): the acceptance family's failure."""
    active = [r for r in gpu.clock_reasons_active if r in HW_SLOWDOWNS]
    return f"GPU {gpu.bus_id}: hardware clock slowdown: {', '.join(active)}" if active else None


def nvswitch(found: Sequence[nvidia_smi_q.Gpu]) -> bool:
    """An NVSwitch system: a GPU prints a fabric state (``N/A`` everywhere else)."""
    return any(gpu.fabric[0] is not None for gpu in found)


def fabric_reason(gpu: nvidia_smi_q.Gpu, manager_active: bool) -> str | None:
    """The GPU's NVLink fabric registration failed (``Completed`` with a status other than
    ``Success``), or never finishes because the fabric manager is not running: CUDA then
    sees no usable GPU on an NVSwitch system (NVIDIA's Fabric Manager User Guide). It drains."""
    state, status = gpu.fabric
    if state is None:
        return None
    if state == "Completed" and status not in (None, "Success"):
        return f"GPU {gpu.bus_id}: NVLink fabric registration failed: {status}"
    if state != "Completed" and not manager_active:
        return f"GPU {gpu.bus_id}: NVLink fabric {state} and nvidia-fabricmanager not running"
    return None


def fabric_warning(gpu: nvidia_smi_q.Gpu) -> str | None:
    """An NVSwitch system's fabric registration not yet completed (``N/A``: no NVSwitch); a
    warning while the fabric manager runs, since it is ``In Progress`` as the manager starts."""
    state, status = gpu.fabric
    if state is None or state == "Completed":
        return None
    return f"GPU {gpu.bus_id}: NVLink fabric {state}, {status or 'no status'}"


def hca_link_reasons(links: Sequence[pci_link.Link], devices: Collection[str]) -> list[str]:
    """Each declared HCA (``devices``) whose PCIe link runs below its speed or width (sysfs
    ``current_link_*`` below ``max_link_*``): ConnectX links do not downtrain when idle, so
    it drains. An HCA sysfs did not list is not judged here (the port checks see it)."""
    return [
        f"{link.device}: {why}"
        for link in links
        if link.device in devices and (why := pci_link.degraded(link))
    ]


def acs_reasons(found: Sequence[lspci.Device]) -> list[str]:
    """PCI bridges with ACS controls on that send peer-to-peer traffic to the root complex
    (NCCL's troubleshooting guide: ``ACSCtl: SrcValid+`` means ACS is on; GPUDirect RDMA
    between a GPU and a NIC under one switch then slows or hangs). One line for all."""
    on = [d for d in found if d.acs_on and (d.bridge or d.address is None)]
    if not on:
        return []
    named = ", ".join(f"{d.address or '?'} ({'+ '.join(d.acs_on)}+)" for d in on[:4])
    more = f" and {len(on) - 4} more" if len(on) > 4 else ""
    return [f"PCIe ACS on for peer-to-peer on {len(on)} bridge(s): {named}{more}; disable it"]


def iommu_reason(cmdline: str) -> str | None:
    """An IOMMU the kernel was told to translate with (``intel_iommu=on``/``amd_iommu=on``
    without ``iommu=pt``): NCCL's guide asks for passthrough or off for GPUDirect RDMA."""
    mode = proc_cmdline.iommu_mode(cmdline)
    if mode == "translated":
        return "IOMMU in translated mode (kernel command line): add iommu=pt for GPUDirect RDMA"
    return None


def firmware_reasons(found: dict[str, str], minimum: dict[str, str]) -> list[str]:
    """Each HCA whose firmware (``fw_ver``) is older than its declared minimum; an HCA with a
    minimum and no readable version is named too."""
    out = []
    for device, least in sorted(minimum.items()):
        have = found.get(device)
        if have is None:
            out.append(f"{device}: firmware version unreadable, {least} or newer declared")
        elif version_key(have) < version_key(least):
            out.append(f"{device}: firmware {have} older than the declared minimum {least}")
    return out


def version_key(version: str) -> tuple[int, ...]:
    """``28.39.1002`` -> (28, 39, 1002): dotted numbers compared as numbers; a part that is
    not a number counts as 0 (``20.31.1014-rc`` -> (20, 31, 0))."""
    return tuple(int(part) if part.isdecimal() else 0 for part in version.strip().split("."))


#: The fabric manager's systemd unit (NVIDIA's packages name it so).
FABRIC_MANAGER_UNIT = "nvidia-fabricmanager"


def _manager_active(run: Run, out: Fitness) -> bool:
    """Whether the fabric manager's unit is active (``systemctl is-active``); a systemctl that
    could not run is a harness error, and the manager is then taken as running."""
    rc, text = run(["systemctl", "is-active", FABRIC_MANAGER_UNIT], SMI_TIMEOUT)
    if rc in (124, 127):
        out.harness.append(f"systemctl is-active {FABRIC_MANAGER_UNIT}: {_last(text, rc)}")
        return True
    return rc == 0 and text.strip() == "active"


class Fitness:
    """One run's GPU verdicts: failures (drain), harness errors (nothing changes), warnings."""

    def __init__(self) -> None:
        self.failures: list[str] = []
        self.harness: list[str] = []
        self.warnings: list[str] = []

    def add(self, reason: str | None, warning: bool = False) -> None:
        if reason:
            (self.warnings if warning else self.failures).append(reason)

    def ran(self, rc: int, text: str, what: str) -> bool:
        """True when the tool ran to its end; else a harness error about ``what``."""
        if rc in (124, 127):
            self.harness.append(f"{what}: {_last(text, rc)}")
            return False
        return True


def check_fitness(gpu: dict[str, Any], run: Run) -> tuple[list[str], list[str], list[str]]:
    """(failures, harness errors, warnings) of the GPU fitness checks; ``gpu`` is the
    configuration's ``gpu`` section (``gpus``: the declared count; ``xid_ignore``: XID codes
    not judged, none by default)."""
    out = Fitness()
    rc, text = run(["dmesg"], DMESG_TIMEOUT)
    if out.ran(rc, text, "dmesg"):
        if rc == 0:
            ignore = {int(code) for code in gpu.get("xid_ignore", [])}
            out.add(xid_reason(dmesg_xid.xids(text), ignore))
        else:
            out.harness.append(f"dmesg could not read the kernel log: {_last(text, rc)}")
    rc, text = run(["nvidia-smi", "-q"], SMI_TIMEOUT)
    if out.ran(rc, text, "nvidia-smi -q"):
        try:
            found = nvidia_smi_q.gpus(text)
        except ParseError:
            out.harness.append(f"nvidia-smi -q printed no query (exit {rc}): {_last(text, rc)}")
        else:
            declared = gpu.get("gpus")
            out.add(count_reason(len(found), None if declared is None else int(declared)))
            manager = _manager_active(run, out) if nvswitch(found) else True
            for one in found:
                for judge in (ecc_reason, remap_reason, retired_reason, pcie_width_reason):
                    out.add(judge(one))
                out.add(fabric_reason(one, manager))
                for warn in (persistence_warning, pcie_warning, clocks_warning, fabric_warning):
                    out.add(warn(one), warning=True)
    rc, text = run(["nvidia-smi", "nvlink", "-s"], SMI_TIMEOUT)
    if out.ran(rc, text, "nvidia-smi nvlink -s"):
        try:
            out.failures += nvlink_reasons(nvidia_smi_nvlink.links(text))
        except ParseError:
            out.harness.append(f"nvidia-smi nvlink -s unreadable (exit {rc}): {_last(text, rc)}")
    check_platform(gpu, run, out)
    return out.failures, out.harness, out.warnings


#: Seconds for one platform read (``grep`` of sysfs, ``cat /proc/cmdline``, ``lspci -vvv``).
PLATFORM_TIMEOUT = 2.0
SYSFS_IB = "/sys/class/infiniband"


def _sysfs(run: Run, out: Fitness, paths: list[str], what: str) -> str | None:
    """``grep -H . PATHS`` (``path:value`` lines), None after a harness error."""
    rc, text = run(["grep", "-H", ".", *paths], PLATFORM_TIMEOUT)
    if not out.ran(rc, text, what):
        return None
    if rc != 0 and not text.strip():
        out.harness.append(f"{what}: nothing readable in {paths[0]} ...")
        return None
    return text


def check_platform(gpu: dict[str, Any], run: Run, out: Fitness) -> None:
    """What the configuration's ``gpu`` section asks beyond the GPUs themselves: ``hcas``
    (the declared HCAs: each one's PCIe link at its speed and width, sysfs), ``gpudirect_pcie``
    (true: no PCIe bridge with P2P-blocking ACS on, ``lspci -vvv``, and no translated IOMMU,
    ``/proc/cmdline``) and ``hca_firmware`` (device -> the least firmware version, sysfs
    ``fw_ver``). Nothing asked, nothing run."""
    hcas = [str(d) for d in gpu.get("hcas", [])]
    if hcas:
        files = [
            f"{SYSFS_IB}/{d}/device/{w}_link_{k}"
            for d in hcas
            for w in ("current", "max")
            for k in ("speed", "width")
        ]
        if (text := _sysfs(run, out, files, "HCA PCIe link (sysfs)")) is not None:
            try:
                out.failures += hca_link_reasons(pci_link.links(text), hcas)
            except ParseError:
                out.harness.append(f"HCA PCIe link (sysfs) unreadable: {_last(text, 1)}")
    if minimum := {str(k): str(v) for k, v in gpu.get("hca_firmware", {}).items()}:
        files = [f"{SYSFS_IB}/{d}/fw_ver" for d in sorted(minimum)]
        if (text := _sysfs(run, out, files, "HCA firmware (sysfs fw_ver)")) is not None:
            out.failures += firmware_reasons(firmware_versions(text), minimum)
    if gpu.get("gpudirect_pcie"):
        rc, text = run(["cat", "/proc/cmdline"], PLATFORM_TIMEOUT)
        if out.ran(rc, text, "/proc/cmdline"):
            out.add(iommu_reason(text))
        rc, text = run(["lspci", "-vvv"], PLATFORM_TIMEOUT * 2)
        if out.ran(rc, text, "lspci -vvv"):
            try:
                out.failures += acs_reasons(lspci.devices(text))
            except ParseError:
                out.harness.append(f"lspci -vvv printed no device (exit {rc}): {_last(text, rc)}")


def firmware_versions(text: str) -> dict[str, str]:
    """``/sys/class/infiniband/<dev>/fw_ver:<version>`` lines -> device -> version."""
    found = {}
    for line in text.splitlines():
        path, _, value = line.partition(":")
        if path.endswith("/fw_ver") and value.strip():
            found[path.split("/")[-2]] = value.strip()
    return found
