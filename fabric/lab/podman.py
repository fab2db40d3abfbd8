"""Run the podman CLI with the project's containers.conf (runc, lowered ulimits)."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence

from fabric.state import REPO_ROOT

#: The repository's containers.conf, used when ``CONTAINERS_CONF`` is not set.
REPO_CONTAINERS_CONF = REPO_ROOT / "scripts" / "containers.conf"


class PodmanError(RuntimeError):
    """A podman command failed; the message carries the command and its stderr."""


def podman_env() -> dict[str, str]:
    """Return the environment for podman: ``CONTAINERS_CONF`` from the caller, else the repo's."""
    env = dict(os.environ)
    if not env.get("CONTAINERS_CONF") and REPO_CONTAINERS_CONF.is_file():
        env["CONTAINERS_CONF"] = str(REPO_CONTAINERS_CONF)
    return env


def podman(
    args: Sequence[str], *, check: bool = True, input: bytes | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """Run ``podman ARGS``; raise ``PodmanError`` naming the command when it fails and ``check``."""
    exe = shutil.which("podman")
    if exe is None:
        raise PodmanError("podman is not installed: apt-get install podman runc")
    raw = subprocess.run(
        [exe, *args],
        input=input,
        capture_output=True,
        env=podman_env(),
        timeout=timeout,
        check=False,
    )
    proc = subprocess.CompletedProcess(
        raw.args,
        raw.returncode,
        raw.stdout.decode(errors="replace"),
        raw.stderr.decode(errors="replace"),
    )
    if check and proc.returncode != 0:
        raise PodmanError(
            f"podman {' '.join(args)} failed ({proc.returncode}): {proc.stderr.strip()}"
        )
    return proc


def exists(kind: str, name: str) -> bool:
    """Return whether a podman object of ``kind`` (image, container, network) named ``name`` exists."""
    sub = {
        "image": ["image", "exists"],
        "container": ["container", "exists"],
        "network": ["network", "exists"],
    }
    return podman([*sub[kind], name], check=False).returncode == 0
