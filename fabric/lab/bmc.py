"""The lab's BMCs: one sushy-tools Redfish emulator (fake driver, one system per node) on the
BMC network's gateway address, plus the notifier that makes containers follow power actions."""

from __future__ import annotations

import json
import shutil
import sys
import uuid
from pathlib import Path

from pydantic import BaseModel

from fabric.lab.process import Helper, start, stop, wait_log

NAMESPACE = uuid.UUID("5a0d3f0e-7d2b-4f55-9a57-2f1c4b1c7a11")


class BmcConfig(BaseModel):
    """What the emulator serves: node -> container, where it listens, where it keeps state."""

    stack: str
    nodes: dict[str, str]  # node name -> container name
    listen_ip: str
    port: int
    notifier_port: int
    state_dir: str


class BmcProcesses(BaseModel):
    """The emulator and notifier processes of a running BMC service."""

    emulator: Helper
    notifier: Helper


def system_uuid(stack: str, node: str) -> str:
    """Return the stable Redfish system UUID of ``node`` in ``stack``."""
    return str(uuid.uuid5(NAMESPACE, f"{stack}/{node}"))


def endpoints(cfg: BmcConfig) -> dict[str, dict[str, str]]:
    """Return node -> {url, system_id} of each node's Redfish system."""
    url = f"http://{cfg.listen_ip}:{cfg.port}"
    return {n: {"url": url, "system_id": system_uuid(cfg.stack, n)} for n in cfg.nodes}


def render_config(cfg: BmcConfig) -> str:
    """Return the sushy-emulator config file (Python) for ``cfg``."""
    systems = [
        {"uuid": system_uuid(cfg.stack, n), "name": n, "power_state": "On", "external_notifier": True, "nics": []}
        for n in cfg.nodes
    ]
    return "\n".join(
        [
            "# sushy-emulator config written by railyard (fabric/lab/bmc.py)",
            "SUSHY_EMULATOR_FAKE_DRIVER = True",
            f"SUSHY_EMULATOR_FAKE_SYSTEMS = {systems!r}",
            f"SUSHY_EMULATOR_LISTEN_IP = {cfg.listen_ip!r}",
            f"SUSHY_EMULATOR_LISTEN_PORT = {cfg.port}",
            f"SUSHY_EMULATOR_STATE_DIR = {str(Path(cfg.state_dir) / 'emulator')!r}",
            f"EXTERNAL_NOTIFICATION_URL = 'http://127.0.0.1:{cfg.notifier_port}'",
            "",
        ]
    )


def _emulator_exe() -> str:
    exe = Path(sys.executable).parent / "sushy-emulator"
    if exe.is_file():
        return str(exe)
    found = shutil.which("sushy-emulator")
    if not found:
        raise RuntimeError("sushy-emulator is not installed: pip install 'railyard[lab]' into the venv")
    return found


def start_bmc(cfg: BmcConfig) -> BmcProcesses:
    """Write the config and container map, start the notifier then the emulator; wait for both."""
    state = Path(cfg.state_dir)
    state.mkdir(parents=True, exist_ok=True)
    (state / "emulator.conf").write_text(render_config(cfg))
    (state / "containers.json").write_text(json.dumps(cfg.nodes))
    notifier = start(
        [sys.executable, "-m", "fabric.lab.notifier", "--listen", f"127.0.0.1:{cfg.notifier_port}",
         "--map", str(state / "containers.json")],
        state / "notifier.log",
        env=_env(),
    )
    try:
        wait_log(notifier, "notifier listening")
        emulator = start([_emulator_exe(), "--config", str(state / "emulator.conf")], state / "emulator.log")
        wait_log(emulator, "Running on")
    except RuntimeError:
        stop(notifier)
        raise
    return BmcProcesses(emulator=emulator, notifier=notifier)


def _env() -> dict[str, str]:
    import os

    env = dict(os.environ)
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = root + (":" + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def stop_bmc(procs: BmcProcesses, state_dir: str) -> None:
    """Stop both processes and remove the BMC state directory."""
    stop(procs.emulator)
    stop(procs.notifier)
    shutil.rmtree(state_dir, ignore_errors=True)
