"""A simulated InfiniBand fabric on this host for the sweep: ibsim (local mode), one OpenSM
sweep, its console, and the three faults the sweep must name.

ibsim runs in local mode on a private abstract socket (``IBSIM_SOCKNAME``), so nothing else on
the machine shares it; its console reads a FIFO (``fabric.lab.faults.IbsimConsole`` writes
commands there and reads the replies from its log). Tools attach through umad2sim
(``LD_PRELOAD``) as the HCA named by ``SIM_HOST``. OpenSM runs once (``opensm -o``): it
assigns LIDs, programs the forwarding tables and brings every port to Active, then exits, so no
SM re-sweeps behind a fault or a timing. Everything is stopped on exit, within bounds.

Faults, from ibsim 0.10's console and SMA (``ibsim/sim_cmd.c``, ``ibsim/sim_mad.c``):

* a pulled cable: ``Unlink "node"[port]`` (both ends Down/Polling);
* a narrow link: a PortInfo Set of LinkWidthEnabled = 1x on a switch port (``ibportstate LID
  PORT width 1``, an SMP from the vantage host, as an admin would send it); ibsim sets the
  active width of the port and of its peer to 1x at once;
* a counter rise: ``PerformanceSet "node"[port] PortCounters.SymbolErrorCounter=N``.
"""

from __future__ import annotations

import os
import subprocess
import time
import uuid
from pathlib import Path
from typing import NamedTuple

from fabric.graph import Ca, FabricGraph, Link, Switch
from fabric.lab.process import Helper, start, stop, wait_log
from fabric.parsers.iblinkinfo import parse as parse_iblinkinfo
from fabric.spec import ClusterSpec
from fabric.topology.from_spec import graph_from_spec
from fabric.topology.ibsim import UMAD2SIM, sim_host
from fabric.topology.ibsim_console import FaultError, IbsimConsole

#: Bounds (s): ibsim reading its net file, one OpenSM sweep, one console command.
IBSIM_READY_S = 300.0
OPENSM_S = 600.0
CONSOLE_S = 60.0
#: The counter fault: this counter set to this value on a switch port.
COUNTER = "SymbolErrorCounter"
COUNTER_VALUE = 500


def fat_tree(hosts: int) -> FabricGraph:
    """A two-level fat tree of radix-r switches, 1 HCA (4xNDR, simulated as 4xHDR) per host:
    r/2 hosts and r/2 uplinks per leaf, half as many spines as leaves, each leaf cabled to
    every spine (``fabric.topology.from_spec`` deals uplink i of leaf L to spine (L*r/2 + i) mod
    spines). r = 64 up to 2,048 hosts (2,048: 64 leaves, 32 spines), 128 up to 8,192 (4,096: 64
    leaves, 32 spines of 128 ports, as a 64-port NDR switch split into 128 ports offers; 64-port
    switches in two levels end at 2,048 hosts, and more leaves than that would leave the spines
    in two unconnected halves), 8 below 64 hosts."""
    radix = 8 if hosts < 64 else 64 if hosts <= 2048 else 128
    n = radix // 2
    if hosts <= 0 or hosts % (2 * n) or hosts > radix * n:
        raise ValueError(f"{hosts} hosts: use a positive multiple of {2 * n}, at most 8192")
    leaves, width = hosts // n, len(str(hosts))
    spec = ClusterSpec.model_validate(
        {
            "name": "sweep",
            "target": "lab",
            "nodes": [
                {
                    "names": f"gpu[{1:0{width}d}-{hosts:0{width}d}]",
                    "hcas": [{"device": "mlx5_0", "rate_gbps": 400}],
                }
            ],
            "fabric": {
                "kind": "infiniband",
                "mtu": 4096,
                "topology": {
                    "kind": "fat-tree",
                    "leaves": leaves,
                    "spines": leaves // 2,
                    "ports_per_switch": radix,
                    "nodes_per_leaf": n,
                    "uplinks_per_leaf": n,
                },
                "infiniband": {"subnet_managers": [{"host": "gpu" + "1".zfill(width)}]},
            },
            "management": {"subnet": "198.19.0.0/17"},
        }
    )
    return graph_from_spec(spec)


class HostCable(NamedTuple):
    """A cable between a switch port and an HCA port."""

    switch: Switch
    switch_port: int
    ca: Ca
    ca_port: int

    @property
    def host(self) -> str:
        return self.ca.host or self.ca.guid


def host_cables(graph: FabricGraph) -> list[HostCable]:
    """Every switch-to-HCA cable of ``graph``, in link order."""
    out = []
    for link in graph.links:
        if link.a_guid in graph.switches and link.b_guid in graph.cas:
            out.append(
                HostCable(
                    graph.switches[link.a_guid], link.a_port, graph.cas[link.b_guid], link.b_port
                )
            )
        elif link.b_guid in graph.switches and link.a_guid in graph.cas:
            out.append(
                HostCable(
                    graph.switches[link.b_guid], link.b_port, graph.cas[link.a_guid], link.a_port
                )
            )
    return out


