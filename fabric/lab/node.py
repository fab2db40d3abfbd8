"""Lab nodes: one podman container per node, systemd as PID 1, sshd with a host key made
outside the container, and the ibsim client environment set system-wide."""

from __future__ import annotations

import io
import json
import tarfile
import time

from pydantic import BaseModel

from fabric.lab import umadshim
from fabric.lab.podman import PodmanError, exists, podman

UMAD2SIM = "/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so"
#: Preloaded ahead of umad2sim: MAD timeouts and a wait for an ibsim client slot.
UMAD_SHIM = umadshim.NODE_PATH
IBSIM_DROPIN = "etc/systemd/system.conf.d/railyard-ibsim.conf"
SSHD_DROPIN = "etc/ssh/sshd_config.d/railyard.conf"
#: Units whose ConditionPathExists=/sys/class/infiniband_mad/... PID 1 cannot satisfy in the lab.
SIM_CONDITION_UNITS = ("opensm.service", "opensm@.service")
#: Where cloud-init's NoCloud datasource reads a seed from the node's own disk.
NOCLOUD_SEED = "var/lib/cloud/seed/nocloud"


class NodeError(RuntimeError):
    """A lab node could not be created, started or stopped."""


class NodeConfig(BaseModel):
    """Everything that defines one lab node's container."""

    name: str
    container: str
    image: str
    networks: dict[str, str]  # podman network -> address
    authorized_key: str
    host_key_private: str
    host_key_public: str
    environment: dict[str, str] = {}
    labels: dict[str, str] = {}
    #: Extra capabilities (e.g. NET_ADMIN for a lab switch, or nodes whose fabric netdev the
    #: roles configure); none by default.
    capabilities: list[str] = []
    #: The host name the node boots with (podman's ``--hostname``), when not ``name``: a cloud
    #: node boots as its provider names it (EC2's ``ip-a-b-c-d``) until cloud-init renames it.
    boot_hostname: str | None = None
    #: cloud-init NoCloud seed files (``user-data``, ``meta-data``), copied to
    #: ``/var/lib/cloud/seed/nocloud``: cloud-init runs at boot only on a node that has one.
    seed: dict[str, str] = {}
    #: Namespaced sysctls set at creation (``net.ipv4.ip_forward`` on a NAT node).
    sysctls: dict[str, str] = {}


def ibsim_environment(server: str, port: int, sim_host: str) -> dict[str, str]:
    """Return the ibsim client environment that makes libumad tools act as ``sim_host``."""
    return {
        # railyard's umad shim first (MAD timeouts, a wait for a client slot, the SM-class
        # guard), then umad2sim; the node gets the built shim copied in (see _files).
        "LD_PRELOAD": f"{UMAD_SHIM}:{UMAD2SIM}",
        "IBSIM_SERVER_NAME": server,
        "IBSIM_SERVER_PORT": str(port),
        "SIM_HOST": sim_host,
    }


def _files(cfg: NodeConfig) -> list[tuple[str, str | bytes, int]]:
    """Return (path, content, mode) of every file copied into the node before it starts."""
    files = [
        ("root/.ssh/authorized_keys", cfg.authorized_key.strip() + "\n", 0o600),
        ("etc/ssh/ssh_host_ed25519_key", cfg.host_key_private, 0o600),
        ("etc/ssh/ssh_host_ed25519_key.pub", cfg.host_key_public.strip() + "\n", 0o644),
        (SSHD_DROPIN, "HostKey /etc/ssh/ssh_host_ed25519_key\nPasswordAuthentication no\n", 0o644),
    ]
    if cfg.environment:
        env_lines = "".join(f"{k}={v}\n" for k, v in cfg.environment.items())
        default = " ".join(f"{k}={v}" for k, v in cfg.environment.items())
        files += [
            ("etc/environment", env_lines, 0o644),
            (
                IBSIM_DROPIN,
                f"# ibsim client environment (railyard lab)\n[Manager]\nDefaultEnvironment={default}\n",
                0o644,
            ),
        ]
        # PID 1 is not preloaded, so it cannot see the simulated /sys/class/infiniband_mad:
        # drop the unit condition; the units' own commands run preloaded and find the HCA.
        for unit in SIM_CONDITION_UNITS:
            files.append(
                (
                    f"etc/systemd/system/{unit}.d/railyard-ibsim.conf",
                    "[Unit]\nConditionPathExists=\n",
                    0o644,
                )
            )
    files += [(f"{NOCLOUD_SEED}/{name}", text, 0o600) for name, text in sorted(cfg.seed.items())]
    if UMAD_SHIM in cfg.environment.get("LD_PRELOAD", "").split(":"):
        files.append((UMAD_SHIM.lstrip("/"), umadshim.build().read_bytes(), 0o755))
    return files


