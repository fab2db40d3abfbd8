"""A Pulumi dynamic resource for one bare-metal node driven through its Redfish BMC.

Create: read the system (serial, MACs), set a one-time boot override only when one is
asked for (``boot_target``: on a node found powered off; on a running node only when
``boot_running``, the node's own ``boot_once``, and then applied by a reboot only with
``restart_if_on``), power the node on, wait until the BMC reports ``On``, then wait until
SSH answers on the node's management address. Delete powers the node off through its BMC
(``GracefulShutdown``, ``ForceOff`` when that does not take) and touches nothing else. The
BMC password is kept as a secret output (encrypted in the state) because delete needs it.
The provider is pickled by Pulumi: it holds no live handles.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from typing import Any

import pulumi
from pulumi.dynamic import CreateResult, DiffResult, ResourceProvider, UpdateResult

from fabric.redfish import RedfishClient, RedfishError, SystemInfo

#: Inputs whose change means a different machine: replace, do not update.
REPLACE_ON = ("node", "url", "system_id")
#: Inputs that may change in place (re-checked by update).
UPDATE_ON = (
    "username",
    "password",
    "verify_tls",
    "address",
    "ssh_port",
    "ssh_timeout",
    "power_timeout",
    "boot_target",
    "settle_target",
    "restart_if_on",
    "boot_running",
    "replaced",
)
#: Outputs the provider reports (declared so that they are attributes of the resource).
OUTPUTS = (
    "system_path",
    "serial",
    "uuid",
    "macs",
    "power_state",
    "boot_override_target",
    "boot_override_enabled",
    "boot_note",
    "ssh_banner",
    "ssh_seconds",
    "powered_off_by",
)


class SshWaitError(RuntimeError):
    """SSH did not answer on the node's management address in time."""


def wait_for_ssh(
    host: str,
    port: int = 22,
    timeout: float = 600.0,
    *,
    interval: float = 2.0,
    clock: Callable[[], float] = time.monotonic,
) -> tuple[str, float]:
    """Wait until ``host:port`` sends an SSH banner; return it and the seconds waited."""
    start = clock()
    last = "no attempt"
    while True:
        try:
            with socket.create_connection((host, port), timeout=min(interval * 2, 10.0)) as conn:
                conn.settimeout(10.0)
                banner = conn.recv(256).split(b"\r\n", 1)[0].decode("ascii", "replace")
            if banner.startswith("SSH-"):
                return banner, clock() - start
            last = f"answered {banner[:40]!r}, not an SSH banner"
        except OSError as exc:
            last = exc.strerror or exc.__class__.__name__
        if clock() - start >= timeout:
            raise SshWaitError(
                f"SSH on {host}:{port} did not answer within {timeout:.0f} s (last: {last}); "
                "check management.addresses, that the node booted its OS, and the console "
                "through the BMC"
            )
        time.sleep(interval)


def _bmc(props: dict[str, Any]) -> RedfishClient:
    """A client of the node's BMC, from the resource's inputs."""
    return RedfishClient(
        props["url"], props["username"], props["password"], verify_tls=props["verify_tls"]
    )


def _wait_ssh(props: dict[str, Any]) -> tuple[str, float]:
    """Wait for SSH on the node's management address (:func:`wait_for_ssh`)."""
    return wait_for_ssh(props["address"], int(props["ssh_port"]), float(props["ssh_timeout"]))


def _seen(
    bmc: RedfishClient, path: str, info: SystemInfo, ssh: tuple[str, float]
) -> dict[str, Any]:
    """The outputs every pass reads again: the system's identity, its power state now, and
    how SSH answered (``(banner, seconds waited)``)."""
    banner, waited = ssh
    return {
        "system_path": path,
        "serial": info.serial,
        "uuid": info.uuid,
        "macs": list(info.macs),
        "power_state": bmc.power_state(path),
        "ssh_banner": banner,
        "ssh_seconds": round(waited, 1),
    }


