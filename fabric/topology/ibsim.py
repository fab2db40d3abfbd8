"""Render a ``FabricGraph`` as an ibsim net file (ibnetdiscover format plus ibsim options).

Facts from ibsim 0.10's parser (``ibsim/sim_net.c``) that shape the output:

* Node records are ``Switch N "id" # "description"`` / ``Ca N "id" # "description"`` and
  port lines ``[port] "remote id"[remote port] w=W s=S``. ``caguid=``/``switchguid=`` lines
  before a node set its GUID (a CA's port p gets GUID node GUID + p); ``devid=`` sets the
  device id reported by the following nodes. Lines ibsim does not know (``vendid=``) are ignored.
* ``w=`` is the LinkWidthEnabled mask (1=1x, 2=4x, 4=8x, 8=12x, 16=2x), ``s=`` the
  LinkSpeedEnabled mask (1=SDR, 2=DDR, 4=QDR) and ``e=`` the LinkSpeedExtEnabled mask
  (1=FDR, 2=EDR, 4=HDR). Debian 12's ibsim 0.10 rejects ``e=`` above 7 ("bad extended speed
  15 = should be between 0 to 7") and the ``4xNDR`` comment form ("cannot parse speed"):
  **it has no NDR (nor XDR)**. Proven here: with ``w=2 s=7 e=7`` on both ends, OpenSM brings
  the link up and ``ibnetdiscover`` shows ``4xHDR``. So NDR and XDR are simulated as HDR, the
  closest speed ibsim has, and FDR10 as QDR. ``simulated(graph)`` returns the graph as ibsim
  will report it, for comparing with discovered output. ibsim warns "cannot parse remote lid
  and connection type" once per port line written this way; the warning is harmless.
* A CA's node description is ``"<host> <device>"`` (``"gpu01 mlx5_0"``), so ibnetdiscover
  shows the host name as its first word. ``sim_host(host, device)`` is the node id to put in
  ``SIM_HOST`` so a libumad tool runs as that host's HCA.
* Lines are at most 255 characters; a switch has at most 255 ports. Raise ibsim's limits for
  large fabrics with ``ibsim_limits(graph)`` (``-N`` nodes, ``-S`` switches, ``-P`` ports).
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import time
import uuid
from pathlib import Path
from typing import IO, TYPE_CHECKING

from fabric.graph import FabricGraph, GraphError, Link, link_rate

if TYPE_CHECKING:
    from fabric.spec import ClusterSpec

#: LinkWidthEnabled mask for each width.
WIDTH_MASK = {"1x": 1, "2x": 16, "4x": 2, "8x": 4, "12x": 8}
#: Speed ibsim simulates for each declared speed: HDR is its fastest.
SIM_SPEED = {
    "SDR": "SDR",
    "DDR": "DDR",
    "QDR": "QDR",
    "FDR10": "QDR",
    "FDR": "FDR",
    "EDR": "EDR",
    "HDR": "HDR",
    "NDR": "HDR",
    "XDR": "HDR",
}
#: (LinkSpeedEnabled, LinkSpeedExtEnabled) masks for each simulated speed.
SPEED_MASKS = {
    "SDR": (1, 0),
    "DDR": (3, 0),
    "QDR": (7, 0),
    "FDR": (7, 1),
    "EDR": (7, 3),
    "HDR": (7, 7),
}
CA_DEVID = 0x1021  # ConnectX-7
SWITCH_DEVID = 0xD2F2  # Quantum-2 (QM9700)
MAX_LINE = 255


def simulated_device(spec: ClusterSpec, host: str) -> str | None:
    """The device the lab simulates on ``host``: its first InfiniBand HCA."""
    hcas = spec.hosts[host].hcas if host in spec.hosts else []
    return next((h.device for h in hcas if h.link_layer == "InfiniBand"), None)


def sim_host(host: str, device: str) -> str:
    """Return the ibsim node id (``SIM_HOST`` value) of ``host``'s HCA ``device``."""
    return f"{host}:{device}"


def sim_speed(speed: str) -> str:
    """Return the speed ibsim simulates for a declared ``speed`` (HDR for NDR and XDR)."""
    try:
        return SIM_SPEED[speed]
    except KeyError as exc:
        raise GraphError(f"unknown link speed {speed!r}; use one of {list(SIM_SPEED)}") from exc


def _node_ids(graph: FabricGraph) -> dict[str, str]:
    ids: dict[str, str] = {}
    names = [s.name for s in graph.switches.values()]
    unique = len(set(names)) == len(names)
    for guid, sw in graph.switches.items():
        ids[guid] = sw.name if unique and '"' not in sw.name else f"S-{guid[2:]}"
    for guid, ca in graph.cas.items():
        ids[guid] = sim_host(ca.host, ca.device) if ca.host and ca.device else f"H-{guid[2:]}"
    bad = [i for i in ids.values() if any(c in i for c in '#@"')]
    if bad:
        raise GraphError(
            f"ibsim node ids may not contain '#', '@' or '\"': {bad[:3]}; rename those hosts"
        )
    return ids


def _port_opts(link: Link) -> str:
    if link.width not in WIDTH_MASK:
        raise GraphError(f"unknown link width {link.width!r}; use one of {list(WIDTH_MASK)}")
    speed, ext = SPEED_MASKS[sim_speed(link.speed)]
    return f"w={WIDTH_MASK[link.width]} s={speed} e={ext}"


