"""GPU node fitness in ``railyard-health`` (fabric.verify.health_gpu.check_fitness), on real
output: an XID line from a real kernel log drains the node with the reason through ``scontrol
update ... reason=``, the XID-free H200 log resumes it; ECC, row remapper, retired pages, NVLink
and the GPU count judged on real captures; a missing or unreadable tool is a harness error."""

from __future__ import annotations

import json
import re
import signal
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from fabric.parsers.dmesg_xid import xids
from fabric.parsers.nvidia_smi_nvlink import links
from fabric.parsers.nvidia_smi_q import gpus
from fabric.state import REPO_ROOT
from fabric.verify import health, health_gpu

FIXTURES = REPO_ROOT / "tests" / "fixtures"
DEVICE = FIXTURES / "device"
H200_DMESG = (DEVICE / "dmesg__h200vm__1.txt").read_text()
H200_Q = (DEVICE / "nvidia_smi_q__h200vm__1.txt").read_text()
H200_NVLINK = (DEVICE / "nvidia_smi_nvlink__h200vm__1.txt").read_text()
#: The XID 79 line of a real ``dmesg -T`` (akash-network/support issue 209).
XID_79 = (FIXTURES / "dmesg_xid__akash209__1.txt").read_text().splitlines()[2] + "\n"


def text(name: str) -> str:
    return (FIXTURES / name).read_text()


def derived(capture: str, key: str, old: str, new: str) -> str:
    """A copy of a real capture with ONE value changed: the first ``key : old`` line's value."""
    lines = capture.splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if re.match(rf"\s*{key}\s+: {old}$", line))
    lines[at] = lines[at].replace(f": {old}", f": {new}")
    return "".join(lines)


def test_the_healthy_h200_gives_no_reason() -> None:
    (gpu,) = gpus(H200_Q)
    assert [health_gpu.ecc_reason(gpu), health_gpu.remap_reason(gpu)] == [None, None]
    assert health_gpu.retired_reason(gpu) is None
    assert [health_gpu.persistence_warning(gpu), health_gpu.pcie_warning(gpu)] == [None, None]
    assert [health_gpu.clocks_warning(gpu), health_gpu.fabric_warning(gpu)] == [None, None]
    assert health_gpu.xid_reason(xids(H200_DMESG)) is None
    assert health_gpu.nvlink_reasons(links(H200_NVLINK)) == []
    assert health_gpu.count_reason(1, 1) is None


def test_the_first_xid_is_the_reason_and_the_rest_are_counted() -> None:
    assert health_gpu.xid_reason(xids(text("dmesg_xid__akash209__1.txt"))) == (
        "XID 79 on GPU 0000:a1:00 since boot: GPU has fallen off the bus."
    )
    dbe = health_gpu.xid_reason(xids(text("dmesg_xid__gpuoperator1146__1.txt")))
    assert dbe is not None and dbe.startswith("XID 48 on GPU 0000:07:00 since boot: An uncorr")
    assert dbe.endswith("(+1 more XID lines)")


def test_an_allowlisted_code_is_not_judged() -> None:
    """The allowlist is empty by default; a code in it (configuration ``gpu.xid_ignore``) is
    skipped and the next XID becomes the reason."""
    found = xids(text("dmesg_xid__akash244__1.txt"))
    assert str(health_gpu.xid_reason(found)).startswith("XID 43 on GPU 0000:00:05")
    assert str(health_gpu.xid_reason(found, ignore={43})).startswith("XID 31 on GPU 0000:00:07")
    assert health_gpu.xid_reason(found, ignore={43, 31, 94}) is None


def test_a_row_remap_pending_on_a_real_a100() -> None:
    (gpu,) = gpus(text("nvidia_smi_q__mlengineering__1.txt"))
    assert health_gpu.remap_reason(gpu) == (
        "GPU 00000000:10:1C.0: row remap pending (reset the GPU to apply it)"
    )
    assert health_gpu.ecc_reason(gpu) is None  # 177 correctable DRAM errors: corrected