def provision(props: dict[str, Any]) -> dict[str, Any]:
    """Drive one node from its inputs; return the outputs (never the password)."""
    node = props["node"]
    with _bmc(props) as bmc:
        try:
            path = bmc.system_path(props.get("system_id"))
            info = bmc.system(path)
            target = props.get("boot_target")
            if info.power_state == "On" and not props.get("boot_running"):
                target = None  # never a one-time boot for a running node unless it asks
            boot = bmc.set_boot_override(path, target, "Once") if target else None
            if info.power_state != "On":
                bmc.reset(path, "On")
            elif boot is not None and props.get("restart_if_on"):
                bmc.reset(path, "ForceRestart")
            bmc.wait_power_state(path, "On", timeout=float(props["power_timeout"]))
        except RedfishError as exc:
            raise RedfishError(f"node {node}: {exc}") from None
        notes: list[str] = []
        if boot is not None and info.power_state == "On" and not props.get("restart_if_on"):
            notes.append("node was already On: the boot override applies at its next reboot")
        ssh = _wait_ssh(props)
        readback = boot.readback if boot is not None else info.boot
        settle = props.get("settle_target")
        if boot is None:
            pass
        elif not boot.enabled_applied and settle and settle != target:
            # The BMC kept the override past one boot: point it back at the disk.
            settled = bmc.set_boot_override(path, settle, "Continuous")
            readback = settled.readback
            notes.append(
                f"asked BootSourceOverrideEnabled Once, BMC read back {boot.readback.enabled}; "
                f"after SSH answered, set {settle} {settled.readback.enabled} so the next "
                "reboot does not repeat the one-time boot"
            )
        elif not boot.enabled_applied:
            notes.append(
                f"asked BootSourceOverrideEnabled Once, BMC read back {boot.readback.enabled}"
            )
        return {
            **props,
            **_seen(bmc, path, info, ssh),
            "boot_override_target": readback.target,
            "boot_override_enabled": readback.enabled,
            "boot_note": "; ".join(notes),
            "powered_off_by": None,
        }


def refresh(props: dict[str, Any], olds: dict[str, Any]) -> dict[str, Any]:
    """Update in place: re-read the system (a replaced machine's serial and MACs), check power
    and SSH. A newly asked boot device is set, never applied by a reboot of a running node."""
    with _bmc(props) as bmc:
        path = olds.get("system_path") or bmc.system_path(props.get("system_id"))
        info = bmc.system(path)
        target = props.get("boot_target") if props.get("boot_running") else None
        if target and target != olds.get("boot_target"):
            bmc.set_boot_override(path, target, "Once")
        if info.power_state != "On":
            bmc.reset(path, "On")
            bmc.wait_power_state(path, "On", timeout=float(props["power_timeout"]))
        ssh = _wait_ssh(props)
        return {
            **{k: v for k, v in olds.items() if k in OUTPUTS},
            **props,
            **_seen(bmc, path, info, ssh),
        }


class RedfishNodeProvider(ResourceProvider):
    """The dynamic provider behind :class:`RedfishNode`."""

    def create(self, props: dict[str, Any]) -> CreateResult:
        outs = provision(props)
        return CreateResult(id_=f"{props['node']}@{outs['system_path']}", outs=outs)

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        replaces = [k for k in REPLACE_ON if olds.get(k) != news.get(k)]
        changed = [k for k in UPDATE_ON if k != "password" and olds.get(k) != news.get(k)]
        return DiffResult(
            changes=bool(replaces or changed), replaces=replaces, delete_before_replace=True
        )

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        return UpdateResult(outs=refresh(news, olds))

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        """Power the node off through its BMC; nothing else is touched. A record made before
        the password was kept (no ``password``) is only forgotten."""
        if not props.get("password"):
            return
        with _bmc(props) as bmc:
            try:
                path = props.get("system_path") or bmc.system_path(props.get("system_id"))
                bmc.power_off(path, timeout=float(props.get("power_timeout") or 120.0))
            except RedfishError as exc:
                raise RedfishError(f"node {props.get('node')}: power off: {exc}") from None


class RedfishNode(pulumi.dynamic.Resource):
    """One bare-metal node: read, one-time boot when asked, power on, SSH up; off on delete."""

    system_path: pulumi.Output[str]
    serial: pulumi.Output[str | None]
    uuid: pulumi.Output[str | None]
    macs: pulumi.Output[list[str]]
    power_state: pulumi.Output[str]
    boot_override_target: pulumi.Output[str]
    boot_override_enabled: pulumi.Output[str]
    boot_note: pulumi.Output[str]
    ssh_banner: pulumi.Output[str]
    ssh_seconds: pulumi.Output[float]

    def __init__(
        self,
        name: str,
        *,
        node: str,
        url: str,
        system_id: str | None,
        username: str,
        password: pulumi.Input[str],
        verify_tls: bool,
        address: str,
        boot_target: str | None,
        settle_target: str | None = "Hdd",
        ssh_port: int = 22,
        ssh_timeout: float = 900.0,
        power_timeout: float = 120.0,
        restart_if_on: bool = False,
        boot_running: bool = False,
        replaced: str | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        props: dict[str, Any] = {
            "node": node,
            "url": url,
            "system_id": system_id,
            "username": username,
            "password": pulumi.Output.secret(password),
            "verify_tls": verify_tls,
            "address": address,
            "boot_target": boot_target,
            "settle_target": settle_target,
            "ssh_port": ssh_port,
            "ssh_timeout": ssh_timeout,
            "power_timeout": power_timeout,
            "restart_if_on": restart_if_on,
            "boot_running": boot_running,
            "replaced": replaced,
            **{k: None for k in OUTPUTS},
        }
        secret = pulumi.ResourceOptions(additional_secret_outputs=["password"])
        super().__init__(
            RedfishNodeProvider(), name, props, pulumi.ResourceOptions.merge(opts, secret)
        )
