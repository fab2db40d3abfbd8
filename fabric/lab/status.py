"""``lab status``: per node, the container, SSH (real host-key check), BMC power and HCA ports."""

from __future__ import annotations

import json
from pathlib import Path

import requests
from pydantic import BaseModel

from fabric.lab.bmc import read_credentials
from fabric.lab.node import state as container_state
from fabric.lab.ssh import SshError, connect, host_keys_from, run
from fabric.parsers.ibstat import parse
from fabric.state import StateLayout


class PortStatus(BaseModel):
    """One HCA port as ibstat on the node reports it."""

    device: str
    port: int
    state: str
    physical_state: str
    rate_gbps: float


class NodeStatus(BaseModel):
    """One node's status; ``error`` says what could not be checked."""

    name: str
    running: bool
    ssh: bool
    power: str | None
    ports: list[PortStatus]
    error: str | None = None


class LabStatus(BaseModel):
    """Every node of the stack."""

    nodes: list[NodeStatus]


def _power(url: str, system_id: str, auth: tuple[str, str] | None) -> str | None:
    try:
        resp = requests.get(f"{url}/redfish/v1/Systems/{system_id}", auth=auth, timeout=5)
        resp.raise_for_status()
        return str(resp.json().get("PowerState"))
    except (requests.RequestException, ValueError):
        return None


def node_status(
    node: dict[str, object], key: str, known_hosts: Path, bmc_auth: tuple[str, str] | None = None
) -> NodeStatus:
    """Check one node described by a ``lab.json`` entry; ``bmc_auth`` is the Redfish login."""
    current = container_state(str(node["container"]))
    running = bool(current and current["running"])
    power = _power(str(node["bmc_url"]), str(node["system_id"]), bmc_auth)
    ssh, ports, error = False, [], None
    if running:
        try:
            client = connect(
                str(node["address"]),
                user="root",
                private_key=key,
                host_keys=host_keys_from(known_hosts),
            )
        except SshError as exc:
            error = str(exc)
        else:
            ssh = True
            with client:
                if node.get("sim_host"):
                    rc, out, err = run(client, "ibstat")
                    if rc == 0:
                        report = parse(out)
                        ports = [
                            PortStatus(
                                device=d.name,
                                port=p.port,
                                state=p.state,
                                physical_state=p.physical_state,
                                rate_gbps=float(p.rate_gbps),
                            )
                            for d in report.devices
                            for p in d.ports
                        ]
                    else:
                        error = f"ibstat failed ({rc}): {err.strip()[:200]}"
    return NodeStatus(
        name=str(node["name"]), running=running, ssh=ssh, power=power, ports=ports, error=error
    )


def lab_status(state_dir: Path) -> LabStatus:
    """Return the status of every node of the stack whose state lives in ``state_dir``."""
    layout = StateLayout.at(state_dir)
    described = layout.lab_json
    if not described.is_file():
        raise FileNotFoundError(
            f"{described} not found: bring the lab up first (make up / pulumi up)"
        )
    lab = json.loads(described.read_text())
    key = layout.ssh_key.read_text()
    creds = Path(lab.get("bmc_credentials") or layout.bmc_credentials)
    auth = read_credentials(creds.parent).auth() if creds.is_file() else None
    return LabStatus(nodes=[node_status(n, key, layout.known_hosts, auth) for n in lab["nodes"]])
