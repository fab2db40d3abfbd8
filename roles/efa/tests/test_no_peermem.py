"""The efa role never loads nvidia_peermem (issue 40): its init needs Mellanox OFED's
peer-memory API, which EFA images lack; GPUDirect RDMA over EFA takes the dma-buf path."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

ROLE = Path(__file__).resolve().parents[1]
MODULE = "nvidia_peermem"

#: The task text issue 40 found in roles/efa/tasks/gpudirect.yml: what the check must refuse.
OLD_TASKS = """
- name: Load nvidia_peermem now and at boot.
  block:
    - name: Load nvidia_peermem.
      community.general.modprobe:
        name: nvidia_peermem
        state: present

    - name: Load nvidia_peermem at boot.
      ansible.builtin.copy:
        dest: "{{ efa_peermem_modules_file }}"
        content: "# Managed by railyard (roles/efa): GPUDirect RDMA over EFA.\\nnvidia_peermem\\n"
        mode: "0644"
"""

_MODPROBE = {"community.general.modprobe", "modprobe"}
_RUNS = {"ansible.builtin.command", "ansible.builtin.shell", "command", "shell", "raw"}
_WRITES = {
    "ansible.builtin.copy", "copy", "ansible.builtin.lineinfile", "lineinfile",
    "ansible.builtin.blockinfile", "blockinfile", "ansible.builtin.template", "template",
}  # fmt: skip


def _tasks(tasks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every task, blocks flattened."""
    out: list[dict[str, Any]] = []
    for task in tasks or []:
        out.append(task)
        for key in ("block", "rescue", "always"):
            out.extend(_tasks(task.get(key, [])))
    return out


def peermem_loads(tasks: list[dict[str, Any]]) -> list[str]:
    """The names of the tasks that load nvidia_peermem, now or at boot."""
    found = []
    for task in _tasks(tasks):
        name = task.get("name", "?")
        for module, args in task.items():
            text = yaml.safe_dump(args) if isinstance(args, dict | list) else str(args)
            if MODULE not in text:
                continue
            absent = isinstance(args, dict) and args.get("state") == "absent"
            if module in _MODPROBE and not absent:
                found.append(name)
            elif module in _RUNS and ("modprobe" in text or "insmod" in text):
                found.append(name)
            elif module in _WRITES and not absent:
                found.append(name)
    return found


def test_the_check_refuses_the_old_task() -> None:
    assert peermem_loads(yaml.safe_load(OLD_TASKS)) == [
        "Load nvidia_peermem.",
        "Load nvidia_peermem at boot.",
    ]


@pytest.mark.parametrize("path", sorted((ROLE / "tasks").glob("*.yml")), ids=lambda p: p.name)
def test_no_task_loads_nvidia_peermem(path: Path) -> None:
    assert peermem_loads(yaml.safe_load(path.read_text())) == []


def test_no_file_of_the_role_names_it_for_loading() -> None:
    """No template or file the role ships names the module (a modules-load.d line)."""
    for folder in ("templates", "files"):
        for path in (ROLE / folder).rglob("*") if (ROLE / folder).is_dir() else []:
            if path.is_file():
                assert MODULE not in path.read_text(errors="replace"), path
