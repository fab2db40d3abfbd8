"""Run one read-only command on an inventory host over SSH, with a timeout.

The connection is the one Ansible and the check suite use: the inventory's address, user,
private key and ``ansible_ssh_common_args`` (the stack's known_hosts with strict host key
checking, a bastion's ProxyCommand). No shell of this machine is involved.
"""

from __future__ import annotations

import shlex
import subprocess
from typing import Any

#: Seconds ssh waits for a connection.
CONNECT_TIMEOUT = 10


class RemoteError(RuntimeError):
    """The command could not be run: SSH failed or the timeout passed (a harness error)."""


class Remote:
    """SSH commands to the hosts of one YAML inventory (as ``fabric.inventory`` writes it)."""

    def __init__(self, inventory: dict[str, Any]) -> None:
        top = inventory["all"]
        self.vars: dict[str, Any] = dict(top.get("vars") or {})
        self.hosts: dict[str, dict[str, Any]] = {
            name: dict(v or {}) for name, v in (top.get("hosts") or {}).items()
        }

    def argv(self, host: str, command: str) -> list[str]:
        """The ssh command line that runs ``command`` on ``host``."""
        if host not in self.hosts:
            raise RemoteError(f"host {host!r} is not in the inventory")
        hv = {**self.vars, **self.hosts[host]}
        argv = ["ssh", "-o", "BatchMode=yes", "-o", f"ConnectTimeout={CONNECT_TIMEOUT}"]
        if key := hv.get("ansible_ssh_private_key_file"):
            argv += ["-o", "IdentitiesOnly=yes", "-i", str(key)]
        if port := hv.get("ansible_port"):
            argv += ["-p", str(port)]
        argv += shlex.split(str(hv.get("ansible_ssh_common_args") or ""))
        user = hv.get("ansible_user")
        address = str(hv.get("ansible_host") or host)
        argv += [f"{user}@{address}" if user else address, command]
        return argv

    def run(self, host: str, command: str, timeout: float) -> tuple[int, str]:
        """Run ``command`` on ``host``; return (exit status, stdout + stderr).

        Raises ``RemoteError`` when ssh itself fails (exit 255) or ``timeout`` seconds pass.
        """
        try:
            done = subprocess.run(
                self.argv(host, command),
                capture_output=True,
                text=True,
                timeout=timeout,
                check=False,
                stdin=subprocess.DEVNULL,
            )
        except subprocess.TimeoutExpired as exc:
            raise RemoteError(f"{host}: {command!r} gave no answer within {timeout:g} s") from exc
        except OSError as exc:
            raise RemoteError(f"{host}: ssh could not start: {exc}") from exc
        if done.returncode == 255:
            detail = " ".join(done.stderr.split())[:300]
            raise RemoteError(f"{host}: ssh failed: {detail or 'exit 255'}")
        return done.returncode, done.stdout + done.stderr