def test_uncorrectable_ecc_derived_from_the_h200() -> None:
    """DERIVED: the H200 capture with its volatile ``DRAM Uncorrectable`` 0 changed to 2."""
    (gpu,) = gpus(derived(H200_Q, "DRAM Uncorrectable", "0", "2"))
    assert gpu.dram_uncorrectable == (2, 0)
    assert health_gpu.ecc_reason(gpu) == (
        "GPU 00000000:00:06.0: 2 uncorrectable ECC errors (DRAM 2, SRAM 0)"
    )


def test_remap_failure_derived_from_the_h200() -> None:
    """DERIVED: the H200 capture with ``Remapping Failure Occurred`` No changed to Yes."""
    (gpu,) = gpus(derived(H200_Q, "Remapping Failure Occurred", "No", "Yes"))
    assert health_gpu.remap_reason(gpu) == "GPU 00000000:00:06.0: row remapping failed"


def test_retired_pages_pending_derived_from_the_h200() -> None:
    """DERIVED: the H200 ``-d PAGE_RETIREMENT`` capture with ``Pending Page Blacklist`` N/A
    changed to Yes (pre-Ampere GPUs retire pages; Hopper prints N/A)."""
    capture = (DEVICE / "nvidia_smi_q__h200vm__5.txt").read_text()
    (gpu,) = gpus(derived(capture, "Pending Page Blacklist", "N/A", "Yes"))
    assert health_gpu.retired_reason(gpu) == (
        "GPU 00000000:00:06.0: retired pages pending (reset the GPU to retire them)"
    )


def test_persistence_off_is_a_warning_derived_from_the_h200() -> None:
    """DERIVED: the H200 capture with ``Persistence Mode`` Enabled changed to Disabled."""
    (gpu,) = gpus(derived(H200_Q, "Persistence Mode", "Enabled", "Disabled"))
    assert health_gpu.persistence_warning(gpu) == (
        "GPU 00000000:00:06.0: persistence mode Disabled (run nvidia-persistenced)"
    )


def test_nvlink_inactive_where_others_are_up() -> None:
    assert health_gpu.nvlink_reasons(links(text("nvidia_smi_nvlink__azhpcdiag73__1.txt"))) == [
        "GPU 3 NVLink 3, 5 inactive (4 of 6 up)"
    ]
    assert health_gpu.nvlink_reasons(links(text("nvidia_smi_nvlink__k8stestinfra371__1.txt"))) == []


def test_fewer_gpus_than_declared() -> None:
    assert (
        health_gpu.count_reason(len(gpus(H200_Q)), 8) == "1 GPUs visible to nvidia-smi, 8 declared"
    )
    assert health_gpu.count_reason(1, None) is None


def tools(dmesg: str, smi_q: str = H200_Q, nvlink: str = H200_NVLINK, rc: int = 0):
    """A runner answering each GPU tool with a capture; ``rc`` 127 for nvidia-smi: missing."""
    calls: list[list[str]] = []

    def run(argv: Sequence[str], timeout: float) -> tuple[int, str]:
        calls.append(list(argv))
        if argv[0] == "dmesg":
            return 0, dmesg
        if rc:
            return rc, f"{argv[0]}: No such file or directory"
        return 0, nvlink if "nvlink" in argv else smi_q

    return run, calls


def test_check_fitness_runs_three_tools_each_with_a_timeout() -> None:
    run, calls = tools(H200_DMESG)
    assert health_gpu.check_fitness({"gpus": 1}, run) == ([], [], [])
    assert calls == [["dmesg"], ["nvidia-smi", "-q"], ["nvidia-smi", "nvlink", "-s"]]
    run, _ = tools(H200_DMESG + XID_79, nvlink=text("nvidia_smi_nvlink__azhpcdiag73__1.txt"))
    failures, harness, _ = health_gpu.check_fitness({"gpus": 8}, run)
    assert failures == [
        "XID 79 on GPU 0000:a1:00 since boot: GPU has fallen off the bus.",
        "1 GPUs visible to nvidia-smi, 8 declared",
        "GPU 3 NVLink 3, 5 inactive (4 of 6 up)",
    ]
    assert harness == []


