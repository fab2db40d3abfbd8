"""SSH keys made with ssh-keygen: the stack's login key pair and each node's host key."""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

from pydantic import BaseModel


class KeyPair(BaseModel):
    """An OpenSSH key pair: private key (OpenSSH PEM) and public key line."""

    private_key: str
    public_key: str


def generate(comment: str, kind: str = "ed25519") -> KeyPair:
    """Generate a passphrase-less key pair with ``ssh-keygen -t kind -C comment``."""
    with tempfile.TemporaryDirectory(prefix="rykey-") as tmp:
        path = Path(tmp) / "key"
        proc = subprocess.run(
            ["ssh-keygen", "-q", "-t", kind, "-N", "", "-C", comment, "-f", str(path)],
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        )
        if proc.returncode != 0:
            raise RuntimeError(
                f"ssh-keygen failed: {proc.stderr.strip()} (apt-get install openssh-client)"
            )
        return KeyPair(
            private_key=path.read_text(), public_key=path.with_suffix(".pub").read_text().strip()
        )


def known_hosts_line(names: list[str], public_key: str) -> str:
    """Return a known_hosts line for ``names`` (host names and addresses) with ``public_key``."""
    kind, blob = public_key.split()[:2]
    return f"{','.join(names)} {kind} {blob}"