def host_on_spine(graph: FabricGraph) -> tuple[FabricGraph, str]:
    """``graph`` miscabled: the last host's cable moved from its leaf to the port of a spine
    that one of that leaf's up-links used (that up-link removed). A host on a spine puts compute
    nodes at two ranks, which OpenSM's fat-tree engine refuses (``fabric_mark_leaf_switches``),
    so it falls back to minhop. Returns the graph and a line saying what moved."""
    cables = host_cables(graph)
    moved = cables[-1]
    leaf = moved.switch.guid
    uplink = next(
        link
        for link in graph.links
        if leaf in (link.a_guid, link.b_guid)
        and link.a_guid in graph.switches
        and link.b_guid in graph.switches
    )
    spine, spine_port = (
        (uplink.b_guid, uplink.b_port) if uplink.a_guid == leaf else (uplink.a_guid, uplink.a_port)
    )
    ends = {(leaf, moved.switch_port), (moved.ca.guid, moved.ca_port)}
    old = next(
        link
        for link in graph.links
        if {(link.a_guid, link.a_port), (link.b_guid, link.b_port)} == ends
    )
    links = [link for link in graph.links if link not in (old, uplink)]
    links.append(
        Link(spine, spine_port, moved.ca.guid, moved.ca_port, old.width, old.speed, old.rate_gbps)
    )
    what = (
        f"{moved.host}'s cable moved from {moved.switch.name} port {moved.switch_port} to "
        f"{graph.switches[spine].name} port {spine_port}"
    )
    return FabricGraph(switches=graph.switches, cas=graph.cas, links=links), what


def _width(graph: FabricGraph, cable: HostCable) -> str:
    """The declared width of ``cable``."""
    for link in graph.links:
        ends = {(link.a_guid, link.a_port), (link.b_guid, link.b_port)}
        if (cable.switch.guid, cable.switch_port) in ends:
            return link.width
    return ""


