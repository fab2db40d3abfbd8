"""Fault injection for the lab: OpenSM stop/start, link speed, netdev MTU; ibsim's console
(``fabric.topology.ibsim_console``) for cables, counters and clients. :class:`LabFaults` is
``railyard lab fault``: the same helpers, each fault recorded in the stack's state folder
(``StateLayout.lab_faults``: ``state/<stack>/lab-faults.json``) so it can be listed and put back.

An MTU fault on a lab node is set from the host (:func:`set_container_mtu`): lab containers
have no CAP_NET_ADMIN, so the host enters the node container's network namespace
(``nsenter -t <pid> -n``) and sets the MTU of the node's own end of its veth there.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple

from pydantic import BaseModel

from fabric.topology.ibsim import SPEED_MASKS, WIDTH_MASK
from fabric.topology.ibsim_console import FaultError, IbsimConsole

#: The label every lab node container carries (``fabric.targets.lab.component``): the lab made it.
LAB_LABEL = "railyard.stack"


def stop_sm(host) -> None:  # type: ignore[no-untyped-def]
    """Stop OpenSM on a testinfra host (every opensm unit)."""
    result = host.run("systemctl stop 'opensm*'")
    if result.rc != 0:
        raise FaultError(f"could not stop OpenSM: {result.stderr.strip()}")


def start_sm(host) -> None:  # type: ignore[no-untyped-def]
    """Start OpenSM again on a testinfra host."""
    result = host.run("systemctl start opensm")
    if result.rc != 0:
        raise FaultError(f"could not start OpenSM: {result.stderr.strip()}")


def set_link_speed(host, hca_port: int, switch_port: int, speed: str) -> None:  # type: ignore[no-untyped-def]
    """Limit a host's cable to ``speed`` (FDR, EDR, HDR): LinkSpeedExtEnabled on both ends.

    Real SMP Sets (``ibportstate ... espeed MASK``) from the host, on its own HCA port (direct
    route ``0``) and on the switch port at the other end of the cable (``0,<hca port>``): the
    way an admin forces a speed. ibsim recomputes the active speed at once, and an OpenSM
    sweep keeps it, because both ends allow no more. ``speed="HDR"`` restores the lab's links.
    """
    try:
        mask = SPEED_MASKS[speed][1]
    except KeyError:
        raise FaultError(
            f"speed {speed!r} has no extended-speed mask; use one of FDR, EDR, HDR"
        ) from None
    if not mask:
        raise FaultError(f"speed {speed!r} is not an extended speed; use one of FDR, EDR, HDR")
    for path, port in (("0", hca_port), (f"0,{hca_port}", switch_port)):
        result = host.run(f"ibportstate -D {path} {port} espeed {mask}")
        if result.rc != 0:
            raise FaultError(
                f"ibportstate -D {path} {port} espeed {mask} failed: {(result.stdout + result.stderr).strip()[-300:]}"
            )


def parse_container_pid(inspect_json: str, container: str) -> int:
    """Return the PID of a lab container's init from ``podman container inspect`` JSON.

    Raises :class:`FaultError` when the container is not a lab node (no ``railyard.stack``
    label: the project did not create it) or is not running (no PID, so no namespace).
    """
    try:
        data = json.loads(inspect_json)[0]
    except (ValueError, IndexError, TypeError) as exc:
        raise FaultError(
            f"podman container inspect {container}: unreadable output ({exc})"
        ) from None
    labels = (data.get("Config") or {}).get("Labels") or {}
    if LAB_LABEL not in labels:
        raise FaultError(
            f"container {container} has no {LAB_LABEL} label: not a lab node, its namespace is left alone"
        )
    state = data.get("State") or {}
    pid = int(state.get("Pid") or 0)
    if not state.get("Running") or pid <= 0:
        raise FaultError(
            f"container {container} is not running (state {state.get('Status', '?')}): no network namespace"
        )
    return pid


def parse_link_mtu(ip_json: str, netdev: str) -> int:
    """Return ``netdev``'s MTU from ``ip -j link show dev NETDEV`` output."""
    try:
        links = json.loads(ip_json)
    except ValueError as exc:
        raise FaultError(f"ip -j link show dev {netdev}: unreadable output ({exc})") from None
    for link in links if isinstance(links, list) else []:
        if link.get("ifname") == netdev and isinstance(link.get("mtu"), int):
            return int(link["mtu"])
    raise FaultError(
        f"ip -j link show dev {netdev}: no MTU for {netdev} in {ip_json.strip()[:200]!r}"
    )


