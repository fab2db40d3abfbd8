"""SSH to lab nodes with paramiko, host keys checked against known keys (never auto-added)."""

from __future__ import annotations

import io
import time
from pathlib import Path

import paramiko


class SshError(RuntimeError):
    """A node could not be reached or authenticated over SSH."""


def _private_key(text: str) -> paramiko.PKey:
    return paramiko.Ed25519Key.from_private_key(io.StringIO(text))


def host_keys_from(
    known_hosts: Path | None = None, entries: dict[str, str] | None = None
) -> paramiko.HostKeys:
    """Return host keys from a known_hosts file and/or ``{address: "ssh-ed25519 AAAA..."}``."""
    keys = paramiko.HostKeys(str(known_hosts)) if known_hosts else paramiko.HostKeys()
    for host, public in (entries or {}).items():
        kind, blob = public.split()[:2]
        keys.add(
            host, kind, paramiko.PKey.from_type_string(kind, __import__("base64").b64decode(blob))
        )
    return keys


def connect(
    address: str, *, user: str, private_key: str, host_keys: paramiko.HostKeys, timeout: float = 5.0
) -> paramiko.SSHClient:
    """Open an SSH session to ``address``; an unknown or changed host key is refused."""
    client = paramiko.SSHClient()
    for host, entry in host_keys.items():
        for kind, key in entry.items():
            client.get_host_keys().add(host, kind, key)
    client.set_missing_host_key_policy(paramiko.RejectPolicy())
    try:
        client.connect(
            address,
            username=user,
            pkey=_private_key(private_key),
            timeout=timeout,
            banner_timeout=timeout,
            auth_timeout=timeout,
            allow_agent=False,
            look_for_keys=False,
        )
    except (TimeoutError, OSError, paramiko.SSHException) as exc:
        client.close()
        raise SshError(f"ssh {user}@{address}: {exc}") from exc
    return client


def run(client: paramiko.SSHClient, command: str, timeout: float = 60.0) -> tuple[int, str, str]:
    """Run ``command``; return (exit status, stdout, stderr)."""
    _, out, err = client.exec_command(command, timeout=timeout)
    stdout, stderr = out.read().decode(errors="replace"), err.read().decode(errors="replace")
    return out.channel.recv_exit_status(), stdout, stderr


def wait_ssh(
    address: str,
    *,
    user: str,
    private_key: str,
    host_keys: paramiko.HostKeys,
    timeout: float = 90.0,
) -> None:
    """Wait until ``address`` accepts our key and proves the expected host key."""
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while time.monotonic() < deadline:
        try:
            connect(address, user=user, private_key=private_key, host_keys=host_keys).close()
            return
        except SshError as exc:
            last = exc
            if "not found in known_hosts" in str(exc) or "does not match" in str(exc):
                raise
            time.sleep(1.0)
    raise SshError(f"{address} did not accept SSH within {timeout:.0f}s: {last}")
