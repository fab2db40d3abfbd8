"""The lab's umad shim, built with the host's gcc and run against a real ibsim (local mode).

A libibumad client (``umad_client.py``, ctypes) runs preloaded with the shim ahead of umad2sim,
as every lab node's processes are. The fabric is one switch and three HCAs; a "silent" client
on hca3 registers as its SM and never answers, so an SMInfo Get sent to hca3 gets no reply,
as a MAD ibsim hands to a dead or busy SM. umad2sim alone never times that send out.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import pytest

from fabric.lab import umadshim
from fabric.lab.node import UMAD2SIM
from fabric.topology.ibsim_clients import parse_attached

CLIENT = Path(__file__).with_name("umad_client.py")
SLOW_WRITE = Path(__file__).with_name("slow_umad_write.c")
NET = """Switch 8 "sw1"
[1] "hca1"[1]
[2] "hca2"[1]
[3] "hca3"[1]

Hca 1 "hca1"
[1] "sw1"[1]

Hca 1 "hca2"
[1] "sw1"[2]

Hca 1 "hca3"
[1] "sw1"[3]
"""
#: hca1 port 1 -> sw1, sw1 port 3 -> hca3 (directed route)
TO_HCA3 = "0,1,3"
TO_SWITCH = "0,1"

pytestmark = pytest.mark.skipif(
    not (shutil.which("gcc") and shutil.which("ibsim") and Path(UMAD2SIM).exists()),
    reason="needs gcc, ibsim and libumad2sim (scripts/bootstrap.sh installs them)",
)


class Sim:
    """A running ibsim and the environment its clients need."""

    def __init__(self, tmp: Path, shim: Path) -> None:
        self.tmp, self.shim = tmp, shim
        self.console: IO[bytes] | None = None  # ibsim's stdin, once it runs
        self.env = dict(os.environ, IBSIM_SOCKNAME=f"railyard-umadshim-{os.getpid()}")
        for key in ("IBSIM_SERVER_NAME", "IBSIM_SERVER_PORT", "LD_PRELOAD"):
            self.env.pop(key, None)

    def client_env(
        self, host: str, shim: bool = True, between: Path | None = None, **extra: str
    ) -> dict[str, str]:
        """``between``: a library preloaded after the shim and ahead of umad2sim."""
        libs = [str(self.shim)] if shim else []
        libs += [str(between)] if between else []
        preload = ":".join([*libs, UMAD2SIM])
        return dict(self.env, LD_PRELOAD=preload, SIM_HOST=host, **extra)

    def run(
        self,
        host: str,
        *args: str,
        shim: bool = True,
        between: Path | None = None,
        timeout: float = 30,
    ) -> dict:
        proc = subprocess.run(
            [sys.executable, str(CLIENT), *args],
            env=self.client_env(host, shim, between),
            cwd=self.tmp,  # umad2sim writes its sysfs tree (sys-<pid>/) in the working directory
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        assert proc.returncode == 0, proc.stderr[-800:]
        return json.loads(proc.stdout.strip().splitlines()[-1])

    def start(self, host: str, *args: str, **extra: str) -> subprocess.Popen[str]:
        """Start a long-running client; return once it said ``ready``."""
        proc = subprocess.Popen(
            [sys.executable, str(CLIENT), *args],
            env=self.client_env(host, **extra),
            cwd=self.tmp,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.strip() == "ready", proc.stderr.read() if proc.stderr else ""
        return proc

    def attached_hosts(self) -> list[str]:
        """The host of every client ibsim lists on its console (``Attached``)."""
        assert self.console is not None
        log = self.tmp / "ibsim.log"
        seen = len(log.read_bytes())
        self.console.write(b"Attached\n")
        self.console.flush()
        deadline = time.monotonic() + 5
        while b"sim>" not in log.read_bytes()[seen:] and time.monotonic() < deadline:
            time.sleep(0.05)
        return sorted(c.host for c in parse_attached(log.read_bytes()[seen:].decode()))

    def drop_clients(self, host: str) -> None:
        """Detach ``host``'s clients on ibsim's console (``Attached``, then ``X <id>``), as the
        lab's ping checks drop a killed server's registration."""
        assert self.console is not None
        log = self.tmp / "ibsim.log"
        seen = len(log.read_bytes())
        self.console.write(b"Attached\n")
        self.console.flush()
        time.sleep(0.3)
        reply = log.read_bytes()[seen:].decode(errors="replace")
        for client in parse_attached(reply):
            if client.host == host:
                self.console.write(f"X {client.id}\n".encode())
        self.console.flush()
        time.sleep(0.2)


def _stop(proc: subprocess.Popen[str]) -> None:
    """End a client the way a tool ends (its exit handler detaches it from ibsim: a killed
    client keeps its slot, ibsim never notices); kill it only if it does not end."""
    try:
        proc.communicate(input="", timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate(timeout=10)


@pytest.fixture(scope="module")
def shim(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return umadshim.build(tmp_path_factory.mktemp("umadshim-cache"))


@pytest.fixture
def sim(tmp_path: Path, shim: Path) -> Iterator[Sim]:
    net = tmp_path / "net"
    net.write_text(NET)
    sim = Sim(tmp_path, shim)
    proc = subprocess.Popen(
        ["ibsim", "-s", str(net)],
        env=sim.env,
        cwd=tmp_path,
        stdin=subprocess.PIPE,
        stdout=(tmp_path / "ibsim.log").open("wb"),
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 10
        while "Network simulator ready" not in (tmp_path / "ibsim.log").read_text():
            assert proc.poll() is None and time.monotonic() < deadline, "ibsim did not start"
            time.sleep(0.05)
        sim.console = proc.stdin
        yield sim
    finally:
        proc.kill()
        proc.wait(timeout=10)


@pytest.fixture
def silent_sm(sim: Sim, tmp_path: Path) -> Iterator[Path]:
    """hca3's SM-class client, which receives SMPs and answers none; yields its count file."""
    count = tmp_path / "received"
    proc = sim.start("hca3", "silent", str(count), SIM_SET_ISSM="1")
    yield count
    _stop(proc)


