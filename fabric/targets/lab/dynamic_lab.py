"""Pulumi dynamic providers for the lab's real parts.

Each provider is a thin adapter from Pulumi's create/read/diff/update/delete to a driver in
``fabric.lab``. Providers hold no live handles (they are pickled with dill); every
``read`` looks at the real thing, so ``pulumi refresh`` sees a dead helper or a removed
container as gone and the next ``pulumi up`` recreates it.

Pulumi stores each provider by its class's module path and name: a provider class keeps both
(a stack refers to it); what providers share lives in the private bases below (``_Recorded``,
``_HelperProcess``, ``_Container``), which a stack never names.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pulumi
from pulumi.dynamic import (
    CheckFailure,
    CheckResult,
    CreateResult,
    DiffResult,
    ReadResult,
    Resource,
    ResourceProvider,
    UpdateResult,
)

if TYPE_CHECKING:
    from fabric.lab.node import NodeConfig
    from fabric.lab.process import Helper

#: Inputs that are bookkeeping, never compared.
_IGNORED = {"__provider"}


def _changed(
    olds: dict[str, Any], news: dict[str, Any], keys: list[str] | None = None
) -> list[str]:
    names = keys if keys is not None else sorted((set(olds) | set(news)) - _IGNORED)
    return [k for k in names if olds.get(k) != news.get(k)]


def _prune(path: Path, root: Path) -> None:
    """Remove ``path``'s empty parent directories up to and including ``root``.

    Pulumi deletes sibling files in parallel: a directory another delete already removed, or
    one that is not empty any more, ends the walk instead of failing the delete.
    """
    parent = path.parent
    while parent.is_relative_to(root):
        try:
            if any(parent.iterdir()):
                return
            parent.rmdir()
        except (FileNotFoundError, NotADirectoryError):
            return
        except OSError:  # filled again in between (ENOTEMPTY)
            return
        parent = parent.parent


def _plain(props: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in props.items() if k not in _IGNORED}


class _ReplaceOnChange(ResourceProvider):
    """Any input change replaces the resource (delete first: names are unique).

    Keys starting with ``out_`` and those in ``outputs`` are outputs, never compared.
    """

    outputs: frozenset[str] = frozenset()

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        keys = [
            k
            for k in news
            if k not in _IGNORED and k not in self.outputs and not k.startswith("out_")
        ]
        changes = _changed(olds, news, keys)
        return DiffResult(changes=bool(changes), replaces=changes, delete_before_replace=True)


class _Recorded(ResourceProvider):
    """Nothing outside the state to look at or remove: ``read`` keeps the record as it is,
    ``delete`` forgets it."""

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        return ReadResult(id_, props)

    def delete(self, _id: str, _props: dict[str, Any]) -> None:
        return None


class _HelperProcess(_ReplaceOnChange):
    """A long-running helper process, tracked by pid + start time (``out_helper``, a
    ``fabric.lab.process.Helper``); its id is ``<id_prefix>-<pid>``.

    ``read``: gone when the process is (or was never recorded). ``delete``:
    :meth:`stop_first`, stop the process, :meth:`remove_files`, then remove its ``log`` and,
    with ``prune_log``, the folders that leaves empty up to the log's grandparent.
    """

    id_prefix = "helper"
    prune_log = True

    def start(self, props: dict[str, Any]) -> Helper:
        """Start the process from the inputs."""
        raise NotImplementedError

    def stop_first(self, props: dict[str, Any]) -> None:
        """What must stop before the process does (nothing by default)."""

    def remove_files(self, props: dict[str, Any]) -> None:
        """Files of the process other than its log (none by default)."""

    def create(self, props: dict[str, Any]) -> CreateResult:
        helper = self.start(props)
        return CreateResult(
            f"{self.id_prefix}-{helper.pid}", {**_plain(props), "out_helper": helper.model_dump()}
        )

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        from fabric.lab.process import Helper, alive

        helper = props.get("out_helper")
        return ReadResult(
            id_ if helper and alive(Helper(**helper)) else None, props if helper else {}
        )

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        from fabric.lab.process import Helper, stop

        self.stop_first(props)
        if props.get("out_helper"):
            stop(Helper(**props["out_helper"]))
        self.remove_files(props)
        log = Path(props["log"])
        log.unlink(missing_ok=True)
        if self.prune_log:
            _prune(log, log.parent.parent)


class _Container(ResourceProvider):
    """A systemd container reached over SSH with its own pinned host key (a lab node, the lab
    switch): ``delete`` removes the container."""

    @staticmethod
    def ready(
        cfg: NodeConfig, props: dict[str, Any], then: Callable[[], None] | None = None
    ) -> None:
        """Wait until the container answers SSH as ``ssh_user`` with the login key and its host
        key, then run ``then``; on any failure remove the container and raise."""
        from fabric.lab.node import remove_node
        from fabric.lab.ssh import host_keys_from, wait_ssh

        address = props["address"]
        try:
            wait_ssh(
                address,
                user=props["ssh_user"],
                private_key=props["login_private_key"],
                host_keys=host_keys_from(entries={address: cfg.host_key_public}),
            )
            if then is not None:
                then()
        except Exception:
            remove_node(cfg.container)
            raise

    def delete(self, id_: str, _props: dict[str, Any]) -> None:
        from fabric.lab.node import remove_node

        remove_node(id_)


# ---------------------------------------------------------------- node image
class NodeImageProvider(_Recorded, _ReplaceOnChange):
    """The node image (built when missing; kept on delete: it is a cache, not lab state)."""

    outputs = frozenset({"tag"})

    def create(self, props: dict[str, Any]) -> CreateResult:
        from fabric.lab.image import ensure_image

        tag = ensure_image()
        return CreateResult(tag, {**_plain(props), "tag": tag})

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        from fabric.lab.podman import exists

        return ReadResult(id_ if exists("image", id_) else None, props)


class NodeImage(Resource):
    """``localhost/railyard-node:<hash12>``."""

    tag: pulumi.Output[str]

    def __init__(
        self, name: str, image_hash: str, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__(NodeImageProvider(), name, {"image_hash": image_hash, "tag": None}, opts)


# ---------------------------------------------------------------- networks
class LabNetworkProvider(_ReplaceOnChange):
    """A podman network with an always-up bridge holding the gateway address."""

    outputs = frozenset({"bridge"})

    def create(self, props: dict[str, Any]) -> CreateResult:
        from fabric.lab.network import ensure_network

        info = ensure_network(props["network"], props["subnet"], props["gateway"], props.get("mtu"))
        return CreateResult(info.name, {**_plain(props), "bridge": info.bridge})

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        from fabric.lab.network import bridge_up, inspect

        info = inspect(id_)
        if info is None or not bridge_up(info):
            return ReadResult(None, {})
        return ReadResult(id_, {**props, "bridge": info.bridge})

    def delete(self, id_: str, props: dict[str, Any]) -> None:
        from fabric.lab.network import remove_network

        remove_network(id_, props.get("bridge"))


class LabNetwork(Resource):
    """A lab network (management, BMC or RoCE fabric)."""

    bridge: pulumi.Output[str]

    def __init__(
        self,
        name: str,
        network: str,
        subnet: str,
        gateway: str,
        mtu: int | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        args = {
            "network": network,
            "subnet": subnet,
            "gateway": gateway,
            "mtu": mtu,
            "bridge": None,
        }
        super().__init__(LabNetworkProvider(), name, args, opts)


# ---------------------------------------------------------------- addresses
class AddressPoolProvider(_Recorded):
    """Stable node addresses on one lab network (``fabric.lab.plan.allocate``).

    ``check`` computes ``assignment`` from the previous inputs' assignment, so a node keeps its
    address while it exists, and ``pulumi preview`` already shows the addresses (a dynamic
    provider's preview outputs are its checked inputs). Changes are updates, never replaces.
    """

    def check(self, olds: dict[str, Any], news: dict[str, Any]) -> CheckResult:
        from fabric.lab.plan import LabPlanError, allocate

        previous = olds.get("assignment") if isinstance(olds.get("assignment"), dict) else {}
        try:
            assignment = allocate(
                previous,
                list(news["hosts"]),
                news["subnet"],
                news["gateway"],
                news.get("fixed") or {},
                news["field"],
            )
        except LabPlanError as exc:
            return CheckResult(news, [CheckFailure("hosts", str(exc))])
        return CheckResult({**news, "assignment": assignment}, [])

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        changes = _changed(
            olds, news, ["network", "subnet", "gateway", "hosts", "fixed", "field", "assignment"]
        )
        return DiffResult(changes=bool(changes), replaces=[])

    def create(self, props: dict[str, Any]) -> CreateResult:
        return CreateResult(f"{props['network']}-addresses", _plain(props))

    def update(self, _id: str, _olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        return UpdateResult(_plain(news))


class AddressPool(Resource):
    """host -> address on one lab network (``assignment``); fixed addresses always win.

    The program passes a fresh stack's assignment; the provider's ``check`` replaces it with the
    stable one (Pulumi mocks skip ``check`` and so see the fresh one).
    """

    assignment: pulumi.Output[dict[str, str]]

    def __init__(
        self,
        name: str,
        network: str,
        subnet: str,
        gateway: str,
        hosts: list[str],
        fixed: dict[str, str],
        field: str,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        from fabric.lab.plan import allocate

        args = {
            "network": network,
            "subnet": subnet,
            "gateway": gateway,
            "hosts": hosts,
            "fixed": fixed,
            "field": field,
            "assignment": allocate({}, hosts, subnet, gateway, fixed, field),
        }
        super().__init__(AddressPoolProvider(), name, args, opts)


# ---------------------------------------------------------------- ssh keys
class SshKeyProvider(_Recorded, _ReplaceOnChange):
    """An ed25519 key pair made by ssh-keygen; the private key is a secret output."""

    outputs = frozenset({"public_key", "private_key"})

    def create(self, props: dict[str, Any]) -> CreateResult:
        from fabric.lab.keys import generate

        pair = generate(props["comment"])
        return CreateResult(props["comment"], {**_plain(props), **pair.model_dump()})


class SshKey(Resource):
    """An SSH key pair (the stack's login key or a node's host key)."""

    public_key: pulumi.Output[str]
    private_key: pulumi.Output[str]

    def __init__(self, name: str, comment: str, opts: pulumi.ResourceOptions | None = None) -> None:
        opts = pulumi.ResourceOptions.merge(
            opts, pulumi.ResourceOptions(additional_secret_outputs=["private_key"])
        )
        super().__init__(
            SshKeyProvider(),
            name,
            {"comment": comment, "public_key": None, "private_key": None},
            opts,
        )


# ---------------------------------------------------------------- state files
class LabFileProvider(ResourceProvider):
    """A file under state/<stack>/ with given content and mode; removed on delete."""

    def create(self, props: dict[str, Any]) -> CreateResult:
        path = Path(props["path"])
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, int(props["mode"], 8))
        with os.fdopen(fd, "w") as out:
            out.write(props["content"])
        os.chmod(path, int(props["mode"], 8))
        return CreateResult(str(path), _plain(props))

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        path = Path(id_)
        if not path.is_file() or path.read_text() != props.get("content"):
            return ReadResult(None, {})
        return ReadResult(id_, props)

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        changes = _changed(olds, news, ["path", "content", "mode"])
        return DiffResult(
            changes=bool(changes),
            replaces=[c for c in changes if c == "path"],
            delete_before_replace=True,
        )

    def update(self, _id: str, _olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        return UpdateResult(self.create(news).outs)

    def delete(self, id_: str, props: dict[str, Any]) -> None:
        path = Path(id_)
        path.unlink(missing_ok=True)
        _prune(path, Path(props["root"]))


class LabFile(Resource):
    """A state file (key, known_hosts, inventory, ibsim net file)."""

    def __init__(
        self,
        name: str,
        path: str,
        content: pulumi.Input[str],
        root: str,
        mode: str = "644",
        secret: bool = False,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        if secret:
            opts = pulumi.ResourceOptions.merge(
                opts, pulumi.ResourceOptions(additional_secret_outputs=["content"])
            )
        super().__init__(
            LabFileProvider(),
            name,
            {"path": path, "content": content, "mode": mode, "root": root},
            opts,
        )


# ---------------------------------------------------------------- helper processes
class IbSimProvider(_HelperProcess):
    """ibsim in remote mode; its clients' MAD senders stop before it, its console goes after."""

    id_prefix = "ibsim"

    def start(self, props: dict[str, Any]) -> Helper:
        from fabric.lab.ibsim import start_ibsim

        return start_ibsim(
            Path(props["net_file"]), int(props["port"]), list(props["limits"]), Path(props["log"])
        )

    def stop_first(self, props: dict[str, Any]) -> None:
        from fabric.lab.ibsim import stop_mad_senders

        stop_mad_senders(list(props.get("clients") or []))

    def remove_files(self, props: dict[str, Any]) -> None:
        from fabric.lab.ibsim import remove_console

        remove_console(Path(props["net_file"]))


class IbSim(Resource):
    """The simulated InfiniBand fabric. ``clients``: the containers of the nodes it serves;
    their subnet managers are stopped before it is (``fabric.lab.ibsim.stop_mad_senders``)."""

    out_helper: pulumi.Output[dict[str, Any]]

    def __init__(
        self,
        name: str,
        net_file: str,
        net_hash: pulumi.Input[str],
        port: int,
        limits: list[str],
        log: str,
        clients: list[str],
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        args = {
            "net_file": net_file,
            "net_hash": net_hash,
            "port": port,
            "limits": limits,
            "log": log,
            "clients": clients,
            "out_helper": None,
        }
        super().__init__(IbSimProvider(), name, args, opts)


class IbSimReaperProvider(_HelperProcess):
    """The lab's ibsim slot reaper (``fabric.lab.reaper``), a process beside ibsim: replaced
    with it (its ``ibsim`` input is ibsim's process), stopped before it."""

    id_prefix = "ibsim-reaper"
    prune_log = False

    def start(self, props: dict[str, Any]) -> Helper:
        from fabric.lab.process import Helper
        from fabric.lab.reaper import start_reaper

        return start_reaper(
            Path(props["console"]),
            Path(props["ibsim_log"]),
            Helper(**props["ibsim"]),
            dict(props["nodes"]),
            Path(props["log"]),
        )


class IbSimReaper(Resource):
    """Drops ibsim clients whose process is gone whenever ibsim refuses one for want of a slot.
    ``nodes``: host -> container of every node ibsim serves."""

    def __init__(
        self,
        name: str,
        console: str,
        ibsim_log: str,
        log: str,
        ibsim: pulumi.Input[dict[str, Any]],
        nodes: dict[str, str],
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        args = {
            "console": console,
            "ibsim_log": ibsim_log,
            "log": log,
            "ibsim": ibsim,
            "nodes": nodes,
            "out_helper": None,
        }
        super().__init__(IbSimReaperProvider(), name, args, opts)


class LabSwitchSmProvider(_HelperProcess):
    """A switch's SM in the lab (``fabric.lab.switch_sm``), a process beside ibsim: replaced
    with it (its ``ibsim`` input is ibsim's process), stopped before it; its ``workdir`` goes
    with it."""

    id_prefix = "switch-sm"

    def start(self, props: dict[str, Any]) -> Helper:
        from fabric.lab.switch_sm import start_switch_sm

        return start_switch_sm(
            props["switch"],
            int(props["priority"]),
            props["routing_engine"],
            int(props["sweep_interval"]),
            props["server"],
            int(props["port"]),
            Path(props["workdir"]),
            Path(props["log"]),
        )

    def remove_files(self, props: dict[str, Any]) -> None:
        shutil.rmtree(props["workdir"], ignore_errors=True)


class LabSwitchSm(Resource):
    """The SM of ibsim switch ``switch`` (``mode: switch, configure: true``), run the way the
    switch would once enabled: OpenSM attached to the switch's port 0."""

    def __init__(
        self,
        name: str,
        props: dict[str, Any],
        ibsim: pulumi.Input[dict[str, Any]],
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__(
            LabSwitchSmProvider(), name, {**props, "ibsim": ibsim, "out_helper": None}, opts
        )


class RedfishEmulatorProvider(_ReplaceOnChange):
    """sushy-tools fake-driver emulator + the notifier that makes containers follow power.

    ``password`` (a secret input) is the BMC password from the spec's ``bmc.password``; when it
    is None the provider generates one. Either way it comes back as the secret output
    ``out_password`` and lives as long as this resource (a replace generates a new one).
    """

    def create(self, props: dict[str, Any]) -> CreateResult:
        from fabric.lab.bmc import BmcConfig, endpoints, generate_password, start_bmc

        cfg = BmcConfig(**props["config"])
        password = props.get("password") or generate_password()
        procs = start_bmc(cfg, password)
        outs = {
            **_plain(props),
            "out_helpers": procs.model_dump(),
            "out_endpoints": endpoints(cfg),
            "out_password": password,
        }
        return CreateResult(f"bmc-{procs.emulator.pid}", outs)

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        from fabric.lab.bmc import BmcProcesses
        from fabric.lab.process import alive

        helpers = props.get("out_helpers")
        if not helpers:
            return ReadResult(None, {})
        procs = BmcProcesses(**helpers)
        if alive(procs.emulator) and alive(procs.notifier):
            return ReadResult(id_, props)
        from fabric.lab.process import stop  # one half alive: stop it so the recreate starts clean

        stop(procs.emulator)
        stop(procs.notifier)
        return ReadResult(None, {})

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        from fabric.lab.bmc import BmcProcesses, stop_bmc

        if props.get("out_helpers"):
            stop_bmc(BmcProcesses(**props["out_helpers"]), props["config"]["state_dir"])
        state = Path(props["config"]["state_dir"])
        _prune(state / "x", state.parent)


class RedfishEmulator(Resource):
    """The lab's BMCs: one Redfish system per node, behind HTTP basic auth."""

    out_endpoints: pulumi.Output[dict[str, dict[str, str]]]
    out_password: pulumi.Output[str]

    def __init__(
        self,
        name: str,
        config: dict[str, Any],
        password: pulumi.Input[str] | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        secret = pulumi.ResourceOptions(additional_secret_outputs=["password", "out_password"])
        args = {
            "config": config,
            "password": password,
            "out_helpers": None,
            "out_endpoints": None,
            "out_password": None,
        }
        super().__init__(
            RedfishEmulatorProvider(), name, args, pulumi.ResourceOptions.merge(opts, secret)
        )


# ---------------------------------------------------------------- nodes
class LabNodeProvider(_Container, _ReplaceOnChange):
    """One node: a systemd container reachable over SSH with its own host key."""

    def create(self, props: dict[str, Any]) -> CreateResult:
        from fabric.lab.node import NodeConfig

        cfg = NodeConfig(**props["config"])
        if props.get("powered_off"):  # a datacenter node: created off, its BMC powers it on
            _create_when_address_free(cfg, start=False)
        else:
            _create_when_address_free(cfg)
            self.ready(cfg, props)
        return CreateResult(cfg.container, {**_plain(props), **_container_id(cfg.container)})

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        from fabric.lab.node import state

        return ReadResult(id_ if state(id_) is not None else None, props)


def _container_id(container: str) -> dict[str, str]:
    """``{"out_container_id": <podman id>}``: new on every creation of the container (the lab
    switch re-wires a node's port when it changes)."""
    from fabric.lab.podman import podman

    proc = podman(["container", "inspect", "--format", "{{.Id}}", container], check=False)
    return {"out_container_id": proc.stdout.strip()} if proc.returncode == 0 else {}


#: How long a node's create waits for an address another node is giving up in the same update.
ADDRESS_WAIT_S = 90.0


def _create_when_address_free(cfg: Any, start: bool = True) -> None:
    """Create the node, retrying while podman says its address is still allocated.

    Stable allocation moves an address only when ``management.addresses`` pins it to another
    host; that host's replacement runs alongside the old holder's (delete-before-)replace.
    """
    import time

    from fabric.lab.node import NodeError, create_node

    deadline = time.monotonic() + ADDRESS_WAIT_S
    while True:
        try:
            create_node(cfg, start)
            return
        except NodeError as exc:
            if "already allocated" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(2)


class LabNode(Resource):
    """A lab node (container ``<prefix>-<node>``); ``out_container_id``: its podman id."""

    out_container_id: pulumi.Output[str]

    def __init__(
        self,
        name: str,
        config: pulumi.Input[dict[str, Any]],
        address: pulumi.Input[str],
        ssh_user: str,
        login_private_key: pulumi.Input[str],
        opts: pulumi.ResourceOptions | None = None,
        powered_off: bool = False,
    ) -> None:
        args: dict[str, Any] = {
            "config": config,
            "address": address,
            "ssh_user": ssh_user,
            "login_private_key": login_private_key,
            "out_container_id": None,
        }
        if powered_off:  # only then: the inputs of every other lab node stay as they were
            args["powered_off"] = True
        super().__init__(LabNodeProvider(), name, args, opts)
