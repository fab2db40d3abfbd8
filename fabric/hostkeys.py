"""Host keys of a stack's nodes: taken from what the cloud reports, or recorded at first contact.

One module for every target. A node's keys come from, in this order:

- what the provider reports, read by the target's own source (``fabric/targets/<name>/hostkeys.py``:
  the SSH HOST KEY block cloud-init writes to an EC2 instance's console output, GCP's
  ``hostkeys/`` guest attributes), polled by :func:`reported_host_keys`; :func:`pin` writes
  them to the stack's known_hosts;
- otherwise the first SSH contact (:func:`record_first_contact`): ``ssh`` with
  ``StrictHostKeyChecking=accept-new`` into the stack's own known_hosts file only.

Either way a key that later differs from the pinned one is refused and the node named
(:class:`HostKeyChanged`). Every other SSH connection uses :func:`ssh_common_args`:
``StrictHostKeyChecking=yes`` against the stack's known_hosts, through the bastion when the
spec has one. OpenSSH does not hand ``-o`` options to the process ``ProxyJump`` starts, so the
jump is spelled out as the ``ProxyCommand`` ProxyJump would run (``ssh -W %h:%p``), with the
same known_hosts, key and checking.
"""

from __future__ import annotations

import base64
import binascii
import fcntl
import re
import shlex
import shutil
import subprocess
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import paramiko

__all__ = [
    "HostKeyChanged",
    "HostKeyError",
    "JumpHost",
    "check_contact",
    "key_line",
    "known_hosts_line",
    "known_hosts_name",
    "pin",
    "pinned_keys",
    "record_first_contact",
    "reported_host_keys",
    "ssh_common_args",
    "trust_authorities",
    "wait_first_contact",
]

#: Key types an OpenSSH server offers as host keys.
HOST_KEY_TYPES = (
    "ssh-ed25519",
    "ecdsa-sha2-nistp256",
    "ecdsa-sha2-nistp384",
    "ecdsa-sha2-nistp521",
    "ssh-rsa",
    "ssh-dss",
)
#: How long one ssh attempt may take (connect, key exchange, ``true``).
SSH_TIMEOUT = 30.0


class HostKeyError(ValueError):
    """Host key material that cannot be read (a broken console block, a bad key line)."""


class HostKeyChanged(RuntimeError):
    """A node offers (or the cloud reports) a key other than the one pinned for it."""

    def __init__(self, host: str, address: str, detail: str) -> None:
        super().__init__(
            f"{host} ({address}): host key changed: {detail}; if the node was replaced, "
            f"remove its old key (ssh-keygen -R {address} -f KNOWN_HOSTS) and run again"
        )
        self.host, self.address = host, address


@dataclass(frozen=True)
class JumpHost:
    """The bastion as the controller reaches it: address, login, port."""

    address: str
    user: str = "root"
    port: int = 22


def key_line(line: str, where: str) -> str:
    """``type base64`` of an OpenSSH public key line (comment dropped), checked."""
    parts = line.split()
    if len(parts) < 2 or parts[0] not in HOST_KEY_TYPES:
        raise HostKeyError(f"{where}: {line.strip()[:60]!r} is not an SSH host key line")
    kind, blob = parts[:2]
    try:
        raw = base64.b64decode(blob, validate=True)
    except binascii.Error as exc:
        raise HostKeyError(f"{where}: the {kind} key is not base64 ({exc})") from exc
    size = int.from_bytes(raw[:4], "big")
    if raw[4 : 4 + size].decode(errors="replace") != kind:
        raise HostKeyError(f"{where}: the {kind} key's blob names another key type")
    return f"{kind} {blob}"


def known_hosts_name(address: str, port: int = 22) -> str:
    """How known_hosts names ``address`` (``[address]:port`` off port 22)."""
    return address if port == 22 else f"[{address}]:{port}"


def known_hosts_line(names: Iterable[str], key: str) -> str:
    """A known_hosts line for ``names`` (host names, addresses, ``[addr]:port``) and ``key``."""
    return f"{','.join(names)} {key}"


def pinned_keys(known_hosts: Path, name: str) -> dict[str, str]:
    """Key type -> base64 pinned for ``name`` in ``known_hosts`` (hashed entries included)."""
    if not known_hosts.is_file():
        return {}
    keys = paramiko.HostKeys()
    for line in known_hosts.read_text().splitlines():
        # paramiko cannot read marker lines (@cert-authority: an SSH CA, target existing)
        if line.strip() and not line.lstrip().startswith(("#", "@")):
            entry = paramiko.hostkeys.HostKeyEntry.from_line(line)
            if entry is not None:
                for host in entry.hostnames:
                    keys.add(host, entry.key.get_name(), entry.key)
    entry = keys.lookup(name)
    return {kind: key.get_base64() for kind, key in (entry or {}).items()}


