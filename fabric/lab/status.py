"""``lab status``: per node, the container, SSH (real host-key check), BMC power and HCA ports.

A port's rate is the link's, in Gb/s as ``check --plan`` and ``watch`` show it: its active
width times its active speed from ``smpquery portinfo``. ibstat's own ``Rate`` is no help in
the lab: under ibsim it reads 104 for a 4xHDR link (``tests/fixtures/ibstat__ibsimparse__1.txt``).
"""

from __future__ import annotations

import json
from pathlib import Path

import requests
from pydantic import BaseModel

from fabric.graph import GraphError, link_rate
from fabric.lab.bmc import read_credentials
from fabric.lab.node import state as container_state
from fabric.lab.ssh import SshError, connect, host_keys_from, run
from fabric.parsers.ibstat import IbstatReport, parse
from fabric.parsers.smpquery import PortInfoReport, parse_portinfo
from fabric.state import StateLayout


class PortStatus(BaseModel):
    """One HCA port as ibstat (state) and its PortInfo (width, speed) on the node report it."""

    device: str  #: the name inside the node (ibsim0 in the lab)
    declared_device: str | None = None  #: the spec's name of the same HCA (mlx5_0)
    port: int
    state: str
    physical_state: str
    width: str | None = None  #: active width (4x)
    speed: str | None = None  #: active speed (HDR)
    rate_gbps: float | None = None  #: width x speed, as plan and watch show it; None when unknown

    def shown(self) -> str:
        """``ibsim0=mlx5_0/1 Active LinkUp 4xHDR 200 Gb/s``."""
        name = f"{self.device}={self.declared_device}" if self.declared_device else self.device
        rate = f" {self.width}{self.speed} {self.rate_gbps:g} Gb/s" if self.rate_gbps else ""
        return f"{name}/{self.port} {self.state} {self.physical_state}{rate}"


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

    @property
    def simulated(self) -> bool:
        """Whether any node's HCA is ibsim's (its numbers then need :data:`SIMULATED_NOTE`)."""
        return any(n.ports for n in self.nodes)


#: What ``lab status`` and the report say under a simulated fabric's numbers.
SIMULATED_NOTE = (
    "simulated fabric: ibsim's fastest rate is HDR, so a 400 Gb/s (NDR) link in the spec runs "
    "at 200 Gb/s here, and the HCA a node calls ibsim0 is the spec's mlx5_0 (the lab maps "
    "device names)"
)


def port_statuses(
    ibstat: IbstatReport, portinfo: dict[int, PortInfoReport], declared: str | None
) -> list[PortStatus]:
    """Each port of ``ibstat``, its rate from its PortInfo (``portinfo``: port -> report)."""
    out = []
    for device in ibstat.devices:
        for p in device.ports:
            info = portinfo.get(p.port)
            width = info.width_active if info and info.ok else None
            speed = info.speed_active if info and info.ok else None
            try:
                rate = link_rate(width, speed) if width and speed else None
            except GraphError:
                rate = None
            out.append(
                PortStatus(
                    device=device.name,
                    declared_device=declared,
                    port=p.port,
                    state=p.state,
                    physical_state=p.physical_state,
                    width=width,
                    speed=speed,
                    rate_gbps=rate,
                )
            )
    return out


def _read_ports(client: object, declared: str | None) -> tuple[list[PortStatus], str | None]:
    """(ports, error) of the node behind ``client``: ibstat, then one PortInfo per port, each
    under a timeout."""
    rc, out, err = run(client, "timeout 20 ibstat", timeout=30)  # type: ignore[arg-type]
    if rc != 0:
        return [], f"ibstat failed ({rc}): {err.strip()[:200]}"
    report = parse(out)
    portinfo = {}
    for device in report.devices:
        for p in device.ports:
            query = f"timeout 20 smpquery -C {device.name} -P {p.port} -D portinfo 0 {p.port}"
            rc, text, _ = run(client, query, timeout=30)  # type: ignore[arg-type]
            if rc == 0:
                portinfo[p.port] = parse_portinfo(text)
    return port_statuses(report, portinfo, declared), None


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
                    declared = str(node["sim_host"]).partition(":")[2] or None
                    ports, error = _read_ports(client, declared)
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
