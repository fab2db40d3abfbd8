"""The existing target's spec rules: every node has an SSH target of its own, known_hosts
lines name a node, no bastion and no fixed addresses; and the import's placeholders, which
``pulumi up`` refuses (:func:`existing_placeholder_problems`, called by the component)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from fabric.spec.checker import Checker, Rule
from fabric.spec.common import missing_per_host
from fabric.spec.constants import SSH_PLACEHOLDER
from fabric.spec.problems import Problem
from fabric.spec.storage_rules import check_storage_kinds

if TYPE_CHECKING:
    from fabric.spec.models import ClusterSpec


#: ``[user@]address[:port]``: how target existing reaches a node (existing.ssh).
_SSH_TARGET = re.compile(
    r"^(?:(?P<user>[a-z_][a-z0-9_.-]*)@)?(?P<address>[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?)"
    r"(?::(?P<port>[0-9]{1,5}))?$"
)
#: A known_hosts key line: host patterns, key type, base64 blob, optional comment.
_KNOWN_HOSTS_LINE = re.compile(
    r"^(?P<names>[^@\s]\S*)\s+(?P<kind>ssh-[a-z0-9-]+|ecdsa-sha2-nistp[0-9]+|sk-\S+)\s+"
    r"(?P<blob>[A-Za-z0-9+/]+={0,2})(\s.*)?$"
)


def ssh_target(value: str, default_user: str) -> tuple[str, str, int] | None:
    """``[user@]address[:port]`` -> (user, address, port); None when it is not that."""
    match = _SSH_TARGET.match(value)
    port = int(match.group("port") or 22) if match else 0
    if match is None or not 1 <= port <= 65535:
        return None
    return match.group("user") or default_user, match.group("address"), port


def _name_matches(pattern: str, name: str) -> bool:
    """Whether a known_hosts host pattern (``*``/``?`` wildcards, ``|1|`` hashed) names
    ``name``."""
    import fnmatch
    import hashlib
    import hmac
    from base64 import b64decode, b64encode

    if pattern.startswith("|1|"):
        try:
            salt, digest = pattern[3:].split("|", 1)
            mac = hmac.new(b64decode(salt), name.encode(), hashlib.sha1).digest()
        except ValueError:
            return False
        return b64encode(mac).decode() == digest
    return fnmatch.fnmatchcase(name, pattern)


def known_hosts_keys(lines: list[str], names: list[str]) -> list[str]:
    """The keys (``type base64``) of the known_hosts ``lines`` naming any of ``names`` (a
    node's ``address`` or ``[address]:port``, and its name); a ``!pattern`` excludes."""
    keys: list[str] = []
    for line in lines:
        match = _KNOWN_HOSTS_LINE.match(line.strip())
        if match is None:
            continue
        patterns = match.group("names").split(",")
        negated = [p[1:] for p in patterns if p.startswith("!")]
        if any(_name_matches(p, n) for p in negated for n in names):
            continue
        if any(_name_matches(p, n) for p in patterns if not p.startswith("!") for n in names):
            key = f"{match.group('kind')} {match.group('blob')}"
            if key not in keys:
                keys.append(key)
    return keys


def cert_authorities(lines: list[str], names: list[str]) -> list[str]:
    """The ``@cert-authority`` lines (an SSH CA that signs host certificates) naming any of
    ``names``, as written."""
    out = []
    for line in lines:
        parts = line.split(None, 1)
        if (
            len(parts) == 2
            and parts[0] == "@cert-authority"
            and known_hosts_keys([parts[1]], names)
        ):
            out.append(line.strip())
    return out


def _known_name(address: str, port: int) -> str:
    return address if port == 22 else f"[{address}]:{port}"


def check_existing(c: Checker) -> None:
    """A running cluster: every node has an SSH target (``[user@]address[:port]``) of its own;
    known_hosts lines are key lines that name a node; no bastion, no fixed addresses."""
    spec = c.spec
    if not c.known("target"):
        return
    if spec.existing is not None and spec.target != "existing":
        c.add("existing", f"the existing block applies only to target existing; target is "
              f"{spec.target!r}")  # fmt: skip
        return
    if spec.target != "existing":
        return
    existing = spec.existing
    if existing is None:
        c.add(
            "existing",
            "target existing needs the existing block: existing: {ssh: {NODE: "
            "[user@]address[:port], ...}}",
        )
        return
    if spec.access.bastion is not None:
        c.add("access.bastion", "target existing reaches its nodes directly; remove the bastion")
    if spec.management.addresses:
        c.add(
            "management.addresses",
            "target existing reads each node's address from existing.ssh; move them there",
        )
    owners: dict[str, str] = {}
    targets: dict[str, list[str]] = {}
    for host, value in existing.ssh.items():
        path = f"existing.ssh.{host}"
        c.check_host(path, host)
        parsed = ssh_target(value, spec.management.ssh_user)
        if parsed is None:
            c.add(
                path,
                f"{value!r} is not [user@]address[:port]; write e.g. 10.0.0.11 or "
                "admin@gpu01.example.org:2222",
            )
            continue
        if value == SSH_PLACEHOLDER:
            continue
        where = _known_name(parsed[1], parsed[2])
        if where in owners:
            c.add(path, f"{where} is already the address of {owners[where]!r}")
        owners.setdefault(where, host)
        targets[host] = [where, host]
    if c.all_hosts_known:
        missing_per_host(
            c,
            "existing.ssh",
            [host for host in c.hosts if host not in existing.ssh],
            "every node needs its SSH address: [user@]address[:port], e.g. 10.0.0.11",
            "{host}: 10.0.0.11",
        )
    for index, line in enumerate(existing.known_hosts):
        path = f"existing.known_hosts[{index}]"
        marker, _, rest = (
            line.strip().partition(" ") if line.lstrip().startswith("@") else ("", "", line.strip())
        )
        if marker not in ("", "@cert-authority"):
            c.add(
                path,
                f"{marker!r} lines are not supported for target existing; give the nodes' keys"
                " (ssh-keyscan ADDRESS) or their CA (@cert-authority PATTERN KEY)",
            )
        elif _KNOWN_HOSTS_LINE.match(rest.strip()) is None:
            c.add(
                path,
                f"{line[:40]!r} is not a known_hosts line; write 'ADDRESS ssh-ed25519 AAAA...' "
                "as ssh-keyscan ADDRESS prints it, or '@cert-authority PATTERN KEY'",
            )
        elif targets and not any(known_hosts_keys([rest], n) for n in targets.values()):
            c.add(
                path,
                f"names none of the nodes ({', '.join(sorted(owners))}); write a node's "
                "address as existing.ssh has it, or its name",
                reads=["existing.ssh"],
            )


def existing_placeholder_problems(spec: ClusterSpec) -> list[Problem]:
    """Why ``pulumi up`` refuses an existing-target spec that still holds the import's
    ``PLACEHOLDER`` SSH addresses (``validate`` accepts them: the spec serves ``check --plan``
    and the topology commands as it is). One problem naming every such node."""
    from fabric.hostlist import compress
    from fabric.spec.sm import sm_placeholder_problems

    if spec.target != "existing" or spec.existing is None:
        return []
    held = [h for h, v in spec.existing.ssh.items() if v == SSH_PLACEHOLDER]
    if not held:
        return sm_placeholder_problems(spec)
    return [
        Problem(
            "existing.ssh",
            f"{compress(held)}: still PLACEHOLDER (written by railyard import); set "
            "each node's [user@]address[:port] before pulumi up",
        ),
        *sm_placeholder_problems(spec),
    ]


def check_existing_storage(c: Checker) -> None:
    """Target existing creates no file system: it mounts existing NFS servers only."""
    check_storage_kinds(c, "existing", ("nfs",))


#: The existing target's rules, in the order their problems are reported.
RULES: tuple[Rule, ...] = (check_existing, check_existing_storage)
