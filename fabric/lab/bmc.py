"""The lab's BMCs: one sushy-tools Redfish emulator (fake driver, one system per node) on the
BMC network's gateway address, plus the notifier that makes containers follow power actions.

The emulator enforces HTTP basic auth (``SUSHY_EMULATOR_AUTH_FILE``, an htpasswd file; sushy-tools
accepts only bcrypt entries). Only the service root (``/redfish/v1``) answers without credentials,
as DMTF specifies. Clients in the lab read the credentials from ``<state>/bmc/credentials.json``
(mode 0600, git-ignored state dir) with :func:`read_credentials`.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import sys
import uuid
from pathlib import Path

from pydantic import BaseModel

from fabric.lab.process import Helper, python_env, start, stop, wait_log

NAMESPACE = uuid.UUID("5a0d3f0e-7d2b-4f55-9a57-2f1c4b1c7a11")
#: bcrypt cost of the htpasswd entry: every Redfish request is checked against it, and 2^8
#: rounds keep a check near 30 ms on the lab's 2 cores (2^12 would take ~0.5 s per request).
BCRYPT_ROUNDS = 8
CREDENTIALS_FILE = "credentials.json"
HTPASSWD_FILE = "htpasswd"


class BmcConfig(BaseModel):
    """What the emulator serves: node -> container, where it listens, where it keeps state."""

    stack: str
    nodes: dict[str, str]  # node name -> container name
    listen_ip: str
    port: int
    notifier_port: int
    state_dir: str
    username: str = "admin"
    power_state: str = "On"  # every system's power at start ("Off": a datacenter lab)


class BmcProcesses(BaseModel):
    """The emulator and notifier processes of a running BMC service."""

    emulator: Helper
    notifier: Helper


class BmcCredentials(BaseModel):
    """The Redfish login of the lab's BMCs."""

    username: str
    password: str

    def __repr__(self) -> str:
        return f"BmcCredentials(username={self.username!r}, password=***)"

    __str__ = __repr__

    def auth(self) -> tuple[str, str]:
        """Return ``(username, password)`` for ``requests``' ``auth=``."""
        return (self.username, self.password)


def system_uuid(stack: str, node: str) -> str:
    """Return the stable Redfish system UUID of ``node`` in ``stack``."""
    return str(uuid.uuid5(NAMESPACE, f"{stack}/{node}"))


def endpoints(cfg: BmcConfig) -> dict[str, dict[str, str]]:
    """Return node -> {url, system_id, username} of each node's Redfish system."""
    url = f"http://{cfg.listen_ip}:{cfg.port}"
    return {
        n: {"url": url, "system_id": system_uuid(cfg.stack, n), "username": cfg.username}
        for n in cfg.nodes
    }


def generate_password() -> str:
    """Return a fresh random BMC password (32 URL-safe characters)."""
    return secrets.token_urlsafe(24)


def htpasswd_line(username: str, password: str, rounds: int = BCRYPT_ROUNDS) -> str:
    """Return an htpasswd entry ``user:$2b$...`` (bcrypt, the only digest sushy-tools accepts)."""
    if ":" in username or not username:
        raise ValueError(
            f"bmc.username: {username!r} must be non-empty and contain no ':'; pick another name"
        )
    import bcrypt  # sushy-tools' own dependency

    digest = bcrypt.hashpw(password.encode(), bcrypt.gensalt(rounds)).decode()
    return f"{username}:{digest}\n"


def render_config(cfg: BmcConfig) -> str:
    """Return the sushy-emulator config file (Python) for ``cfg``."""
    systems = [
        {
            "uuid": system_uuid(cfg.stack, n),
            "name": n,
            "power_state": cfg.power_state,
            "external_notifier": True,
            "nics": [],
        }
        for n in cfg.nodes
    ]
    state = Path(cfg.state_dir)
    return "\n".join(
        [
            "# sushy-emulator config written by railyard (fabric/lab/bmc.py)",
            "SUSHY_EMULATOR_FAKE_DRIVER = True",
            f"SUSHY_EMULATOR_FAKE_SYSTEMS = {systems!r}",
            f"SUSHY_EMULATOR_LISTEN_IP = {cfg.listen_ip!r}",
            f"SUSHY_EMULATOR_LISTEN_PORT = {cfg.port}",
            f"SUSHY_EMULATOR_STATE_DIR = {str(state / 'emulator')!r}",
            f"SUSHY_EMULATOR_AUTH_FILE = {str(state / HTPASSWD_FILE)!r}",
            f"EXTERNAL_NOTIFICATION_URL = 'http://127.0.0.1:{cfg.notifier_port}'",
            "",
        ]
    )


def _write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` with mode 0600 (created so; never world-readable in between)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(text)
    os.chmod(path, 0o600)


def write_credentials(state_dir: str | Path, creds: BmcCredentials) -> None:
    """Write the htpasswd file the emulator checks and the client credentials file (both 0600)."""
    state = Path(state_dir)
    state.mkdir(parents=True, exist_ok=True, mode=0o700)
    _write_private(state / HTPASSWD_FILE, htpasswd_line(creds.username, creds.password))
    _write_private(state / CREDENTIALS_FILE, creds.model_dump_json())


def read_credentials(state_dir: str | Path) -> BmcCredentials:
    """Return the BMC login kept in ``<state_dir>/credentials.json`` (``state/<stack>/bmc``)."""
    path = Path(state_dir) / CREDENTIALS_FILE
    try:
        return BmcCredentials.model_validate_json(path.read_text())
    except FileNotFoundError:
        raise FileNotFoundError(
            f"{path} not found: bring the lab up first (make up / pulumi up)"
        ) from None


def _emulator_exe() -> str:
    exe = Path(sys.executable).parent / "sushy-emulator"
    if exe.is_file():
        return str(exe)
    found = shutil.which("sushy-emulator")
    if not found:
        raise RuntimeError(
            "sushy-emulator is not installed: pip install 'railyard[lab]' into the venv"
        )
    return found


def start_bmc(cfg: BmcConfig, password: str) -> BmcProcesses:
    """Write the config, credentials and container map, start the notifier then the emulator."""
    state = Path(cfg.state_dir)
    write_credentials(state, BmcCredentials(username=cfg.username, password=password))
    (state / "emulator.conf").write_text(render_config(cfg))
    (state / "containers.json").write_text(json.dumps(cfg.nodes))
    notifier = start(
        [
            sys.executable,
            "-m",
            "fabric.lab.notifier",
            "--listen",
            f"127.0.0.1:{cfg.notifier_port}",
            "--map",
            str(state / "containers.json"),
        ],
        state / "notifier.log",
        env=python_env(),
    )
    try:
        wait_log(notifier, "notifier listening")
        emulator = start(
            [_emulator_exe(), "--config", str(state / "emulator.conf")], state / "emulator.log"
        )
        wait_log(emulator, "Running on")
    except RuntimeError:
        stop(notifier)
        raise
    return BmcProcesses(emulator=emulator, notifier=notifier)


def stop_bmc(procs: BmcProcesses, state_dir: str) -> None:
    """Stop both processes and remove the BMC state directory (credentials included)."""
    stop(procs.emulator)
    stop(procs.notifier)
    shutil.rmtree(state_dir, ignore_errors=True)