@contextmanager
def _locked(known_hosts: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``known_hosts`` (a lock file beside it) while editing it."""
    known_hosts.parent.mkdir(parents=True, exist_ok=True)
    with (known_hosts.parent / f".{known_hosts.name}.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def pin(known_hosts: Path, host: str, address: str, keys: Iterable[str], port: int = 22) -> bool:
    """Pin ``keys`` (``type base64``, as the cloud reported them) for ``host`` at ``address``.

    A key type already pinned for the address with another key raises
    :class:`HostKeyChanged`. Returns whether the file changed.
    """
    wanted = [key_line(k, f"{host} reported key") for k in keys]
    if not wanted:
        raise HostKeyError(f"{host}: no host key to pin")
    name = known_hosts_name(address, port)
    with _locked(known_hosts):
        pinned = pinned_keys(known_hosts, name)
        new = []
        for line in wanted:
            kind, blob = line.split()
            if kind in pinned and pinned[kind] != blob:
                raise HostKeyChanged(host, address, f"the cloud reports another {kind} key")
            if kind not in pinned:
                new.append(known_hosts_line([name], line))
        if new:
            with known_hosts.open("a") as out:
                out.write("".join(f"{line}\n" for line in new))
        return bool(new)


def trust_authorities(known_hosts: Path, lines: Iterable[str]) -> bool:
    """Add ``@cert-authority PATTERNS KEY`` lines (an SSH CA whose host certificates are
    trusted for the hosts the patterns name) to ``known_hosts``, each once; return whether the
    file changed. A host's certificate is then checked by ssh itself, strictly."""
    wanted = [line.strip() for line in lines]
    if any(not line.startswith("@cert-authority ") for line in wanted):
        raise HostKeyError("only @cert-authority lines name an SSH CA")
    with _locked(known_hosts):
        have = set(known_hosts.read_text().splitlines()) if known_hosts.is_file() else set()
        new = [line for line in dict.fromkeys(wanted) if line not in have]
        if new:
            with known_hosts.open("a") as out:
                out.write("".join(f"{line}\n" for line in new))
    return bool(new)


def _jump_command(
    jump: JumpHost, known_hosts: Path, private_key: Path | None, checking: str
) -> str:
    """The ``ProxyCommand`` of a jump through ``jump`` (what ``ProxyJump`` runs, plus options)."""
    parts = [
        "ssh",
        f"-o UserKnownHostsFile={known_hosts}",
        f"-o StrictHostKeyChecking={checking}",
        "-o BatchMode=yes",
        f"-o ConnectTimeout={int(SSH_TIMEOUT)}",
        *([f"-o IdentitiesOnly=yes -i {private_key}"] if private_key else []),
        f"-p {jump.port}",
        "-W %h:%p",
        f"{jump.user}@{jump.address}",
    ]
    return " ".join(parts)


def ssh_common_args(
    known_hosts: Path | str,
    jump: JumpHost | None = None,
    private_key: Path | str | None = None,
    *,
    checking: str = "yes",
) -> str:
    """The ssh options every connection to a node uses (Ansible's ``ansible_ssh_common_args``,
    testinfra through the inventory): the stack's known_hosts, strict checking, the jump.

    ``checking`` is ``yes``; only :func:`record_first_contact` passes ``accept-new``.
    """
    if checking not in ("yes", "accept-new"):
        raise ValueError(f"StrictHostKeyChecking={checking} is never used")
    known = Path(known_hosts)
    args = f"-o UserKnownHostsFile={known} -o StrictHostKeyChecking={checking}"
    if jump is not None:
        key = Path(private_key) if private_key else None
        # the jump host's own key is checked strictly, even during a first contact
        command = _jump_command(jump, known, key, "yes")
        args += f" -o ProxyCommand={shlex.quote(command)}"
    return args


def record_first_contact(
    host: str,
    address: str,
    *,
    user: str,
    private_key: Path,
    known_hosts: Path,
    jump: JumpHost | None = None,
    port: int = 22,
    timeout: float = SSH_TIMEOUT,
) -> bool:
    """Record ``host``'s key at first contact into the stack's ``known_hosts``; return whether
    a key was added. A key already recorded must match (:class:`HostKeyChanged` otherwise).

    Runs ``ssh -o StrictHostKeyChecking=accept-new ... true`` (within ``timeout``); the jump
    host, when there is one, must already be pinned.
    """
    name = known_hosts_name(address, port)
    before = pinned_keys(known_hosts, name)
    with _locked(known_hosts):
        _ssh_true(host, address, "accept-new", user=user, private_key=private_key,
                  known_hosts=known_hosts, jump=jump, port=port, timeout=timeout)  # fmt: skip
    return pinned_keys(known_hosts, name) != before


def check_contact(
    host: str,
    address: str,
    *,
    user: str,
    private_key: Path,
    known_hosts: Path,
    jump: JumpHost | None = None,
    port: int = 22,
    timeout: float = SSH_TIMEOUT,
) -> None:
    """Log in to ``host`` with strict checking against ``known_hosts`` (``ssh ... true``):
    :class:`HostKeyChanged` when it offers another key than the pinned one,
    ``ConnectionError`` when no key is pinned for it or it does not answer or let us in."""
    _ssh_true(host, address, "yes", user=user, private_key=private_key,
              known_hosts=known_hosts, jump=jump, port=port, timeout=timeout)  # fmt: skip


def _ssh_true(
    host: str,
    address: str,
    checking: str,
    *,
    user: str,
    private_key: Path,
    known_hosts: Path,
    jump: JumpHost | None,
    port: int,
    timeout: float,
) -> None:
    """``ssh ... true`` on ``host`` with ``StrictHostKeyChecking=checking``; a changed key
    raises :class:`HostKeyChanged` naming the node (or the bastion), other failures
    ``ConnectionError``, no answer within ``timeout`` ``TimeoutError``."""
    name = known_hosts_name(address, port)
    command = [
        "ssh",
        *shlex.split(ssh_common_args(known_hosts, jump, private_key, checking=checking)),
        "-o",
        "BatchMode=yes",
        "-o",
        "IdentitiesOnly=yes",
        "-o",
        f"ConnectTimeout={int(timeout)}",
        "-i",
        str(private_key),
        "-p",
        str(port),
        f"{user}@{address}",
        "true",
    ]
    try:
        proc = subprocess.run(
            command, capture_output=True, text=True, check=False, timeout=timeout + 5
        )
    except subprocess.TimeoutExpired as exc:
        raise TimeoutError(f"{host} ({address}): no SSH answer within {timeout:.0f}s") from exc
    changed = re.search(r"Host key for (\S+) has changed", proc.stderr)
    if changed:
        where = changed.group(1)
        if where in (address, name):
            raise HostKeyChanged(host, address, "it offers a key other than the one recorded")
        raise HostKeyChanged("the bastion", where, f"on the way to {host}")
    if proc.returncode != 0:
        detail = proc.stderr.strip().splitlines()[-1:] or [f"exit {proc.returncode}"]
        what = "first SSH contact" if checking == "accept-new" else "SSH login"
        raise ConnectionError(f"{host} ({address}): {what} failed: {detail[0]}")


def wait_first_contact(host: str, address: str, *, timeout: float, **ssh: Any) -> bool:
    """:func:`record_first_contact`, retried every 5 s until SSH answers or ``timeout`` passes
    (a node still booting); a changed key is raised at once."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return record_first_contact(host, address, **ssh)
        except (ConnectionError, TimeoutError) as exc:
            if time.monotonic() + 5 > deadline:
                raise TimeoutError(f"{exc} (gave up after {timeout:.0f}s)") from exc
            time.sleep(5)


def _cli(command: list[str], timeout: float) -> str | None:
    """stdout of a cloud CLI call, or None when the CLI is not installed or the call failed."""
    if shutil.which(command[0]) is None:
        return None
    try:
        proc = subprocess.run(command, capture_output=True, text=True, check=False, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None
    return proc.stdout if proc.returncode == 0 else None


def reported_host_keys(
    command: list[str],
    parse: Callable[[str], list[str]],
    *,
    timeout: float,
    poll: float = 15.0,
) -> list[str]:
    """The keys a cloud reports for one instance, polled until they appear or ``timeout``:
    ``command`` (the target's ``hostkeys.command(source)``, e.g. ``aws ec2
    get-console-output``) run again every ``poll`` seconds, its output read by ``parse``
    (the target's ``hostkeys.parse``).

    ``[]`` when the CLI is missing or nothing was reported in time: the caller then records
    the key at first contact.
    """
    deadline = time.monotonic() + timeout
    while True:
        out = _cli(command, timeout=min(60.0, max(timeout, 1.0)))
        if out is None and shutil.which(command[0]) is None:
            return []
        if out:
            keys = parse(out)
            if keys:
                return keys
        if time.monotonic() + poll > deadline:
            return []
        time.sleep(poll)
