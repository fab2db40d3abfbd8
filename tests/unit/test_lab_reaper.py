"""The lab's ibsim slot reaper (``fabric.lab.reaper``).

The UDP tables are the kernel's own (``/proc/self/net/udp`` of this test process, with sockets
it bound on loopback). The end-to-end test runs a real ibsim in remote mode on loopback, started
by the lab's own ``start_ibsim`` (console FIFO and log as in the lab): ibsim's 10 slots are
filled by libibumad clients, three of them are SIGKILLed (they never detach), and a new client
(the shim ahead of umad2sim, as on every lab node) is refused until the reaper drops the dead.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from fabric.lab import reaper, umadshim
from fabric.lab.ibsim import console_path, start_ibsim
from fabric.lab.node import UMAD2SIM
from fabric.lab.process import stop
from fabric.topology.ibsim_clients import parse_attached
from fabric.topology.ibsim_console import IbsimConsole
from tests.unit.test_lab_ibsim_clients import ATTACHED
from tests.unit.test_umadshim import CLIENT, NET, TO_SWITCH, _free_udp_range


def test_udp_ports_reads_the_kernel_table() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        assert port in reaper.udp_ports(Path("/proc/self/net/udp").read_text())
        assert port in (reaper.bound_ports(os.getpid()) or set())
    assert port not in (reaper.bound_ports(os.getpid()) or set())


def test_udp_ports_reads_the_ipv6_table() -> None:
    if not Path("/proc/self/net/udp6").exists():
        pytest.skip("no IPv6 on this kernel")
    with socket.socket(socket.AF_INET6, socket.SOCK_DGRAM) as sock:
        try:
            sock.bind(("::1", 0))
        except OSError:
            pytest.skip("no ::1 here")
        port = sock.getsockname()[1]
        assert port in reaper.udp_ports(Path("/proc/self/net/udp6").read_text())


def test_udp_ports_of_a_header_only_table_is_empty() -> None:
    header = Path("/proc/self/net/udp").read_text().splitlines()[0]
    assert reaper.udp_ports(header + "\n") == set()


def test_bound_ports_of_a_gone_process_is_unknown() -> None:
    assert reaper.bound_ports(_gone_pid()) is None


def _gone_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait(timeout=10)
    return proc.pid


def test_dead_drops_only_known_hosts_whose_port_is_gone() -> None:
    clients = parse_attached(ATTACHED)  # sm2 on port 35402, sm1 on 57250
    ports = {"sm2": {35402, 58398}, "sm1": {1234}}
    gone = reaper.dead(clients, ports.get)
    assert [(c.id, c.host) for c in gone] == [(1, "sm1")]


def test_dead_keeps_clients_of_unknown_hosts_and_drops_stopped_nodes() -> None:
    clients = parse_attached(ATTACHED)
    assert reaper.dead(clients, lambda host: None) == []  # cannot judge: keep
    stopped = reaper.dead(clients, lambda host: set() if host == "sm2" else None)
    assert [c.host for c in stopped] == ["sm2"]


def test_lab_ports_reads_stopped_and_unknown_nodes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reaper, "container_pids", lambda: {"ry-n1": os.getpid(), "ry-n2": 0})
    ports = reaper.lab_ports({"n1": "ry-n1", "n2": "ry-n2", "n3": "ry-n3"})
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind(("127.0.0.1", 0))
        assert sock.getsockname()[1] in (ports("n1") or set())
    assert ports("n2") == set()  # container stopped: nothing of it runs
    assert ports("n3") == set()  # container gone
    assert ports("elsewhere") is None  # not a lab node: never judged


def test_log_follower_reads_only_what_was_appended(tmp_path: Path) -> None:
    log = tmp_path / "ibsim.log"
    log.write_text("old line\n")
    follower = reaper.LogFollower(log)
    assert follower.new_text() == ""
    with log.open("a") as fh:
        fh.write(f"ibwarn: [1] sim_ctl_new_client: {reaper.REFUSED} for client pid 4\n")
    assert reaper.REFUSED in follower.new_text()
    assert follower.new_text() == ""
    log.write_text("x\n")  # truncated (a new ibsim)
    assert follower.new_text() == "x\n"


def test_the_gap_backs_off_while_nothing_is_dropped() -> None:
    gaps = [reaper.MIN_GAP]
    for _ in range(5):
        gaps.append(reaper.next_gap(gaps[-1], dropped=0))
    assert gaps == [2.0, 4.0, 8.0, 16.0, 16.0, 16.0]
    assert reaper.next_gap(16.0, dropped=2) == reaper.MIN_GAP


needs_ibsim = pytest.mark.skipif(
    not (shutil.which("gcc") and shutil.which("ibsim") and Path(UMAD2SIM).exists()),
    reason="needs gcc, ibsim and libumad2sim (scripts/bootstrap.sh installs them)",
)


class _Sim:
    def __init__(self, tmp: Path, port: int, shim: Path) -> None:
        self.tmp, self.port, self.shim = tmp, port, shim

    def env(self, host: str, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "IBSIM_SOCKNAME")}
        return dict(
            env,
            IBSIM_SERVER_NAME="127.0.0.1",
            IBSIM_SERVER_PORT=str(self.port),
            LD_PRELOAD=f"{self.shim}:{UMAD2SIM}",
            SIM_HOST=host,
            **extra,
        )

    def hold(self, host: str) -> subprocess.Popen[str] | None:
        """A client holding a slot, or None when ibsim refused it."""
        proc = subprocess.Popen(
            [sys.executable, str(CLIENT), "hold"],
            env=self.env(host, RAILYARD_SIM_CONNECT_WAIT="0"),
            cwd=self.tmp,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert proc.stdout is not None
        if proc.stdout.readline().strip() == "ready":
            return proc
        proc.communicate(timeout=10)
        return None


@pytest.fixture
def remote_sim(tmp_path: Path) -> Iterator[tuple[_Sim, IbsimConsole]]:
    net = tmp_path / "ibsim.net"
    net.write_text(NET)
    port = _free_udp_range(11)
    log = tmp_path / "logs" / "ibsim.log"
    helper = start_ibsim(net, port, [], log)
    try:
        yield _Sim(tmp_path, port, umadshim.build()), IbsimConsole(console_path(net), log)
    finally:
        stop(helper)


@needs_ibsim
def test_reaper_frees_the_slots_of_killed_clients(
    remote_sim: tuple[_Sim, IbsimConsole],
) -> None:
    sim, console = remote_sim
    holders: list[subprocess.Popen[str]] = []
    stop_watch = threading.Event()
    said: list[str] = []
    try:
        for i in range(11):
            proc = sim.hold(f"hca{1 + i % 3}")
            if proc is None:
                break
            holders.append(proc)
        assert len(holders) == 10, "ibsim took more than its 10 clients"
        killed = holders[:3]
        for proc in killed:
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=10)
        assert len(console.attached()) == 10  # ibsim never noticed
        # every "node" here is this machine's network namespace
        here = lambda: lambda host: reaper.bound_ports(os.getpid())  # noqa: E731
        watcher = threading.Thread(
            target=reaper.watch,
            args=(
                console,
                reaper.LogFollower(console.log),  # type: ignore[arg-type]
                here,
                lambda: not stop_watch.is_set(),
                said.append,
            ),
        )
        watcher.start()
        try:
            out = subprocess.run(
                [sys.executable, str(CLIENT), "nodeinfo", TO_SWITCH, "200", "2", "500"],
                env=sim.env("hca1", RAILYARD_SIM_CONNECT_WAIT="30"),
                cwd=sim.tmp,
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
            )
        finally:
            stop_watch.set()
            watcher.join(timeout=30)
        assert out.returncode == 0, out.stderr[-600:]
        assert json.loads(out.stdout.strip().splitlines()[-1])["replies"][0]["status"] == 0
        assert len([s for s in said if s.startswith("dropped client")]) == 3, said
        attached = console.attached()
        assert len(attached) == 7, attached  # the 7 live holders; the new client detached
    finally:
        for proc in holders:
            if proc.poll() is None:
                proc.communicate(input="", timeout=10)
