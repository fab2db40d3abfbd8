"""The slurm role refuses a topology form the controller's Slurm cannot load, naming its release,
before it writes a file: its ``topology.yml`` tasks run here against this machine's real
``slurmctld -V`` (Debian 12: slurm-wlm 22.05.8, which has topology/tree but not topology/block,
and no topology.yaml)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fabric.state import REPO_ROOT

PLAY = """\
- name: The slurm role's topology check, on this machine
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Check the topology plugin against the installed Slurm
      ansible.builtin.include_role:
        name: slurm
        tasks_from: topology.yml
"""


def gate(tmp_path: Path, plugin: str) -> subprocess.CompletedProcess[str]:
    if not shutil.which("slurmctld"):
        pytest.skip("slurmctld is not installed (apt-get install slurmctld)")
    book = tmp_path / "gate.yml"
    book.write_text(PLAY)
    return subprocess.run(
        [
            str(Path(sys.executable).with_name("ansible-playbook")),
            "-i",
            "localhost,",
            "-c",
            "local",
            "-e",
            f"slurm_topology_plugin={plugin} slurm_controller_host=localhost",
            "-e",
            f"ansible_python_interpreter={sys.executable}",
            str(book),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=REPO_ROOT,
        env={
            "PATH": f"{Path(sys.executable).parent}:/usr/sbin:/usr/bin:/sbin:/bin",
            "ANSIBLE_CONFIG": str(REPO_ROOT / "ansible.cfg"),
            "HOME": str(tmp_path),
        },
    )


def installed_release() -> str:
    out = subprocess.run(
        ["slurmctld", "-V"], capture_output=True, text=True, timeout=30, check=True
    )
    return out.stdout.strip()


@pytest.mark.parametrize("plugin", ["tree"])
def test_forms_this_slurm_loads_pass(tmp_path: Path, plugin: str) -> None:
    done = gate(tmp_path, plugin)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]


@pytest.mark.parametrize(("plugin", "needs"), [("block", "23.11"), ("yaml", "25.05")])
def test_forms_this_slurm_cannot_load_are_refused_naming_its_release(
    tmp_path: Path, plugin: str, needs: str
) -> None:
    release = installed_release()
    if not release.split()[-1].startswith("22."):
        pytest.skip(f"this machine's Slurm is {release}, not Debian 12's 22.05")
    done = gate(tmp_path, plugin)
    assert done.returncode == 2, done.stdout[-2000:]
    assert (
        f"slurm_topology_plugin {plugin} needs Slurm {needs} or later, but localhost runs "
        f"{release}; use tree"
    ) in done.stdout
