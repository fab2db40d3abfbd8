"""Where railyard keeps things on this machine: the repository root and each stack's state.

Every stack's runtime state lives in ``<state root>/<stack>/``; the state root is
``$RAILYARD_STATE_DIR`` when set (the integration tests and the lab benchmarks use it), else
``<repo>/state``. :class:`StateLayout` names every file and folder in it, so no other module
spells a state path itself. Run artifacts (ansible-runner's private data dirs) are kept outside
the state root, in ``<repo>/artifacts/<stack>/``. The stack file is named by :func:`stack_file`
and the Pulumi environment every run uses by :func:`pulumi_env` (the Makefile exports the same
values; ``tests/unit/test_state.py`` keeps them equal). Nothing here writes to the disk.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

#: The repository checkout: playbooks/, roles/, Pulumi.<stack>.yaml, ansible.cfg.
REPO_ROOT = Path(__file__).resolve().parents[1]
#: The environment variable that moves the state root.
STATE_DIR_ENV = "RAILYARD_STATE_DIR"
#: Where ansible-runner's kept artifacts go, one folder per stack.
ARTIFACTS_ROOT = REPO_ROOT / "artifacts"
#: The stack every command names when none is given (``--stack``), the Makefile's ``STACK``.
DEFAULT_STACK = "lab"
#: The lab stack's secrets passphrase: fixed and public (docs/targets.md, "State and secrets"); any other stack's
#: is ``StateLayout.passphrase``.
LAB_PASSPHRASE = "railyard-lab"
#: The variables that give Pulumi a passphrase; a caller that set one keeps it.
PASSPHRASE_ENV = ("PULUMI_CONFIG_PASSPHRASE", "PULUMI_CONFIG_PASSPHRASE_FILE")
#: Every run stays offline: no update check, no plugin download.
PULUMI_OFFLINE = {
    "PULUMI_SKIP_UPDATE_CHECK": "true",
    "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
}


def state_root() -> Path:
    """The folder holding every stack's state: ``$RAILYARD_STATE_DIR`` or ``<repo>/state`` (absolute)."""
    return Path(os.environ.get(STATE_DIR_ENV) or REPO_ROOT / "state").resolve()


