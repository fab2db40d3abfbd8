"""Lab networks: a podman bridge network whose host side (the gateway address) always exists.

Netavark creates a network's bridge when the first container joins and deletes it when the
last one leaves, so the host-side services (ibsim, the Redfish emulator) would lose their
address whenever every node is powered off. Here the bridge is created up front with the
gateway address and a keep-alive veth port, so netavark reuses it and never removes it.
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import subprocess

from pydantic import BaseModel

from fabric.lab.podman import PodmanError, exists, podman


class NetworkError(RuntimeError):
    """A lab network could not be created or removed."""


class NetworkInfo(BaseModel):
    """A lab network as created: podman name, bridge, subnet, gateway, MTU."""

    name: str
    bridge: str
    subnet: str
    gateway: str
    mtu: int | None = None


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(["ip", *args], capture_output=True, text=True, check=False, timeout=30)
    if check and proc.returncode != 0:
        raise NetworkError(f"ip {' '.join(args)} failed: {proc.stderr.strip()}")
    return proc


def keepalive_names(name: str) -> tuple[str, str]:
    """Return the veth pair (bridge port, peer) that keeps ``name``'s bridge alive (<=15 chars)."""
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    return f"ryk{digest}a", f"ryk{digest}b"


def _link_exists(dev: str) -> bool:
    return _ip("link", "show", "dev", dev, check=False).returncode == 0


def _overlapping(subnet: ipaddress.IPv4Network, own: str) -> list[str]:
    # one listing with every network's subnets: a name listed and then inspected could be
    # gone by then (another lab's teardown, beside this one in make test)
    networks = json.loads(podman(["network", "ls", "--format", "json"]).stdout or "[]")
    clashes = []
    for data in networks:
        other = data.get("name", "")
        if other == own:
            continue
        for sub in data.get("subnets") or []:
            net = ipaddress.ip_network(sub["subnet"])
            if net.version == 4 and net.overlaps(subnet):
                clashes.append(f"{other} ({net})")
    return clashes


def inspect(name: str) -> NetworkInfo | None:
    """Return the network ``name`` or None when podman does not know it."""
    if not exists("network", name):
        return None
    data = json.loads(podman(["network", "inspect", name]).stdout)[0]
    sub = data["subnets"][0]
    mtu = data.get("options", {}).get("mtu")
    return NetworkInfo(
        name=name,
        bridge=data["network_interface"],
        subnet=sub["subnet"],
        gateway=sub["gateway"],
        mtu=int(mtu) if mtu else None,
    )


def bridge_up(info: NetworkInfo) -> bool:
    """Return whether the bridge exists, is up and holds the gateway address."""
    proc = _ip("-j", "addr", "show", "dev", info.bridge, check=False)
    if proc.returncode != 0:
        return False
    addrs = json.loads(proc.stdout or "[]")
    return any(a.get("local") == info.gateway for link in addrs for a in link.get("addr_info", []))


def _ensure_bridge(info: NetworkInfo) -> None:
    prefix = ipaddress.ip_network(info.subnet).prefixlen
    port, peer = keepalive_names(info.name)
    if not _link_exists(info.bridge):
        _ip("link", "add", info.bridge, "type", "bridge")
    if info.mtu:
        _ip("link", "set", info.bridge, "mtu", str(info.mtu))
    if not bridge_up(info):
        _ip("addr", "replace", f"{info.gateway}/{prefix}", "dev", info.bridge)
    if not _link_exists(port):
        _ip(
            "link",
            "add",
            port,
            *(["mtu", str(info.mtu)] if info.mtu else []),
            "type",
            "veth",
            "peer",
            "name",
            peer,
        )
    _ip("link", "set", port, "master", info.bridge, "up")
    _ip("link", "set", peer, "up")
    _ip("link", "set", info.bridge, "up")


def ensure_network(name: str, subnet: str, gateway: str, mtu: int | None = None) -> NetworkInfo:
    """Create (or repair) the internal podman network ``name`` and its always-up bridge."""
    mtu = int(mtu) if mtu else None  # a dynamic provider's inputs hold numbers as floats (9000.0)
    net = ipaddress.ip_network(subnet)
    if ipaddress.ip_address(gateway) not in net:
        raise NetworkError(
            f"gateway {gateway} is not inside {subnet}: fix the spec's network gateway"
        )
    info = inspect(name)
    if info is None:
        clashes = _overlapping(net, name)
        if clashes:
            raise NetworkError(
                f"subnet {subnet} for network {name} overlaps podman network(s) {', '.join(clashes)}: "
                "choose another subnet inside 198.18.0.0/15 in the spec, or remove that network"
            )
        args = [
            "network",
            "create",
            "--internal",
            "--disable-dns",
            "--subnet",
            subnet,
            "--gateway",
            gateway,
        ]
        if mtu:
            args += ["-o", f"mtu={mtu}"]
        try:
            podman([*args, name])
        except PodmanError as exc:
            raise NetworkError(str(exc)) from exc
        info = inspect(name)
        assert info is not None
    elif info.subnet != str(net) or info.gateway != gateway:
        raise NetworkError(
            f"podman network {name} exists with subnet {info.subnet} gateway {info.gateway}, "
            f"not {subnet} {gateway}: run the stack's destroy (make down) first"
        )
    _ensure_bridge(info)
    return info


def remove_network(name: str, bridge: str | None = None) -> None:
    """Remove the podman network ``name``, its keep-alive veth and its bridge (idempotent)."""
    info = inspect(name)
    if info is not None:
        bridge = info.bridge
        users = podman(
            ["ps", "-a", "--filter", f"network={name}", "--format", "{{.Names}}"]
        ).stdout.split()
        if users:
            raise NetworkError(f"network {name} still has containers {users}: remove them first")
        podman(["network", "rm", name])
    port, _ = keepalive_names(name)
    if _link_exists(port):
        _ip("link", "del", port)
    if bridge and _link_exists(bridge):
        _ip("link", "del", bridge)