def render_net(graph: FabricGraph) -> str:
    """Return an ibsim net file for ``graph`` (switches first, then CAs)."""
    ids = _node_ids(graph)
    ports: dict[str, list[tuple[int, str, int, Link]]] = graph.neighbours()
    out = ["# ibsim net file written by railyard (fabric.topology.ibsim.render_net)", ""]

    def record(header: str, guid_line: str, guid: str) -> None:
        out.append(guid_line)
        if len(header) > MAX_LINE:
            raise GraphError(
                f"ibsim line longer than {MAX_LINE} characters: {header[:60]}...; shorten the description"
            )
        out.append(header)
        for local, remote, remote_port, link in sorted(ports.get(guid, []), key=lambda p: p[0]):
            out.append(f'[{local}]\t"{ids[remote]}"[{remote_port}]\t{_port_opts(link)}')
        out.append("")

    for guid, sw in graph.switches.items():
        record(
            f'Switch\t{sw.ports} "{ids[guid]}"\t# "{sw.description}" enhanced port 0',
            f"devid={SWITCH_DEVID:#x}\nswitchguid={guid}",
            guid,
        )
    for guid, ca in graph.cas.items():
        record(
            f'Ca\t{ca.ports} "{ids[guid]}"\t# "{ca.description}"',
            f"devid={CA_DEVID:#x}\ncaguid={guid}",
            guid,
        )
    return "\n".join(out)


def net_hash(net_text: str) -> str:
    """Short identity of an ibsim net file: a changed file means a new simulator instance (the
    lab's IbSim resource is replaced, stopping its nodes' OpenSMs first)."""
    return hashlib.sha256(net_text.encode()).hexdigest()[:16]


def ibsim_limits(graph: FabricGraph) -> list[str]:
    """Return ibsim ``-N/-S/-P`` arguments large enough for ``graph`` (with headroom)."""
    nodes = len(graph.switches) + len(graph.cas)
    ports = sum(s.ports + 1 for s in graph.switches.values()) + sum(
        c.ports + 1 for c in graph.cas.values()
    )
    return ["-N", str(nodes + 16), "-S", str(len(graph.switches) + 16), "-P", str(ports + 64)]


def simulated(graph: FabricGraph) -> FabricGraph:
    """Return ``graph`` with each link's width and speed as ibsim will report them."""
    links = []
    for link in graph.links:
        width, speed = link.width, sim_speed(link.speed)
        links.append(link._replace(width=width, speed=speed, rate_gbps=link_rate(width, speed)))
    return FabricGraph(switches=dict(graph.switches), cas=dict(graph.cas), links=links)


UMAD2SIM = "/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so"


class IbsimSession:
    """A real ``ibsim`` serving one net file on a private abstract socket (``IBSIM_SOCKNAME``).

    Use as a context manager; ``run(argv, sim_host=...)`` runs a libumad tool (ibstat,
    ibnetdiscover, opensm) attached to that node. Nothing else on the machine shares the socket.
    """

    def __init__(self, net_text: str, workdir: str, limits: list[str] | None = None) -> None:
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.net = self.workdir / "fabric.net"
        self.net.write_text(net_text)
        self.limits = limits or []
        self.env = dict(
            os.environ,
            IBSIM_SOCKNAME=f"railyard-{uuid.uuid4().hex[:12]}",
            OSM_CACHE_DIR=str(self.workdir),
        )
        self._proc: subprocess.Popen[bytes] | None = None
        self._log: IO[str] | None = None

    def __enter__(self) -> IbsimSession:
        log_path = self.workdir / "ibsim.log"
        self._log = open(log_path, "w")
        self._proc = subprocess.Popen(
            ["ibsim", *self.limits, "-n", "-s", str(self.net)],
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 60
        while "Network simulator ready" not in log_path.read_text():
            if self._proc.poll() is not None:
                raise RuntimeError(f"ibsim exited: {log_path.read_text()[-2000:]}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"ibsim not ready within 60 s; see {log_path}")
            time.sleep(0.05)
        return self

    def run(self, argv: list[str], sim_host: str | None = None, timeout: float = 600) -> str:
        """Run ``argv`` under umad2sim (as ``sim_host`` if given); return stdout."""
        env = dict(self.env, LD_PRELOAD=UMAD2SIM)
        if sim_host:
            env["SIM_HOST"] = sim_host
        done = subprocess.run(
            argv, env=env, capture_output=True, text=True, timeout=timeout, check=False
        )
        if done.returncode:
            raise RuntimeError(
                f"{' '.join(argv)} failed ({done.returncode}): {done.stderr[-2000:]}"
            )
        return done.stdout

    def sweep(self, sim_host: str | None = None) -> str:
        """Run OpenSM once (``opensm -o``) and return its log."""
        log = self.workdir / "opensm.log"
        self.run(["opensm", "-o", "-f", str(log)], sim_host=sim_host)
        return log.read_text()

    def __exit__(self, *exc: object) -> None:
        if self._proc is not None:
            self._proc.terminate()
            self._proc.wait(timeout=10)
        if self._log is not None:
            self._log.close()