def _host_run(args: list[str], what: str) -> str:
    try:
        proc = subprocess.run(args, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise FaultError(f"{what}: {' '.join(args)}: {exc}") from None
    if proc.returncode != 0:
        raise FaultError(
            f"{what}: {' '.join(args)} exited {proc.returncode}: {(proc.stderr or proc.stdout).strip()[-300:]}"
        )
    return proc.stdout


def set_container_mtu(container: str, netdev: str, mtu: int) -> int:
    """Set ``netdev``'s MTU inside lab node ``container`` from the host; return the previous MTU.

    Runs as root on the lab host: finds the container's init PID (``podman container
    inspect``; only a running container with the lab's ``railyard.stack`` label is touched),
    enters its network namespace with ``nsenter -t PID -n`` and runs ``ip link set dev NETDEV
    mtu MTU`` there, then reads the MTU back. The host-side veth peer and the bridge keep
    their MTU, so the node alone is misconfigured, as a wrong ``mtu`` on one host would be.
    Raises :class:`FaultError` naming the container and netdev when any step fails.
    """
    from fabric.lab.podman import podman

    where = f"MTU {mtu} on {container} {netdev}"
    proc = podman(["container", "inspect", container], check=False)
    if proc.returncode != 0:
        raise FaultError(f"{where}: no container {container}: {proc.stderr.strip()[-200:]}")
    pid = parse_container_pid(proc.stdout, container)
    netns = ["nsenter", "-t", str(pid), "-n"]
    before = parse_link_mtu(
        _host_run([*netns, "ip", "-j", "link", "show", "dev", netdev], where), netdev
    )
    _host_run([*netns, "ip", "link", "set", "dev", netdev, "mtu", str(mtu)], where)
    after = parse_link_mtu(
        _host_run([*netns, "ip", "-j", "link", "show", "dev", netdev], where), netdev
    )
    if after != mtu:
        raise FaultError(f"{where}: the MTU reads {after} after setting it")
    return before


# -- the lab's faults as a user injects them (``railyard lab fault``) -------------------------

#: The kinds of fault, as ``railyard lab fault`` names them (its help says what each does).
KINDS = ("pull", "speed", "width", "counter", "sm", "mtu")

#: The PortCounters fields ibsim's ``PerformanceSet`` takes that the checks judge.
COUNTER_NAMES = (
    "SymbolErrorCounter",
    "LinkErrorRecoveryCounter",
    "LinkDownedCounter",
    "PortRcvErrors",
    "PortRcvRemotePhysicalErrors",
    "PortXmitDiscards",
    "LocalLinkIntegrityErrors",
    "ExcessiveBufferOverrunErrors",
)


class Fault(BaseModel):
    """One injected fault and what puts it back."""

    kind: str
    subject: str  #: ``node:hca:port``, an SM node, or ``switch:port``
    value: str = ""  #: the fault's setting: a speed, a width, ``Counter=N``, an MTU
    restore: dict[str, str | int] = {}  #: what restoring needs (the cable's far end, an old MTU)

    @property
    def key(self) -> str:
        """``KIND SUBJECT``, how ``list`` shows it and ``restore`` names it."""
        return f"{self.kind} {self.subject}"

    def line(self) -> str:
        """One line for ``list``."""
        return f"{self.key}" + (f" {self.value}" if self.value else "")


def check_value(kind: str, value: str) -> None:
    """ValueError naming the fix unless ``value`` is a setting ``kind`` takes."""
    speeds = [s for s, (_, ext) in SPEED_MASKS.items() if ext]
    if kind == "speed" and value not in speeds:
        raise ValueError(f"speed {value!r}: use one of {', '.join(speeds)} (the lab runs HDR)")
    if kind == "width" and value not in WIDTH_MASK:
        raise ValueError(f"width {value!r}: use one of {', '.join(WIDTH_MASK)} (the lab runs 4x)")
    if kind == "counter":
        counter, _, number = value.partition("=")
        if counter not in COUNTER_NAMES:
            raise ValueError(f"counter {counter!r}: use one of {', '.join(COUNTER_NAMES)}")
        if not number.isdigit() or not 0 < int(number) < 65536:
            raise ValueError(f"counter value {number!r}: a whole number from 1 to 65535")
    if kind == "mtu" and not (value.isdigit() and 68 <= int(value) <= 9216):
        raise ValueError(f"MTU {value!r}: a whole number from 68 to 9216")


class LabPort(NamedTuple):
    """A node's HCA port on the simulated fabric, and the switch port its cable reaches."""

    node: str
    device: str
    port: int
    switch: str
    switch_port: int
    width_mask: int
    espeed_mask: int

    @property
    def subject(self) -> str:
        return f"{self.node}:{self.device}:{self.port}"


def load_faults(path: Path) -> list[Fault]:
    """The faults recorded in ``path`` (none when it is absent)."""
    if not path.is_file():
        return []
    try:
        return [Fault.model_validate(f) for f in json.loads(path.read_text())["faults"]]
    except (ValueError, KeyError, TypeError) as exc:
        first = str(exc).splitlines()[0]
        raise ValueError(
            f"{path}: unreadable ({first}); remove it once the lab is put back (make refresh)"
        ) from None


def save_faults(path: Path, faults: list[Fault]) -> None:
    """Write ``faults`` to ``path`` (removed when none is left)."""
    if not faults:
        path.unlink(missing_ok=True)
        return
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"faults": [f.model_dump() for f in faults]}, indent=1) + "\n")
    tmp.replace(path)


