"""The repository's Ansible task files and a walk over their tasks, for tests that check a
property of every task."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from fabric.state import REPO_ROOT


def tasks_in(node: Any) -> Iterator[dict[str, Any]]:
    """Every task mapping in a tasks file or playbook, blocks and handlers included."""
    if isinstance(node, list):
        for item in node:
            yield from tasks_in(item)
    elif isinstance(node, dict):
        if any(k in node for k in ("tasks", "block", "pre_tasks", "post_tasks", "handlers")):
            for key in (
                "tasks",
                "block",
                "rescue",
                "always",
                "pre_tasks",
                "post_tasks",
                "handlers",
            ):
                yield from tasks_in(node.get(key, []))
        if "name" in node and "hosts" not in node:
            yield node


#: Every file of tasks: the roles' tasks and handlers, their molecule plays, the playbooks.
TASK_FILES = sorted(
    {
        *REPO_ROOT.glob("roles/*/tasks/**/*.yml"),
        *REPO_ROOT.glob("roles/*/handlers/**/*.yml"),
        *REPO_ROOT.glob("roles/*/molecule/*/*.yml"),
        *REPO_ROOT.glob("playbooks/**/*.yml"),
    }
    - set(REPO_ROOT.glob("roles/*/molecule/*/molecule.yml"))
)