def _tar(files: list[tuple[str, str | bytes, int]]) -> bytes:
    buf = io.BytesIO()
    dirs = {"root/.ssh": 0o700, "etc/systemd/system.conf.d": 0o755, "etc/ssh/sshd_config.d": 0o755}
    if any(path.startswith(NOCLOUD_SEED) for path, _, _ in files):
        dirs |= {"var/lib/cloud": 0o755, "var/lib/cloud/seed": 0o755, NOCLOUD_SEED: 0o700}
    dirs.update({f"etc/systemd/system/{u}.d": 0o755 for u in SIM_CONDITION_UNITS})
    dirs["usr/local/lib/railyard"] = 0o755
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for path, mode in dirs.items():
            info = tarfile.TarInfo(path)
            info.type, info.mode = tarfile.DIRTYPE, mode
            tar.addfile(info)
        for path, content, mode in files:
            data = content.encode() if isinstance(content, str) else content
            info = tarfile.TarInfo(path)
            info.size, info.mode = len(data), mode
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def create_node(cfg: NodeConfig, start: bool = True) -> None:
    """Create the node's container, copy its keys and environment in, then start it (unless
    ``start`` is false: a datacenter node waits, powered off, for its BMC)."""
    if exists("container", cfg.container):
        raise NodeError(
            f"container {cfg.container} already exists: remove it or run the stack's destroy"
        )
    hostname = cfg.boot_hostname or cfg.name
    args = ["create", "--name", cfg.container, "--hostname", hostname, "--systemd=always"]
    # Interfaces are named in network-name order (eth0, eth1 ...): podman would number a
    # container's networks in a random order, and a RoCE spec names its fabric netdev.
    for index, (net, address) in enumerate(sorted(cfg.networks.items())):
        args += ["--network", f"{net}:ip={address},interface_name=eth{index}"]
    for key, value in cfg.labels.items():
        args += ["--label", f"{key}={value}"]
    for capability in cfg.capabilities:
        args += ["--cap-add", capability]
    for key, value in sorted(cfg.sysctls.items()):
        args += ["--sysctl", f"{key}={value}"]
    try:  # everything copied in is ready before the container exists
        payload = _tar(_files(cfg))
    except umadshim.ShimError as exc:
        raise NodeError(f"node {cfg.name}: {exc}") from None
    try:
        podman([*args, cfg.image, "/sbin/init"])
        podman(["cp", "-", f"{cfg.container}:/"], input=payload)
        if start:
            podman(["start", cfg.container])
    except PodmanError as exc:
        podman(["rm", "-f", "-t", "0", cfg.container], check=False)
        raise NodeError(f"node {cfg.name}: {exc}") from exc


def state(container: str) -> dict[str, object] | None:
    """Return ``{"running": bool, "pid": int}`` for ``container``, or None if it is gone."""
    proc = podman(["container", "inspect", container], check=False)
    if proc.returncode != 0:
        return None
    data = json.loads(proc.stdout)[0]["State"]
    return {"running": bool(data.get("Running")), "pid": int(data.get("Pid") or 0)}


def power(container: str, on: bool) -> None:
    """Start (``on``) or stop the container, as pressing the node's power button would."""
    current = state(container)
    if current is None:
        raise NodeError(f"container {container} does not exist: run pulumi up to recreate it")
    if current["running"] == on:
        return
    podman(["start", container] if on else ["stop", "-t", "10", container])


def remove_node(container: str) -> None:
    """Remove the container (stopping it first); a no-op when it is gone."""
    if exists("container", container):
        podman(["rm", "-f", "-t", "5", container])
    deadline = time.monotonic() + 30
    while exists("container", container) and time.monotonic() < deadline:
        time.sleep(0.5)
