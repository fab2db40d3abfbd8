"""ibsim's client slots back from dead processes: the lab's slot reaper.

ibsim serves at most 10 clients at once (``IBSIM_MAX_CLIENTS``, compiled in) and, in remote
mode, never notices that one died: a tool killed by a timeout's SIGKILL, or every process of a
node its BMC powered off, keeps its slot until the console's ``X <id>``. Enough of them and
every tool of the lab waits for a slot until it gives up (seen on a 32-node lab: all 10 slots
held, 8 of them by processes long gone).

The reaper runs beside ibsim (the lab starts and stops it with ibsim:
``fabric.targets.lab.dynamic_lab.IbSimReaper``) and follows ibsim's log. When ibsim refuses a
client ("can't open new connection") it lists the clients (``Attached``) and drops each one
whose node no longer has the client's UDP port bound (umad2sim registers that port as the
client's pid; see ``fabric.topology.ibsim_clients``). The refused client's shim asks again
(``RAILYARD_SIM_CONNECT_WAIT``) and gets the freed slot. It reaps at most every 2 s, and backs
off to 16 s while it finds every client alive. A node's ports are read from
``/proc/<its container's pid>/net/udp`` and ``udp6``: no exec into the node. A client of a host
the reaper does not know, or whose ports it cannot read, is never dropped.

Run: ``python -m fabric.lab.reaper --console FIFO --log IBSIM_LOG --ibsim PID:START
--node HOST=CONTAINER ...``; it exits when that ibsim process is gone.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from fabric.lab.podman import PodmanError, podman
from fabric.lab.process import Helper, python_env, start, start_time_of, wait_log
from fabric.topology.ibsim_clients import SimClient
from fabric.topology.ibsim_console import FaultError, IbsimConsole

#: What ibsim logs when every client slot is taken (ibsim.c, sim_ctl_new_client).
REFUSED = "can't open new connection"
#: Seconds between two looks at ibsim's log; the least and the most seconds between two
#: reaps (the gap doubles while reaps find every client alive: refusals then only mean a busy
#: ibsim, and each reap costs a ``podman ps`` and a console listing).
POLL = 0.5
MIN_GAP = 2.0
MAX_GAP = 16.0
#: Seconds for one console command and for ``podman ps``.
CONSOLE_TIMEOUT = 10.0
PODMAN_TIMEOUT = 30.0
#: The most of ibsim's log read in one look (a refusal storm is a few lines per second).
READ_LIMIT = 1 << 20


def udp_ports(text: str) -> set[int]:
    """Local ports of the sockets in a ``/proc/net/udp`` or ``udp6`` table.

    Rows read ``sl local_address rem_address st ...`` with addresses as ``HEXADDR:HEXPORT``.
    """
    ports = set()
    for line in text.splitlines()[1:]:
        fields = line.split()
        if len(fields) > 1 and ":" in fields[1]:
            try:
                ports.add(int(fields[1].rpartition(":")[2], 16))
            except ValueError:
                continue
    return ports


def bound_ports(pid: int) -> set[int] | None:
    """UDP ports bound in the network namespace of ``pid``; None when they cannot be read."""
    ports: set[int] = set()
    for table in ("udp", "udp6"):
        try:
            ports |= udp_ports(Path(f"/proc/{pid}/net/{table}").read_text())
        except FileNotFoundError:
            if table == "udp":
                return None
        except OSError:
            return None
    return ports


def container_pids() -> dict[str, int]:
    """Container name -> pid of its init (0 when the container is not running)."""
    out = podman(["ps", "--all", "--format", "{{.Names}}\t{{.Pid}}"], timeout=PODMAN_TIMEOUT)
    pids = {}
    for line in out.stdout.splitlines():
        name, _, pid = line.partition("\t")
        if pid.strip().isdigit():
            pids[name.strip()] = int(pid)
    return pids


def lab_ports(nodes: dict[str, str]) -> Callable[[str], set[int] | None]:
    """``host`` -> UDP ports bound on that lab node, read once per reap.

    A node whose container is stopped or gone has none bound (every client there is dead); a
    running one whose table cannot be read, or a host not in ``nodes``, gives None (unknown).
    """
    pids = container_pids()

    def ports(host: str) -> set[int] | None:
        container = nodes.get(host)
        if container is None:
            return None
        pid = pids.get(container, 0)
        return bound_ports(pid) if pid else set()

    return ports


def dead(clients: Sequence[SimClient], ports: Callable[[str], set[int] | None]) -> list[SimClient]:
    """The clients whose node is known and no longer has their UDP port bound."""
    seen: dict[str, set[int] | None] = {}
    out = []
    for client in clients:
        if client.host not in seen:
            seen[client.host] = ports(client.host)
        bound = seen[client.host]
        if bound is not None and client.pid not in bound:
            out.append(client)
    return out


def reap(console: IbsimConsole, ports: Callable[[str], set[int] | None]) -> list[SimClient]:
    """Drop every dead client from ibsim; return them."""
    gone = dead(console.attached(), ports)
    for client in gone:
        console.disconnect_client(client.id, missing_ok=True)
    return gone


class LogFollower:
    """The lines ibsim appended to its log since the last look."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = path.stat().st_size if path.exists() else 0

    def new_text(self) -> str:
        try:
            size = self.path.stat().st_size
        except OSError:
            return ""
        if size < self.offset:  # truncated: read it from the start
            self.offset = 0
        if size == self.offset:
            return ""
        with open(self.path, "rb") as fh:
            fh.seek(self.offset)
            data = fh.read(READ_LIMIT)
        self.offset += len(data)
        return data.decode(errors="replace")


