"""Secrets the hand-off passes to Ansible, from the stack: today the cluster's munge key.

``pulumi up`` hands the key to its ``python -m fabric run`` child in ``RAILYARD_MUNGE_KEY``.
A day-2 ``python -m fabric run`` reads it from the stack's secret output ``munge_key``
(``pulumi stack output --show-secrets``). Where the caller set no Pulumi environment it uses
the Makefile's (``fabric.state.pulumi_env``): the project's file backend (``state/pulumi``),
the lab's public passphrase or the stack's ``state/<stack>.passphrase``. A stack that backend holds but whose key cannot be
read is an error: the ``slurm`` role would otherwise make a new key and replace the cluster's.
Neither way writes the key to a file that outlives the run.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

from fabric.handoff.vars import HandoffError
from fabric.state import StateLayout, pulumi_env

MUNGE_KEY_ENV = "RAILYARD_MUNGE_KEY"
#: The Kubernetes API server's token and CA for railyard-health's taints (orchestrator
#: kubernetes or both): ``pulumi up`` hands them to its ``fabric run`` child in these, and
#: the run gives them to roles/node_health as these secret variables.
KUBE_SECRET_ENV = {
    "RAILYARD_KUBE_TOKEN": "node_health_kube_token",
    "RAILYARD_KUBE_CA": "node_health_kube_ca",
}
MUNGE_KEY_OUTPUT = "munge_key"
#: ``pulumi stack output`` takes a few seconds; the bound is for a backend that hangs.
PULUMI_TIMEOUT = 120
FIX = (
    "run it through make (make run PLAYBOOK=...), or set PATH (the pulumi CLI), "
    "PULUMI_BACKEND_URL and PULUMI_CONFIG_PASSPHRASE[_FILE] as the Makefile does, or give the "
    f"key in {MUNGE_KEY_ENV}"
)


def pulumi_said(stderr: str) -> str:
    """pulumi's own reason: its last ``error:`` line (it names no secret value)."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("error:")]
    return (errors or lines or ["no output"])[-1].removeprefix("error:").strip()[:300]


def stack_output(stack: str, name: str, cwd: Path, state_root: Path | None = None) -> str | None:
    """The stack output ``name`` (secrets shown), or None when no backend holds the stack or
    it has no such output. HandoffError when the stack exists but cannot be read."""
    layout = StateLayout(stack, state_root)
    env = pulumi_env(layout)
    if env is None:
        return None
    pulumi = shutil.which("pulumi", path=env.get("PATH"))
    if pulumi is None:
        raise HandoffError(
            f"stack {stack}: cannot read its {name} output: the pulumi CLI is not on PATH; {FIX}"
        )
    try:
        proc = subprocess.run(
            [pulumi, "stack", "output", "--json", "--show-secrets", "--stack", stack],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            check=False,
            timeout=PULUMI_TIMEOUT,
        )
    except subprocess.TimeoutExpired:
        raise HandoffError(
            f"stack {stack}: pulumi stack output did not answer in {PULUMI_TIMEOUT} s; {FIX}"
        ) from None
    if proc.returncode != 0:
        said = pulumi_said(proc.stderr)
        if "no stack named" in said:
            return None
        raise HandoffError(f"stack {stack}: cannot read its {name} output: {said}; {FIX}")
    try:
        value = json.loads(proc.stdout or "{}").get(name)
    except (json.JSONDecodeError, AttributeError):
        raise HandoffError(f"stack {stack}: pulumi stack output gave no JSON object") from None
    return value if isinstance(value, str) and value else None


def munge_key(stack: str, cwd: Path, state_root: Path | None = None) -> str | None:
    """The cluster's munge key: from ``RAILYARD_MUNGE_KEY`` (taken out of the environment), else
    the stack's ``munge_key`` output; None when no backend holds the stack or it has no key
    (the ``slurm`` role then makes a key on the controller, as for a plain
    ``ansible-playbook`` run)."""
    return os.environ.pop(MUNGE_KEY_ENV, None) or stack_output(
        stack, MUNGE_KEY_OUTPUT, cwd, state_root
    )


def kube_secrets() -> dict[str, str]:
    """The node_health role's Kubernetes secrets ``pulumi up`` handed over (taken out of the
    environment, as the munge key is); empty when none: the role then keeps the files it
    wrote before."""
    return {
        var: value for env, var in KUBE_SECRET_ENV.items() if (value := os.environ.pop(env, ""))
    }