def test_a_missing_or_unreadable_nvidia_smi_is_a_harness_error() -> None:
    run, _ = tools(H200_DMESG, rc=127)
    failures, harness, _ = health_gpu.check_fitness({"gpus": 8}, run)
    assert failures == []
    assert harness == [
        "nvidia-smi -q: nvidia-smi: No such file or directory",
        "nvidia-smi nvlink -s: nvidia-smi: No such file or directory",
    ]
    run, _ = tools(H200_DMESG, smi_q=H200_DMESG, nvlink=H200_DMESG)
    failures, harness, _ = health_gpu.check_fitness({"gpus": 8}, run)
    assert failures == [] and len(harness) == 2
    assert harness[0].startswith("nvidia-smi -q printed no query (exit 0): ")
    assert harness[1].startswith("nvidia-smi nvlink -s unreadable (exit 0): ")


# The program itself (health.main): its decision and what it asks of Slurm.


@pytest.fixture
def program(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict]:
    """``main`` on a GPU node's configuration, with Slurm's answers and the tools replayed:
    ``node`` is the node's (State, Reason), ``dmesg`` the kernel log; ``updates`` collects each
    ``scontrol update`` the program ran."""
    config = tmp_path / "health.json"
    config.write_text(
        json.dumps({"node": "gpu01", "ports": [], "gpudirect": [], "gpu": {"gpus": 1}})
    )
    world: dict = {"node": ("IDLE", "none"), "dmesg": H200_DMESG, "updates": [], "smi_rc": 0}

    def run(argv: Sequence[str], timeout: float = 3.0, env: object = None) -> tuple[int, str]:
        if argv[0] == "scontrol":
            world["updates"].append(list(argv))
            return 0, ""
        if argv[0] == "dmesg":
            return 0, world["dmesg"]
        if world["smi_rc"]:
            return world["smi_rc"], f"{argv[0]}: No such file or directory"
        return 0, H200_NVLINK if "nvlink" in argv else H200_Q

    monkeypatch.setattr(health, "run", run)
    monkeypatch.setattr(health, "node_state", lambda node, env: world["node"])
    world["argv"] = ["--json", "--config", str(config), "--state", str(tmp_path / "state.json")]
    yield world
    signal.alarm(0)  # main's whole-run alarm


def decide(world: dict, capsys: pytest.CaptureFixture[str]) -> tuple[int, dict]:
    rc = health.main(world["argv"])
    signal.alarm(0)
    return rc, json.loads(capsys.readouterr().out)


def test_an_xid_line_drains_the_node_and_its_absence_resumes_it(
    program: dict, capsys: pytest.CaptureFixture[str]
) -> None:
    """The H200's real kernel log with one real XID 79 line injected: drained, the XID the
    reason; the same run on the XID-free log (after a reboot) resumes the node it drained."""
    program["dmesg"] = H200_DMESG + XID_79
    rc, out = decide(program, capsys)
    reason = "railyard: XID 79 on GPU 0000:a1:00 since boot: GPU has fallen off the bus."
    assert rc == 1 and out["action"] == f"drained: {reason}"
    assert program["updates"] == [
        ["scontrol", "update", "nodename=gpu01", "state=DRAIN", f"reason={reason}"]
    ]
    program["node"], program["dmesg"], program["updates"] = ("IDLE+DRAIN", reason), H200_DMESG, []
    rc, out = decide(program, capsys)
    assert rc == 0 and out["failures"] == [] and out["action"] == "resumed"
    assert program["updates"] == [["scontrol", "update", "nodename=gpu01", "state=RESUME"]]