def _alive(pid: int, started: int) -> bool:
    return start_time_of(pid) == started


def start_reaper(
    console: Path, log: Path, ibsim: Helper, nodes: dict[str, str], out: Path
) -> Helper:
    """Start the reaper for ``ibsim`` (its console FIFO and log) and the lab ``nodes``
    (host -> container); its own log is ``out``."""
    argv = [
        sys.executable,
        "-m",
        "fabric.lab.reaper",
        "--console",
        str(console),
        "--log",
        str(log),
        "--ibsim",
        f"{ibsim.pid}:{ibsim.start_time}",
        *[f"--node={host}={container}" for host, container in sorted(nodes.items())],
    ]
    helper = start(argv, out, env=python_env())
    wait_log(helper, "reaper watching")
    return helper


def next_gap(gap: float, dropped: int) -> float:
    """The least seconds before the next reap: ``MIN_GAP`` after a reap that dropped someone,
    else twice the last gap, up to ``MAX_GAP``."""
    return MIN_GAP if dropped else min(gap * 2, MAX_GAP)


def watch(
    console: IbsimConsole,
    follower: LogFollower,
    ports: Callable[[], Callable[[str], set[int] | None]],
    running: Callable[[], bool],
    say: Callable[[str], None],
) -> None:
    """Reap whenever ibsim refused a client (at most once per gap, see ``next_gap``), until not
    running."""
    last, gap = 0.0, MIN_GAP
    pending = False
    while running():
        pending = pending or REFUSED in follower.new_text()
        if pending and time.monotonic() - last >= gap:
            pending, last = False, time.monotonic()
            try:
                gone = reap(console, ports())
            except (FaultError, PodmanError, OSError) as exc:
                say(f"reap failed (will retry at the next refusal): {exc}")
                continue
            for client in gone:
                say(f"dropped client {client.id}: {client.node} udp port {client.pid} (gone)")
            gap = next_gap(gap, len(gone))
            if not gone:
                say(
                    f"ibsim refused a client; every attached client is alive (next look {gap:g} s on)"
                )
        time.sleep(POLL)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fabric.lab.reaper", description=__doc__)
    parser.add_argument("--console", type=Path, required=True, help="ibsim's console FIFO")
    parser.add_argument("--log", type=Path, required=True, help="ibsim's log")
    parser.add_argument("--ibsim", required=True, help="PID:START_TIME of the ibsim served")
    parser.add_argument("--node", action="append", default=[], help="HOST=CONTAINER")
    args = parser.parse_args(argv)
    try:
        pid, started = (int(part) for part in args.ibsim.split(":"))
        nodes = dict(item.split("=", 1) for item in args.node)
    except ValueError:
        parser.error("--ibsim takes PID:START_TIME and --node HOST=CONTAINER")
    console = IbsimConsole(args.console, args.log)

    def say(text: str) -> None:
        print(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {text}", flush=True)

    say(f"reaper watching ibsim {pid} for {len(nodes)} nodes")
    watch(
        console, LogFollower(args.log), lambda: lab_ports(nodes), lambda: _alive(pid, started), say
    )
    say("ibsim is gone; reaper exits")
    return 0


if __name__ == "__main__":
    sys.exit(main())
