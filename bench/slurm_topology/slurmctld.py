"""A private munged and slurmctld (Debian 12's Slurm 22.05) on loopback, for the topology
benchmark and the topology integration tests: temporary key, socket, ports, state and log files;
``topology.conf`` and ``slurm.conf`` written from a host list; ``scontrol`` and the log read back.

slurmctld times its topology build (``slurm_topo_build_config`` under ``END_TIMER3(..., 20000)``
in Slurm 22.05's src/common/slurm_topology.c) and logs ``Warning: Note very large processing
time from slurm_topo_build_config: usec=N`` at ``verbose`` when it took more than 20 ms; under
``debug`` it also logs ``Reading the topology.conf file`` as the build starts.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

BUILD_USEC = re.compile(r"slurm_topo_build_config: usec=(\d+)")
#: What slurmctld logs when the build took at most this long (no usec line).
QUIET_BELOW_S = 0.020


def free_port() -> int:
    """A TCP port on loopback nobody listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=5)


def _wait_for(path: Path, what: str, proc: subprocess.Popen[bytes], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists():
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited early (rc {proc.returncode})")
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} did not create {path} within {seconds} s")
        time.sleep(0.05)


def available() -> str | None:
    """None when munged, slurmctld and scontrol are installed, else what is missing."""
    missing = [t for t in ("munged", "slurmctld", "scontrol") if not shutil.which(t)]
    return (
        f"{', '.join(missing)} not installed (apt-get install munge slurmctld)" if missing else None
    )


@contextmanager
def munged() -> Iterator[Path]:
    """A private munged; yields its socket. munged wants every directory above its socket to be
    searchable by all, so the directory is made directly under /tmp."""
    base = Path(tempfile.mkdtemp(prefix="railyard-munge-"))
    base.chmod(0o755)
    key = base / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o400)
    sock = base / "munge.sock"
    proc = subprocess.Popen(
        [
            "munged",
            "-F",
            f"--key-file={key}",
            f"--socket={sock}",
            f"--pid-file={base / 'munged.pid'}",
            f"--log-file={base / 'munged.log'}",
            f"--seed-file={base / 'munged.seed'}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait_for(sock, "munged", proc, 20)
        yield sock
    finally:
        _stop(proc)
        shutil.rmtree(base, ignore_errors=True)


@dataclass
class Loaded:
    """A slurmctld run: its log, ``scontrol show topology``, and the topology build time."""

    log: str
    topology: str
    build_s: float | None  #: from the usec line; None: under QUIET_BELOW_S (no line)
    ready_s: float  #: slurmctld start until scontrol answered with the topology


def slurm_conf(workdir: Path, munge_sock: Path, hosts: str, plugin: str = "tree") -> str:
    """slurm.conf for a slurmctld on loopback with nodes ``hosts`` (a Slurm host list)."""
    return "\n".join(
        [
            "ClusterName=railyard",
            f"SlurmctldHost={socket.gethostname()}(127.0.0.1)",
            f"SlurmctldPort={free_port()}",
            f"SlurmdPort={free_port()}",
            "SlurmUser=root",
            "AuthType=auth/munge",
            "CredType=cred/munge",
            f"AuthInfo=socket={munge_sock}",
            f"StateSaveLocation={workdir / 'state'}",
            f"SlurmdSpoolDir={workdir / 'spool'}",
            f"SlurmctldPidFile={workdir / 'slurmctld.pid'}",
            f"SlurmctldLogFile={workdir / 'slurmctld.log'}",
            "SlurmctldDebug=debug",
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "SelectType=select/cons_tres",
            f"TopologyPlugin=topology/{plugin}",
            f"NodeName={hosts} NodeAddr=127.0.0.1 CPUs=1 State=UNKNOWN",
            "PartitionName=all Nodes=ALL Default=YES State=UP",
            "",
        ]
    )


def load(
    topology_conf: str, hosts: str, munge_sock: Path, workdir: Path, timeout: float = 300
) -> Loaded:
    """Start slurmctld on ``topology_conf`` with nodes ``hosts``; return what it logged and
    showed once ``scontrol show topology`` answers. Raises RuntimeError with the log's tail if
    slurmctld exits or does not answer within ``timeout`` seconds."""
    etc = workdir / "etc"
    etc.mkdir(parents=True)
    (etc / "topology.conf").write_text(topology_conf)
    (etc / "slurm.conf").write_text(slurm_conf(workdir, munge_sock, hosts))
    env = dict(os.environ, SLURM_CONF=str(etc / "slurm.conf"))
    log = workdir / "slurmctld.log"
    started = time.monotonic()
    proc = subprocess.Popen(
        ["slurmctld", "-D", "-i"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        while True:
            done = subprocess.run(
                ["scontrol", "show", "topology"],
                env=env,
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
            )
            if done.returncode == 0 and done.stdout.strip():
                ready = time.monotonic() - started
                text = log.read_text()
                match = BUILD_USEC.search(text)
                return Loaded(
                    text, done.stdout, int(match.group(1)) / 1e6 if match else None, ready
                )
            tail = log.read_text()[-3000:] if log.exists() else ""
            if proc.poll() is not None:
                raise RuntimeError(f"slurmctld exited (rc {proc.returncode}): {tail}")
            if time.monotonic() - started > timeout:
                raise RuntimeError(f"scontrol show topology kept failing: {done.stderr} {tail}")
            time.sleep(0.2)
    finally:
        _stop(proc)


_LINE = re.compile(
    r"^SwitchName=(\S+) Level=(\d+) LinkSpeed=\d+(?: Nodes=(\S+))?(?: Switches=(\S+))?$"
)


def parse_show_topology(text: str) -> dict[str, tuple[int, str, str]]:
    """``scontrol show topology`` -> switch -> (level, node host list, child switch list)."""
    out = {}
    for line in text.splitlines():
        match = _LINE.match(line.strip())
        if match is None:
            raise ValueError(f"scontrol show topology: unexpected line {line!r}")
        name, level, nodes, switches = match.groups()
        out[name] = (int(level), nodes or "", switches or "")
    return out