def test_a_healthy_gpu_node_is_left_alone(
    program: dict, capsys: pytest.CaptureFixture[str]
) -> None:
    rc, out = decide(program, capsys)
    assert (rc, out["failures"], out["harness_errors"], out["warnings"]) == (0, [], [], [])
    assert out["action"] == "healthy" and program["updates"] == []


def test_an_operators_drain_is_not_resumed(
    program: dict, capsys: pytest.CaptureFixture[str]
) -> None:
    program["node"] = ("IDLE+DRAIN", "RMA GPU 3")
    rc, out = decide(program, capsys)
    assert rc == 0 and out["action"] == "healthy" and program["updates"] == []


def test_nvidia_smi_missing_changes_nothing(
    program: dict, capsys: pytest.CaptureFixture[str]
) -> None:
    """A harness error: neither drained nor resumed, exit 3, even on a node railyard drained."""
    program["smi_rc"], program["node"] = 127, ("IDLE+DRAIN", "railyard: XID 79 ...")
    rc, out = decide(program, capsys)
    assert rc == 3 and out["failures"] == []
    assert out["action"] == "harness error: nothing changed" and program["updates"] == []


def _installed(lib: Path) -> None:
    """Copy what roles/node_health/tasks/install.yml copies, where it puts it."""
    import shutil

    import yaml

    tasks = yaml.safe_load((REPO_ROOT / "roles/node_health/tasks/install.yml").read_text())
    source = REPO_ROOT / "fabric" / "verify"
    for task in tasks:
        copy = task.get("ansible.builtin.copy", {})
        if "{{ item }}" not in str(copy.get("src", "")):
            continue
        for item in task["loop"]:
            src = Path(
                copy["src"]
                .replace("{{ node_health_source_dir }}", str(source))
                .replace("{{ item }}", item)
            )
            dest = Path(
                copy["dest"]
                .replace("{{ node_health_lib_dir }}", str(lib))
                .replace("{{ item }}", item)
            )
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src.resolve(), dest)


def test_the_installed_program_drains_on_an_xid_without_site_packages(tmp_path: Path) -> None:
    """The files the role installs, run by a Python without site-packages (no pydantic, no
    railyard package, as on a compute node), with dmesg and nvidia-smi replaying the captures:
    the injected XID line is the failure (--check: judged, nothing drained)."""
    import subprocess
    import sys

    lib, bin_dir = tmp_path / "lib", tmp_path / "bin"
    _installed(lib)
    bin_dir.mkdir()
    (tmp_path / "dmesg.txt").write_text(H200_DMESG + XID_79)
    nvlink, query = (
        DEVICE / "nvidia_smi_nvlink__h200vm__1.txt",
        DEVICE / "nvidia_smi_q__h200vm__1.txt",
    )
    scripts = {
        "dmesg": f"cat {tmp_path / 'dmesg.txt'}",
        "nvidia-smi": f'if [ "$1" = nvlink ]; then cat {nvlink}; else cat {query}; fi',
    }
    for name, body in scripts.items():
        (bin_dir / name).write_text(f"#!/bin/sh\n{body}\n")
        (bin_dir / name).chmod(0o755)
    config = tmp_path / "health.json"
    config.write_text(
        json.dumps({"node": "gpu01", "ports": [], "gpudirect": [], "gpu": {"gpus": 1}})
    )
    done = subprocess.run(
        [sys.executable, "-S", "-E", "-s", str(lib / "health.py"), "--check", "--json"]
        + ["--config", str(config), "--state", str(tmp_path / "state.json")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=tmp_path,
        env={"PATH": f"{bin_dir}:/usr/bin:/bin"},
    )
    assert done.returncode == 1, done.stdout + done.stderr
    out = json.loads(done.stdout)
    assert out["failures"] == ["XID 79 on GPU 0000:a1:00 since boot: GPU has fallen off the bus."]
    assert (out["harness_errors"], out["action"]) == ([], "checked only")