@dataclass(frozen=True)
class StateLayout:
    """The files of one stack's state, under ``root`` (default :func:`state_root`, read when made)."""

    stack: str
    root: Path = field(default=None)  # type: ignore[assignment]  # filled in by __post_init__
    artifacts_root: Path = ARTIFACTS_ROOT

    def __post_init__(self) -> None:
        if not self.stack or "/" in self.stack or self.stack in (".", ".."):
            raise ValueError(f"{self.stack!r} is not a stack name")
        object.__setattr__(self, "root", state_root() if self.root is None else Path(self.root))
        object.__setattr__(self, "artifacts_root", Path(self.artifacts_root))

    @classmethod
    def at(cls, stack_dir: Path | str) -> StateLayout:
        """The layout whose stack folder is ``stack_dir`` (e.g. the folder an inventory is in)."""
        path = Path(stack_dir)
        return cls(path.name, path.parent)

    # -- the stack folder and what every target has in it ---------------------------------
    @property
    def dir(self) -> Path:
        """``<root>/<stack>/``: everything below is in here."""
        return self.root / self.stack

    @property
    def inventory(self) -> Path:
        """The Ansible inventory the stack hands off with (written by the hand-off, and the lab)."""
        return self.dir / "inventory.yml"

    @property
    def group_vars(self) -> Path:
        """``group_vars/`` beside the inventory (Ansible reads it with the inventory)."""
        return self.dir / "group_vars"

    @property
    def group_vars_all(self) -> Path:
        """The role variables derived from the spec (``group_vars/all.yml``)."""
        return self.group_vars / "all.yml"

    @property
    def discovered_fabric(self) -> Path:
        """The ``ibnetdiscover`` output the hand-off fetches (``{{ inventory_dir }}/ibnetdiscover.txt``)."""
        return self.dir / "ibnetdiscover.txt"

    @property
    def secrets(self) -> Path:
        """Private files of the hand-off (0700)."""
        return self.dir / "secrets"

    @property
    def munge_key(self) -> Path:
        """Where an older hand-off kept the munge key (only ever removed now)."""
        return self.secrets / "munge.key"

    @property
    def handoff_files(self) -> tuple[Path, ...]:
        """What the hand-off writes next to the inventory, removed with it."""
        return (self.group_vars_all, self.discovered_fabric, self.munge_key)

    @property
    def switch_renders(self) -> Path:
        """Where ``switch_qos`` renders each switch's configuration, one folder per switch
        (its default ``switch_qos_render_dir``: ``{{ inventory_dir }}/rendered/switch_qos``)."""
        return self.dir / "rendered" / "switch_qos"

    @property
    def fact_cache(self) -> Path:
        """Ansible's jsonfile fact cache for this stack's hosts (one file per host; the hand-off
        empties it when the inventory changes and removes it with its other files)."""
        return self.dir / "facts"

    @property
    def reports(self) -> Path:
        """The check suite's reports (JUnit, Markdown, fabric picture, pytest log)."""
        return self.dir / "reports"

    @property
    def known_hosts(self) -> Path:
        """The nodes' host keys (the lab writes it; other targets' default ``knownHostsFile``)."""
        return self.dir / "known_hosts"

    @property
    def ssh_key(self) -> Path:
        """The lab's generated login key (``ssh/id_ed25519``)."""
        return self.dir / "ssh" / "id_ed25519"

    @property
    def provided_ssh_key(self) -> Path:
        """A bare-metal or cloud stack's private key when config ``sshPrivateKeyFile`` is unset."""
        return self.dir / "id_ed25519"

    @property
    def passphrase(self) -> Path:
        """The stack's Pulumi secrets passphrase file (``<root>/<stack>.passphrase``, as ``make`` makes it)."""
        return self.root / f"{self.stack}.passphrase"

    @property
    def pulumi_backend(self) -> Path:
        """The Pulumi file backend shared by every stack (``<root>/pulumi``)."""
        return self.root / "pulumi"

    @property
    def artifacts(self) -> Path:
        """ansible-runner's kept runs of this stack (``<repo>/artifacts/<stack>/``)."""
        return self.artifacts_root / self.stack

    # -- the lab's own files ----------------------------------------------------------------
    @property
    def lab_json(self) -> Path:
        """The lab's description for ``python -m fabric lab status`` (nodes, BMC URL)."""
        return self.dir / "lab.json"

    @property
    def lab_faults(self) -> Path:
        """The faults ``railyard lab fault`` injected and has not put back."""
        return self.dir / "lab-faults.json"

    @property
    def logs(self) -> Path:
        """Logs of the lab's helper processes."""
        return self.dir / "logs"

    @property
    def ibsim_net(self) -> Path:
        """The simulated fabric's ibsim net file."""
        return self.dir / "ibsim.net"

    @property
    def ibsim_console(self) -> Path:
        """The FIFO ibsim reads console commands from (beside its net file)."""
        return self.dir / "ibsim.console"

    @property
    def ibsim_log(self) -> Path:
        """ibsim's log."""
        return self.logs / "ibsim.log"

    @property
    def bmc(self) -> Path:
        """The Redfish emulator's folder (its config, htpasswd, credentials, logs)."""
        return self.dir / "bmc"

    @property
    def bmc_credentials(self) -> Path:
        """The emulator's BMC login (0600), read by lab clients."""
        return self.bmc / "credentials.json"


def stack_file(stack: str, project: Path = REPO_ROOT) -> Path:
    """The stack file ``Pulumi.<stack>.yaml`` of a Pulumi project folder (the repository)."""
    return Path(project) / f"Pulumi.{stack}.yaml"


def project_backend_holds(layout: StateLayout) -> bool:
    """Whether the project's own file backend (``state/pulumi``) has a stack of this name."""
    stacks = layout.pulumi_backend / ".pulumi" / "stacks"
    return any(any(stacks.rglob(f"{layout.stack}{suffix}")) for suffix in (".json", ".json.gz"))


def pulumi_env(layout: StateLayout, environ: dict[str, str] | None = None) -> dict[str, str] | None:
    """The environment for reading ``layout``'s stack: ``environ`` (default ``os.environ``) with
    the Makefile's values for what it left unset (the project's file backend; the stack's
    passphrase file, or the lab's passphrase) and :data:`PULUMI_OFFLINE`. None when no backend
    is set and the project's does not hold the stack, or the set backend is a file backend that
    does not exist."""
    env = dict(os.environ if environ is None else environ)
    backend = env.get("PULUMI_BACKEND_URL", "")
    if backend.startswith("file://") and not Path(backend.removeprefix("file://")).is_dir():
        return None  # a file backend that does not exist holds no stack
    if "PULUMI_BACKEND_URL" not in env:
        if not project_backend_holds(layout):
            return None
        env["PULUMI_BACKEND_URL"] = layout.pulumi_backend.resolve().as_uri()
    if not any(name in env for name in PASSPHRASE_ENV):
        if layout.passphrase.is_file():
            env["PULUMI_CONFIG_PASSPHRASE_FILE"] = str(layout.passphrase)
        elif layout.stack == DEFAULT_STACK:
            env["PULUMI_CONFIG_PASSPHRASE"] = LAB_PASSPHRASE
    return env | PULUMI_OFFLINE