def test_build_is_cached_by_source_hash(shim: Path) -> None:
    assert shim.name == umadshim.LIBRARY and shim.stat().st_size > 0
    assert umadshim.build(shim.parent.parent) == shim


def test_nodes_created_at_once_all_get_the_built_shim(tmp_path: Path) -> None:
    """Pulumi creates the lab's nodes from threads of one process, each building the shim into
    an empty cache at once (a per-process temporary name once made all but one fail)."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=6) as pool:
        built = list(pool.map(lambda _: umadshim.build(tmp_path), range(6)))
    assert len(set(built)) == 1 and built[0].read_bytes().startswith(b"\x7fELF")
    assert [p.name for p in built[0].parent.iterdir()] == [umadshim.LIBRARY]


def test_unanswered_send_is_retried_then_handed_back_timed_out(sim: Sim, silent_sm: Path) -> None:
    out = sim.run("hca1", "sminfo", TO_HCA3, "200", "2", "1500")
    replies = out["replies"]
    assert len(replies) == 1, out
    reply = replies[0]
    # ib_umad: the send comes back with status ETIMEDOUT, header plus the 24-byte MAD header
    assert reply["status"] == 110 and reply["length"] == 24, reply
    assert reply["tid_low"] == out["tid_low"] and reply["method"] == 0x01, reply
    # sent once and retried twice, 200 ms each, before it was handed back
    assert 550 <= reply["after_ms"] < 1400, reply
    assert silent_sm.read_text() == "3"


def test_without_the_shim_the_send_is_never_timed_out(sim: Sim, silent_sm: Path) -> None:
    """The limit the shim lifts: umad2sim alone hands back nothing (the reader's own poll ends)."""
    out = sim.run("hca1", "sminfo", TO_HCA3, "200", "2", "1500", shim=False)
    assert out["replies"] == [], out
    assert silent_sm.read_text() == "1"


def test_answered_send_gets_its_reply_and_no_timeout_later(sim: Sim) -> None:
    out = sim.run("hca1", "nodeinfo", TO_SWITCH, "200", "2", "1000")
    replies = out["replies"]
    assert len(replies) == 1, out
    assert replies[0]["status"] == 0 and replies[0]["method"] == 0x81, replies
    assert replies[0]["tid_low"] == out["tid_low"]


@pytest.mark.parametrize(("with_shim", "detached"), [(True, True), (False, False)])
def test_a_client_stopped_by_sigterm_detaches(sim: Sim, with_shim: bool, detached: bool) -> None:
    """A tool stopped by SIGTERM (``timeout``'s signal) dies of it as before, and with the shim
    it first detaches from ibsim; umad2sim alone detaches only on exit, so the slot leaks."""
    holder = subprocess.Popen(
        [sys.executable, str(CLIENT), "hold"],
        env=sim.client_env("hca2", shim=with_shim),
        cwd=sim.tmp,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
    assert sim.attached_hosts() == ["hca2"]
    holder.send_signal(signal.SIGTERM)
    assert holder.wait(timeout=10) == -signal.SIGTERM
    assert sim.attached_hosts() == ([] if detached else ["hca2"])


@pytest.mark.parametrize(("with_shim", "survives"), [(True, True), (False, False)])
def test_a_mutex_of_a_missing_queue_is_refused_not_dereferenced(
    shim: Path, with_shim: bool, survives: bool
) -> None:
    """umad2sim's receiver locks the queue mutex of a MAD's class without checking that the
    class has a queue (NULL + 0x30): with the shim that lock (and its unlock) is refused with
    EINVAL and the process lives; without it, the process dies of SIGSEGV, as lab tools did."""
    code = (
        "import ctypes\n"
        "libc = ctypes.CDLL(None)\n"
        "print(libc.pthread_mutex_lock(ctypes.c_void_p(0x30)),"
        " libc.pthread_mutex_unlock(ctypes.c_void_p(0x30)))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    if with_shim:
        env["LD_PRELOAD"] = str(shim)
    proc = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    if survives:
        assert (proc.returncode, proc.stdout.split()) == (0, ["22", "22"]), proc.stderr
    else:
        assert proc.returncode == -signal.SIGSEGV, (proc.returncode, proc.stdout)


@pytest.fixture(scope="module")
def slow_write(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``slow_umad_write.c`` built: a umad write returns 150 ms after umad2sim sent it."""
    out = tmp_path_factory.mktemp("slow-write") / "libslow_umad_write.so"
    subprocess.run(
        ["gcc", "-shared", "-fPIC", "-O2", "-o", str(out), str(SLOW_WRITE), "-ldl"],
        check=True,
        capture_output=True,
        timeout=120,
    )
    return out


def test_reply_read_before_the_send_returns_is_not_sent_again(sim: Sim, slow_write: Path) -> None:
    """A reply read by another thread before write() returned settles its send: the send is
    never resent. The shim once recorded a send only after umad2sim's write returned; a reply
    read in between found nothing to settle, so the answered send was resent at its deadline.
    That resent a subnet manager's PortInfo Set(Armed) after its Set(Active) had been applied,
    and left the SM's own port Armed after SUBNET UP (no LID-routed MAD reached the SM)."""
    out = sim.run("hca1", "nodeinfo", TO_SWITCH, "100", "3", "1000", "reader", between=slow_write)
    replies = out["replies"]
    assert [(r["status"], r["method"], r["tid_low"]) for r in replies] == [
        (0, 0x81, out["tid_low"])
    ], out


def test_client_waits_for_a_free_slot_instead_of_failing(sim: Sim) -> None:
    """ibsim serves 10 clients; the 11th waits (shim) until one leaves, then works."""
    holders = [sim.start(f"hca{1 + i % 3}", "hold") for i in range(10)]
    try:
        refused = subprocess.run(
            [sys.executable, str(CLIENT), "nodeinfo", TO_SWITCH, "200", "2", "500"],
            env=sim.client_env("hca1", shim=False),
            cwd=sim.tmp,
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        assert refused.returncode != 0 and "connect failed" in refused.stderr, refused.stderr
        waiting = subprocess.Popen(
            [sys.executable, str(CLIENT), "nodeinfo", TO_SWITCH, "200", "2", "500"],
            env=sim.client_env("hca1"),
            cwd=sim.tmp,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        time.sleep(1.5)
        assert waiting.poll() is None, waiting.communicate()
        _stop(holders.pop())
        stdout, stderr = waiting.communicate(timeout=30)
        assert waiting.returncode == 0, stderr[-800:]
        reply = json.loads(stdout.strip().splitlines()[-1])["replies"]
        assert reply and reply[0]["status"] == 0, reply
    finally:
        for proc in holders:
            _stop(proc)


def test_refused_connect_gives_up_after_the_configured_wait(sim: Sim) -> None:
    holders = [sim.start(f"hca{1 + i % 3}", "hold") for i in range(10)]
    try:
        start = time.monotonic()
        proc = subprocess.run(
            [sys.executable, str(CLIENT), "nodeinfo", TO_SWITCH, "200", "2", "500"],
            env=sim.client_env("hca1", RAILYARD_SIM_CONNECT_WAIT="2"),
            cwd=sim.tmp,
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        assert proc.returncode != 0 and "connect failed" in proc.stderr, proc.stderr
        assert 2 <= time.monotonic() - start < 10
    finally:
        for holder in holders:
            _stop(holder)


def test_a_node_whose_environment_names_the_shim_gets_it_ahead_of_umad2sim(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A lab node preloads the shim ahead of umad2sim and gets the built library copied in."""
    import io
    import tarfile

    from fabric.lab.node import NodeConfig, _files, _tar, ibsim_environment

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    env = ibsim_environment("198.18.0.1", 17000, "gpu01:mlx5_0")
    assert env["LD_PRELOAD"] == f"{umadshim.NODE_PATH}:{UMAD2SIM}"
    cfg = NodeConfig(
        name="gpu01",
        container="ry-gpu01",
        image="localhost/railyard-node:x",
        networks={"ry-mgmt": "198.18.0.10"},
        authorized_key="ssh-ed25519 AAAA test",
        host_key_private="not a key",
        host_key_public="ssh-ed25519 AAAA host",
        environment=env,
    )
    with tarfile.open(fileobj=io.BytesIO(_tar(_files(cfg)))) as tar:
        member = tar.getmember(umadshim.NODE_PATH.lstrip("/"))
        data = tar.extractfile(member).read()  # type: ignore[union-attr]
        assert member.mode == 0o755 and data.startswith(b"\x7fELF")
        assert tar.getmember("etc/environment").size > 0
    assert data == umadshim.build().read_bytes()
    # a node without the ibsim environment (RoCE) gets no shim
    assert not any(
        path.endswith(umadshim.LIBRARY)
        for path, _, _ in _files(cfg.model_copy(update={"environment": {}}))
    )


@pytest.mark.parametrize(("with_shim", "survives"), [(True, True), (False, False)])
def test_sm_class_ping_server_survives_an_smp(sim: Sim, with_shim: bool, survives: bool) -> None:
    """A ping check's ``ibping -S`` registers as its port's SM-class client (SIM_SET_ISSM) and
    gets the MASTER's SMInfo; umad2sim alone segfaults on it (no SMP agent: NULL queue), the
    shim's SMP guard takes and drops it, and the sender times out as on hardware."""
    server = subprocess.Popen(
        ["ibping", "-S"],
        env=sim.client_env("hca3", shim=with_shim, SIM_SET_ISSM="1"),
        cwd=sim.tmp,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        time.sleep(1.5)
        assert server.poll() is None, server.communicate()
        out = sim.run("hca1", "sminfo", TO_HCA3, "200", "1", "800")
        assert [r["status"] for r in out["replies"]] in ([110],), out
        time.sleep(0.5)
        assert (server.poll() is None) is survives, server.returncode
        if not survives:
            assert server.returncode == -11  # SIGSEGV
    finally:
        if server.poll() is None:
            server.terminate()
        server.communicate(timeout=10)


def test_sm_class_ping_server_survives_smps_that_arrive_while_it_attaches(sim: Sim) -> None:
    """issue 18's lab failure: a MASTER answers the IsSM trap of a starting ``ibping -S`` with
    SMInfo at once, while umad2sim, already attached, still builds its sysfs tree and has no
    agent registered; its receiver thread crashed the server (segfault at 0x40), and the dead
    server's SM registration refused the next. Here SMInfo Gets reach hca3 every 2 ms while a
    server starts there again and again: each one must start and keep serving (the shim's gate
    holds umad2sim's receiver until the SMP guard is registered)."""
    flood = sim.start("hca1", "flood", TO_HCA3, "2")
    try:
        for start in range(5):
            server = subprocess.Popen(
                ["ibping", "-S"],
                env=sim.client_env("hca3", SIM_SET_ISSM="1", RAILYARD_SIM_CONNECT_WAIT="0"),
                cwd=sim.tmp,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
            )
            time.sleep(1.0)
            alive = server.poll() is None
            if alive:
                server.terminate()  # as the check stops it: no detach, the console drops it
            _, err = server.communicate(timeout=10)
            assert alive, f"start {start + 1}: ibping -S exited {server.returncode}: {err[-300:]}"
            sim.drop_clients("hca3")
    finally:
        _stop(flood)


def _free_udp_range(count: int) -> int:
    """A loopback UDP port P with P..P+count-1 all free (ibsim's remote mode binds them)."""
    import socket

    for _ in range(50):
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.bind(("127.0.0.1", 0))
            base = probe.getsockname()[1]
        if base + count >= 65535:
            continue
        taken = []
        try:
            for port in range(base, base + count):
                sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                taken.append(sock)
                sock.bind(("0.0.0.0", port))
            return base
        except OSError:
            continue
        finally:
            for sock in taken:
                sock.close()
    raise AssertionError("no free range of UDP ports on loopback")


@pytest.mark.parametrize(("with_shim", "attaches"), [(True, True), (False, False)])
def test_a_client_started_before_ibsim_listens_waits_for_it(
    tmp_path: Path, shim: Path, with_shim: bool, attaches: bool
) -> None:
    """The lab's failure at 11 forks: ``sim_ctl: ctl failed(read)`` then ``sim_init: connect
    failed: Connection refused``, umad2sim's CONNECT meeting no ibsim on its port (remote mode:
    the ICMP port unreachable comes back as ECONNREFUSED on the next read). With the shim the
    client asks again and attaches once ibsim listens; umad2sim alone exits at once."""
    port = _free_udp_range(11)
    net = tmp_path / "net"
    net.write_text(NET)
    env = dict(os.environ, IBSIM_SERVER_NAME="127.0.0.1", IBSIM_SERVER_PORT=str(port))
    env.pop("IBSIM_SOCKNAME", None)
    env.update(
        LD_PRELOAD=f"{shim}:{UMAD2SIM}" if with_shim else UMAD2SIM,
        SIM_HOST="hca1",
        RAILYARD_SIM_CONNECT_WAIT="20",
    )
    client = subprocess.Popen(
        [sys.executable, str(CLIENT), "nodeinfo", TO_SWITCH, "200", "2", "500"],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    time.sleep(1.0)
    ibsim_env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    ibsim = subprocess.Popen(
        ["ibsim", "-r", "-l", str(port), "-s", str(net)],
        env=ibsim_env,
        cwd=tmp_path,
        stdin=subprocess.PIPE,
        stdout=(tmp_path / "ibsim.log").open("wb"),
        stderr=subprocess.STDOUT,
    )
    try:
        stdout, stderr = client.communicate(timeout=30)
        if attaches:
            assert client.returncode == 0, stderr[-800:]
            reply = json.loads(stdout.strip().splitlines()[-1])["replies"]
            assert reply and reply[0]["status"] == 0, reply
        else:
            assert client.returncode != 0
            assert "ctl failed(read)" in stderr and "Connection refused" in stderr, stderr
    finally:
        ibsim.kill()
        ibsim.wait(timeout=10)