_PORT_LINE = re.compile(r'^\[(\d+)\]\s+"([^"]+)"\[(\d+)\]\s+w=(\d+)\s+s=(\d+)\s+e=(\d+)')


def cable_of(net_text: str, node_id: str, port: int) -> tuple[str, int, int, int]:
    """(far node id, far port, width mask, extended speed mask) of ``node_id``'s ``port`` in an
    ibsim net file (``fabric.topology.ibsim.render_net``); ValueError when it has no cable."""
    inside = False
    for line in net_text.splitlines():
        if line.startswith(("Ca\t", "Switch\t")):
            inside = f'"{node_id}"' in line.split("#", 1)[0]
            continue
        match = _PORT_LINE.match(line) if inside else None
        if match and int(match[1]) == port:
            return match[2], int(match[3]), int(match[4]), int(match[6])
    raise ValueError(f"{node_id} port {port} has no cable in the lab's ibsim net file; use port 1")


class LabFaults:
    """Inject and restore faults on a running lab, from its state folder (``lab.json``, the
    ibsim net file and console, the SSH key and ``known_hosts``); every injected fault is
    recorded in ``StateLayout.lab_faults`` so it can be listed and put back."""

    def __init__(self, state_dir: Path) -> None:
        from fabric.state import StateLayout

        self.layout = StateLayout.at(state_dir)
        self.book = self.layout.lab_faults
        described = self.layout.lab_json
        if not described.is_file():
            raise FileNotFoundError(f"{described} not found: bring the lab up first (make up)")
        self.lab = json.loads(described.read_text())
        self.nodes: dict[str, dict[str, Any]] = {str(n["name"]): n for n in self.lab["nodes"]}

    # -- naming what to break, before anything is touched ----------------------------------
    def node(self, name: str) -> dict[str, Any]:
        if name not in self.nodes:
            raise ValueError(f"no node {name!r} in this lab; its nodes: {', '.join(self.nodes)}")
        return self.nodes[name]

    def port(self, text: str) -> LabPort:
        """``NODE[:HCA[:PORT]]`` -> the port and its cable (HCA defaults to the node's simulated
        one, PORT to 1)."""
        name, _, rest = text.partition(":")
        device, _, port_text = rest.partition(":")
        entry = self.node(name)
        sim = str(entry.get("sim_host") or "")
        if not sim:
            raise ValueError(f"{name} has no simulated HCA: it is not on the InfiniBand fabric")
        own = sim.split(":", 1)[1]
        if device and device != own:
            raise ValueError(f"{name} has HCA {own}, not {device}; write {name}:{own}")
        if port_text and not port_text.isdigit():
            raise ValueError(f"port {port_text!r} in {text!r} is not a number; e.g. {name}:{own}:1")
        port = int(port_text or 1)
        if not self.layout.ibsim_net.is_file():
            raise FileNotFoundError(f"{self.layout.ibsim_net} not found: this lab has no ibsim")
        switch, switch_port, width, espeed = cable_of(self.layout.ibsim_net.read_text(), sim, port)
        return LabPort(name, own, port, switch, switch_port, width, espeed)

    def switch_port(self, text: str) -> tuple[str, str]:
        """``SWITCH:PORT`` or ``PORT`` -> (the switch's container, the port)."""
        switch = self.lab.get("switch")
        if not switch:
            raise ValueError(
                "this lab has no Ethernet switch (a RoCE lab has one: make up STACK=roce-lab)"
            )
        name, _, port = text.rpartition(":")
        if name and name != switch["name"]:
            raise ValueError(f"no switch {name!r} in this lab; its switch is {switch['name']}")
        if not port:
            raise ValueError(f"no port in {text!r}; write {switch['name']}:PORT")
        return str(switch["container"]), port

    def subnet_managers(self) -> list[str]:
        """The inventory's ``subnet_managers`` (none when the inventory says nothing)."""
        import yaml

        if not self.layout.inventory.is_file():
            return []
        doc = yaml.safe_load(self.layout.inventory.read_text()) or {}
        group = (doc.get("all", {}).get("children", {}) or {}).get("subnet_managers") or {}
        return list(group.get("hosts") or {})

    # -- the faults -------------------------------------------------------------------------
    def recorded(self) -> list[Fault]:
        return load_faults(self.book)

    def inject(self, kind: str, subject: str, value: str = "") -> Fault:
        """Inject one fault; record it; return it. ValueError for a subject or value that names
        nothing in this lab (before anything is touched), FaultError when the lab refused."""
        check_value(kind, value)
        fault = self._plan(kind, subject, value)
        faults = self.recorded()
        if any(f.key == fault.key for f in faults):
            raise ValueError(
                f"{fault.key} is injected already; put it back first: "
                f"railyard lab fault restore {fault.key}"
            )
        self._apply(fault, restore=False)
        save_faults(self.book, [*faults, fault])
        return fault

    def restore(self, kind: str | None = None, subject: str | None = None) -> list[Fault]:
        """Put back the fault ``KIND SUBJECT`` (every one, newest first, when ``kind`` is None);
        return what was put back. A fault whose restore fails stays recorded."""
        faults = self.recorded()
        if kind is None:
            chosen = list(reversed(faults))
        else:
            key = self._plan(kind, subject or "", "").key
            chosen = [f for f in faults if f.key == key]
            if not chosen:
                shown = ", ".join(f.key for f in faults) or "none"
                raise ValueError(f"{key} is not injected; injected now: {shown}")
        done: list[Fault] = []
        try:
            for fault in chosen:
                self._apply(fault, restore=True)
                done.append(fault)
        finally:
            save_faults(self.book, [f for f in faults if f not in done])
        return done

    def _plan(self, kind: str, subject: str, value: str) -> Fault:
        if kind in ("pull", "speed", "width", "counter"):
            port = self.port(subject)
            restore: dict[str, str | int] = {
                "switch": port.switch,
                "switch_port": port.switch_port,
                "width_mask": port.width_mask,
                "espeed_mask": port.espeed_mask,
            }
            return Fault(kind=kind, subject=port.subject, value=value, restore=restore)
        if kind == "sm":
            self.node(subject)
            sms = self.subnet_managers()
            if sms and subject not in sms:
                raise ValueError(f"{subject} runs no subnet manager; this lab's: {', '.join(sms)}")
            return Fault(kind=kind, subject=subject)
        if kind == "mtu":
            _, port = self.switch_port(subject)
            name = self.lab["switch"]["name"]
            return Fault(kind=kind, subject=f"{name}:{port}", value=value, restore={})
        raise ValueError(f"no fault kind {kind!r}; use one of {', '.join(KINDS)}")

    def _apply(self, fault: Fault, *, restore: bool) -> None:
        r = fault.restore
        if fault.kind == "pull":
            node, device, port = fault.subject.split(":")
            console = IbsimConsole(self.layout.ibsim_console, self.layout.ibsim_log)
            if restore:
                console.link(node, device, int(port), str(r["switch"]), int(r["switch_port"]))
            else:
                console.unlink(node, device, int(port))
        elif fault.kind == "counter":
            node, _, _ = fault.subject.split(":")
            counter, _, number = fault.value.partition("=")
            console = IbsimConsole(self.layout.ibsim_console, self.layout.ibsim_log)
            value = 0 if restore else int(number)
            console.set_counter(str(r["switch"]), int(r["switch_port"]), counter, value)
        elif fault.kind in ("speed", "width"):
            node, _, port = fault.subject.split(":")
            with self._host(node) as host:
                if fault.kind == "speed":
                    espeed = int(r["espeed_mask"]) if restore else SPEED_MASKS[fault.value][1]
                    set_port_masks(host, int(port), int(r["switch_port"]), "espeed", espeed)
                else:
                    width = int(r["width_mask"]) if restore else WIDTH_MASK[fault.value]
                    set_port_masks(host, int(port), int(r["switch_port"]), "width", width)
        elif fault.kind == "sm":
            with self._host(fault.subject) as host:
                (start_sm if restore else stop_sm)(host)
        elif fault.kind == "mtu":
            from fabric.lab.switch import SwitchError, in_netns, set_port_mtu

            container = str(self.lab["switch"]["container"])
            port = fault.subject.rpartition(":")[2]
            try:
                if restore:
                    set_port_mtu(container, port, int(r["mtu"]))
                else:
                    shown = in_netns(container, "ip", "-j", "link", "show", "dev", port)
                    fault.restore = {"mtu": parse_link_mtu(shown, port)}
                    set_port_mtu(container, port, int(fault.value))
            except SwitchError as exc:
                raise FaultError(str(exc)) from None

    @contextmanager
    def _host(self, name: str) -> Iterator[_SshHost]:
        from fabric.lab.ssh import SshError, connect, host_keys_from

        try:
            client = connect(
                str(self.node(name)["address"]),
                user="root",
                private_key=self.layout.ssh_key.read_text(),
                host_keys=host_keys_from(self.layout.known_hosts),
            )
        except SshError as exc:
            raise FaultError(str(exc)) from None
        with client:
            yield _SshHost(client)


class _Result(NamedTuple):
    rc: int
    stdout: str
    stderr: str


class _SshHost:
    """A lab node over SSH with testinfra's ``run`` shape, for the helpers above."""

    def __init__(self, client: Any) -> None:
        self.client = client

    def run(self, command: str) -> _Result:
        from fabric.lab.ssh import run

        return _Result(*run(self.client, command, timeout=30))


def set_port_masks(host, hca_port: int, switch_port: int, field: str, mask: int) -> None:  # type: ignore[no-untyped-def]
    """Set ``field`` (``espeed`` or ``width``) to ``mask`` on both ends of a host's cable, as
    :func:`set_link_speed` does: the HCA port (direct route ``0``), then the switch port."""
    for path, port in (("0", hca_port), (f"0,{hca_port}", switch_port)):
        result = host.run(f"ibportstate -D {path} {port} {field} {mask}")
        if result.rc != 0:
            raise FaultError(
                f"ibportstate -D {path} {port} {field} {mask} failed: "
                f"{(result.stdout + result.stderr).strip()[-300:]}"
            )
