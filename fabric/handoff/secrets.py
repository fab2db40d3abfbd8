"""Secrets the hand-off passes to Ansible, from the stack: today the cluster's munge key.

``pulumi up`` hands the key to its ``python -m fabric run`` child in ``RAILYARD_MUNGE_KEY``.
A day-2 ``python -m fabric run`` reads it from the stack's secret output ``munge_key``
(``pulumi stack output --show-secrets``, with the stack's backend and passphrase settings,
as ``make`` sets them). Neither way writes it to a file that outlives the run.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

MUNGE_KEY_ENV = "RAILYARD_MUNGE_KEY"
MUNGE_KEY_OUTPUT = "munge_key"


def stack_output(stack: str, name: str, cwd: Path) -> str | None:
    """The stack output ``name`` (secrets shown), or None when the stack or output is absent."""
    pulumi = shutil.which("pulumi")
    if pulumi is None:
        return None
    proc = subprocess.run(
        [pulumi, "stack", "output", "--json", "--show-secrets", "--stack", stack],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    if proc.returncode != 0:
        return None
    value = json.loads(proc.stdout or "{}").get(name)
    return value if isinstance(value, str) and value else None


def munge_key(stack: str, cwd: Path) -> str | None:
    """The cluster's munge key: from ``RAILYARD_MUNGE_KEY`` (taken out of the environment), else
    the stack's ``munge_key`` output; None when neither has one (the ``slurm`` role then makes
    a key on the controller, as for a plain ``ansible-playbook`` run)."""
    return os.environ.pop(MUNGE_KEY_ENV, None) or stack_output(stack, MUNGE_KEY_OUTPUT, cwd)