class Faults(NamedTuple):
    """The three faults, on host cables away from the vantage host: the last cable pulled, the
    middle one (or the first other one wider than 1x) narrowed to 1x, the second one's switch
    port given a counter rise."""

    pulled: HostCable
    narrow: HostCable
    counter: HostCable

    @classmethod
    def pick(cls, declared: FabricGraph, vantage_host: str) -> Faults:
        cables = host_cables(declared)
        usable = [c for c in cables if c.host != vantage_host]
        if len(usable) < 3:
            raise ValueError("the fabric needs at least 3 host cables besides the vantage host's")
        pulled, counter = usable[-1], usable[1]
        wide = {(c.switch.guid, c.switch_port) for c in cables if _width(declared, c) != "1x"}
        narrow = [
            c
            for c in usable
            if c not in (pulled, counter) and (c.switch.guid, c.switch_port) in wide
        ]
        if not narrow:
            raise ValueError("the fabric needs a host cable wider than 1x to narrow")
        middle = usable[len(usable) // 2]
        return cls(pulled, middle if middle in narrow else narrow[0], counter)

    def expected(self) -> dict[str, str]:
        """The cause (``fabric.verify.causes`` wording) each fault must read as -> its host."""
        return {
            "cable down": self.pulled.host,
            "port degraded": self.narrow.host,
            "cable with errors": self.counter.host,
        }

    def describe(self) -> str:
        return (
            f"pulled {self.pulled.host}'s cable ({self.pulled.switch.name} port "
            f"{self.pulled.switch_port}), narrowed {self.narrow.host}'s to 1x "
            f"({self.narrow.switch.name} port {self.narrow.switch_port}), {COUNTER}="
            f"{COUNTER_VALUE} on {self.counter.switch.name} port {self.counter.switch_port} "
            f"({self.counter.host}'s cable)"
        )


class SimFabric:
    """ibsim serving ``net_text`` under ``workdir``, swept once by OpenSM as ``sm_host``
    (``opensm_args`` added to its command line, e.g. ``["-R", "ftree"]``; its log is
    ``workdir/opensm.log``).

    Use as a context manager. ``env(sim_host)`` is the environment a tool needs to act as that
    node's HCA.
    """

    def __init__(
        self,
        net_text: str,
        workdir: Path,
        sm_host: str,
        limits: list[str] | None = None,
        opensm_args: list[str] | None = None,
    ) -> None:
        self.workdir = workdir
        self.net = workdir / "fabric.net"
        self.fifo = workdir / "ibsim.console"
        self.log = workdir / "ibsim.log"
        self.sm_host = sm_host
        self.limits = limits or []
        self.opensm_args = opensm_args or []
        self.sock = f"railyard-sweep-{uuid.uuid4().hex[:12]}"
        self.net_text = net_text
        self.helper: Helper | None = None
        self.console = IbsimConsole(self.fifo, self.log)
        self.opensm_s = 0.0

    def env(self, sim_host: str) -> dict[str, str]:
        """umad2sim's environment for a tool acting as ``sim_host``'s HCA."""
        return {
            "IBSIM_SOCKNAME": self.sock,
            "LD_PRELOAD": UMAD2SIM,
            "SIM_HOST": sim_host,
            "OSM_CACHE_DIR": str(self.workdir),
            "OSM_TMP_DIR": str(self.workdir),
        }

    def __enter__(self) -> SimFabric:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.net.write_text(self.net_text)
        if not self.fifo.exists():
            os.mkfifo(self.fifo, 0o600)
        env = dict(os.environ, IBSIM_SOCKNAME=self.sock)
        try:
            self.helper = start(
                ["ibsim", *self.limits, "-s", str(self.net)],
                self.log,
                env=env,
                stdin_fifo=self.fifo,
            )
            wait_log(self.helper, "Network simulator ready", timeout=IBSIM_READY_S)
            self.sweep_sm()
        except BaseException:
            self.close()
            raise
        return self

    def sweep_sm(self) -> None:
        """One OpenSM sweep (``opensm -o``) as ``sm_host``; raise FaultError when it fails."""
        began = time.monotonic()
        done = self.tool(
            ["opensm", "-o", *self.opensm_args, "-f", str(self.workdir / "opensm.log")],
            self.sm_host,
            OPENSM_S,
        )
        self.opensm_s = time.monotonic() - began
        if done.returncode != 0:
            raise FaultError(f"opensm -o exited {done.returncode}: {done.stderr.strip()[-300:]}")

    def tool(
        self, argv: list[str], sim_host: str, timeout: float
    ) -> subprocess.CompletedProcess[str]:
        """Run a libumad tool as ``sim_host``'s HCA, bounded by ``timeout``."""
        return subprocess.run(
            argv,
            env=dict(os.environ, **self.env(sim_host)),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def pull_cable(self, node: str, port: int) -> None:
        """Unlink ``node`` (an ibsim node id) port ``port``."""
        reply = self.console.send(f'Unlink "{node}"[{port}]', timeout=CONSOLE_S)
        if "not found" in reply or "can't" in reply:
            raise FaultError(f"ibsim refused Unlink {node}[{port}]: {reply.strip()}")

    def narrow(self, vantage: str, switch_lid: int, port: int) -> None:
        """Set LinkWidthEnabled 1x on a switch port by an SMP from ``vantage``."""
        argv = ["ibportstate", str(switch_lid), str(port), "width", "1"]
        done = self.tool(argv, vantage, CONSOLE_S)
        if done.returncode != 0:
            raise FaultError(
                f"{' '.join(argv)} exited {done.returncode}: {done.stderr.strip()[-300:]}"
            )

    def raise_counter(self, node: str, port: int, counter: str, value: int) -> None:
        """Set a port's PortCounters field in ibsim."""
        self.console.set_counter(node, port, counter, value)

    def inject(self, faults: Faults, vantage: str) -> None:
        """Inject the three faults (``vantage`` sends the width SMP)."""
        done = self.tool(["iblinkinfo", "--switches-only"], vantage, OPENSM_S)
        lid = switch_lid(done.stdout, faults.narrow.switch.name)
        ca = faults.pulled.ca
        # the ibsim node id: render_net's host:device, else the description (a net file whose
        # CA records carry no description of their own repeat their id there)
        node = sim_host(ca.host, ca.device) if ca.host and ca.device else ca.description
        self.pull_cable(node, faults.pulled.ca_port)
        self.narrow(vantage, lid, faults.narrow.switch_port)
        self.raise_counter(
            faults.counter.switch.name, faults.counter.switch_port, COUNTER, COUNTER_VALUE
        )

    def close(self) -> None:
        """Stop ibsim (SIGTERM, then SIGKILL) and remove its FIFO."""
        if self.helper is not None:
            stop(self.helper, timeout=10.0)
            self.helper = None
        self.fifo.unlink(missing_ok=True)

    def __exit__(self, *exc: object) -> None:
        self.close()


def switch_lid(linkinfo: str, switch: str) -> int:
    """A switch's LID from ``iblinkinfo`` output."""
    for node in parse_iblinkinfo(linkinfo).nodes:
        if node.kind == "switch" and node.name == switch and node.links:
            return node.links[0].lid
    raise FaultError(f"switch {switch} not found in iblinkinfo")
