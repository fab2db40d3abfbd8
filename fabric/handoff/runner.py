"""Run a playbook with ansible-runner against a stack's generated inventory.

The inventory is the one the hand-off wrote (``state/<stack>/inventory.yml``, see
:func:`write_inventory`; paths from :class:`fabric.state.StateLayout`); the role variables
derived from the spec are written next to it as ``state/<stack>/group_vars/all.yml``, so that a
plain ``ansible-playbook -i state/<stack>/inventory.yml playbooks/site.yml`` sees the same
values. Every run keeps its private data dir (events, stdout, the command) under
``artifacts/<stack>/<timestamp>/``.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import yaml
from pydantic import BaseModel, Field

from fabric.handoff import stragglers
from fabric.handoff.summary import EventSummary, PlaybookResult
from fabric.handoff.vars import HandoffError, write_group_vars
from fabric.spec import ClusterSpec
from fabric.state import ARTIFACTS_ROOT, REPO_ROOT, StateLayout

if TYPE_CHECKING:
    from fabric.model.cluster import ClusterModel

#: Never handed to Ansible: ansible-runner records the whole environment of a run in the
#: artifacts' ``command`` file, and Ansible needs none of these.
SENSITIVE_ENV = ("PULUMI_CONFIG_PASSPHRASE", "PULUMI_ACCESS_TOKEN", "RAILYARD_MUNGE_KEY")
#: Forks never exceed this, however large the cluster: each fork is a controller process. The
#: lab takes as many as any cluster: ibsim serves 10 clients at once (IBSIM_MAX_CLIENTS,
#: compiled in), but only a process that opens the simulated HCA takes one, for as long as it
#: runs, and the lab's umad shim makes such a process wait for a free slot (and for ibsim
#: itself) instead of failing (docs/lab.md, "ibsim's client limit").
MAX_FORKS = 64
#: How long cached facts stay valid (s), as ansible.cfg's: a host changed outside Ansible (a new
#: kernel after a reboot) is seen again within this; a changed inventory empties the cache.
FACT_CACHE_TIMEOUT = 7200
#: How long one playbook run may take (s) before ansible-runner stops it (status ``timeout``):
#: a DOCA-OFED build and a firmware reset on a large cluster take about an hour; four is a bound
#: that only a hung run reaches. ``python -m fabric run --timeout`` changes it.
PLAYBOOK_TIMEOUT = 4 * 3600


class AnsibleSettings(BaseModel):
    """How Ansible runs a playbook: the settings the hand-off tunes for speed.

    ``railyard`` (the hand-off's own) and ``stock`` (Ansible's defaults, what ``bench/handoff``
    compares against) build the two profiles. ``strategy`` and ``gather_subset`` reach the
    playbook as ``railyard_strategy`` / ``railyard_gather_subset``: ``playbooks/site.yml``
    owns their values (``free`` where host order does not matter, only the facts the roles
    read) and a profile only overrides them. ``mitogen``: Mitogen's counterpart of each
    strategy runs the plays (``playbooks/strategy_plugins``, ``ansible.cfg``).
    """

    forks: int = Field(ge=1)
    pipelining: bool
    strategy: Literal["linear", "free"] | None = None
    #: Mitogen runs the plays: one Python interpreter per host for the whole run, not one per
    #: task. False: Ansible's own strategies (``linear`` for plays that name none).
    mitogen: bool = True
    gather_subset: list[str] | None = None
    #: jsonfile fact cache; with it facts are gathered only for hosts it does not hold
    #: (``gathering = smart``); None: gathered in every run, kept in memory.
    fact_cache: Path | None = None

    def env(self) -> dict[str, str]:
        """The ``ANSIBLE_*`` environment of these settings."""
        env = {
            "ANSIBLE_FORKS": str(self.forks),
            "ANSIBLE_PIPELINING": str(self.pipelining),
            "ANSIBLE_STRATEGY": "mitogen_linear" if self.mitogen else "linear",
        }
        if self.fact_cache is None:
            return env | {"ANSIBLE_GATHERING": "implicit", "ANSIBLE_CACHE_PLUGIN": "memory"}
        return env | {
            "ANSIBLE_GATHERING": "smart",
            "ANSIBLE_CACHE_PLUGIN": "jsonfile",
            "ANSIBLE_CACHE_PLUGIN_CONNECTION": str(self.fact_cache),
            "ANSIBLE_CACHE_PLUGIN_TIMEOUT": str(FACT_CACHE_TIMEOUT),
        }

    def runner_kwargs(self) -> dict[str, str]:
        """ansible-runner's own fact cache arguments: it sets ``ANSIBLE_CACHE_PLUGIN*`` itself
        (a jsonfile cache inside each run's artifacts unless told), over ``envvars``."""
        if self.fact_cache is None:
            return {"fact_cache_type": "memory"}
        # An absolute path: ansible-runner joins it to the run's artifact dir, which keeps it.
        return {"fact_cache_type": "jsonfile", "fact_cache": str(self.fact_cache.resolve())}

    def extra_vars(self) -> dict[str, Any]:
        """The playbook variables of these settings (only those that override site.yml)."""
        out: dict[str, Any] = {}
        if self.strategy is not None:
            out["railyard_strategy"] = f"mitogen_{self.strategy}" if self.mitogen else self.strategy
        elif not self.mitogen:
            out["railyard_strategy"] = "free"  # site.yml's mitogen_free without Mitogen
        if self.gather_subset is not None:
            out["railyard_gather_subset"] = self.gather_subset
        return out

    @classmethod
    def railyard(cls, hosts: int, fact_cache: Path) -> AnsibleSettings:
        """railyard's: one fork per host up to MAX_FORKS, pipelining, facts cached per stack,
        Mitogen; strategy and fact subset as site.yml sets them."""
        forks = max(1, min(hosts, MAX_FORKS))
        return cls(forks=forks, pipelining=True, fact_cache=fact_cache)

    @classmethod
    def stock(cls) -> AnsibleSettings:
        """Ansible's defaults: 5 forks, no pipelining, linear without Mitogen, every fact in
        every run."""
        return cls(
            forks=5, pipelining=False, strategy="linear", mitogen=False, gather_subset=["all"]
        )


def inventory_host_count(inventory: Path) -> int:
    """How many distinct hosts a YAML inventory names (in any group)."""
    found: set[str] = set()

    def walk(group: Any) -> None:
        if not isinstance(group, dict):
            return
        found.update((group.get("hosts") or {}).keys())
        for child in (group.get("children") or {}).values():
            walk(child)

    for group in (yaml.safe_load(inventory.read_text()) or {}).values():
        walk(group)
    return len(found)


def handoff_settings(stack: str, state_root: Path | None = None) -> AnsibleSettings:
    """The hand-off's settings for ``stack``: forks sized to its inventory."""
    layout = StateLayout(stack, state_root)
    return AnsibleSettings.railyard(inventory_host_count(layout.inventory), layout.fact_cache)


@contextmanager
def secret_vars_file(values: dict[str, str]) -> Iterator[Path | None]:
    """A private (0600) vars file for ``-e @FILE`` that exists only while the run does.

    Extra vars given to ansible-runner directly are written into the run's kept artifacts;
    a file path on the command line keeps the values out of them.
    """
    if not values:
        yield None
        return
    with tempfile.TemporaryDirectory(prefix="railyard-secrets-") as tmp:
        path = Path(tmp) / "secrets.json"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as handle:
            json.dump(values, handle)
        yield path


@contextmanager
def without_sensitive_env() -> Iterator[None]:
    """Hide ``SENSITIVE_ENV`` from this process's environment while Ansible runs."""
    saved = {k: os.environ.pop(k) for k in SENSITIVE_ENV if k in os.environ}
    try:
        yield
    finally:
        os.environ.update(saved)


def stderr_line(line: str) -> None:
    """Print one progress line to stderr, at once."""
    print(line, file=sys.stderr, flush=True)


def inventory_path(stack: str, state_root: Path | None = None) -> Path:
    """``state/<stack>/inventory.yml``; a HandoffError saying how to make it when absent."""
    path = StateLayout(stack, state_root).inventory
    if not path.is_file():
        raise HandoffError(
            f"no inventory at {path}: provision the stack first (pulumi up --stack {stack})"
        )
    return path


def write_inventory(stack: str, text: str, state_root: Path | None = None) -> Path:
    """Write ``text`` to the stack's inventory (mode 0644, atomically: a reader sees the old file
    or the new one, never a part); return its path. Unchanged content is left alone."""
    layout = StateLayout(stack, state_root)
    path = layout.inventory
    if path.is_file() and path.read_text() == text:
        return path
    # Hosts may be new or readdressed: their cached facts are not theirs any more.
    shutil.rmtree(layout.fact_cache, ignore_errors=True)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd, tmp = tempfile.mkstemp(prefix=".inventory-", suffix=".yml", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def resolve_playbook(playbook: str | Path) -> Path:
    """An existing playbook path: as given, or relative to the repository root."""
    for candidate in (Path(playbook), REPO_ROOT / playbook, REPO_ROOT / "playbooks" / playbook):
        if candidate.is_file():
            return candidate.resolve()
    raise HandoffError(
        f"no playbook {playbook!r} (looked in . , {REPO_ROOT} and {REPO_ROOT / 'playbooks'})"
    )


def new_artifacts_dir(stack: str, artifacts_root: Path = ARTIFACTS_ROOT) -> Path:
    """A fresh ``artifacts/<stack>/<UTC timestamp>[-n]/`` directory."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    base = StateLayout(stack, artifacts_root=artifacts_root).artifacts
    base.mkdir(parents=True, exist_ok=True)
    for n in range(100):
        path = base / (stamp if n == 0 else f"{stamp}-{n}")
        try:
            path.mkdir()
            return path
        except FileExistsError:
            continue
    raise HandoffError(f"cannot make a new artifacts directory under {base}")


def run_playbook(
    playbook: str | Path,
    *,
    stack: str = "lab",
    spec: ClusterSpec | None = None,
    model: ClusterModel | None = None,
    limit: str | None = None,
    emit: Callable[[str], None] = stderr_line,
    state_root: Path | None = None,
    artifacts_root: Path = ARTIFACTS_ROOT,
    extra_env: dict[str, str] | None = None,
    secret_vars: dict[str, str] | None = None,
    extra_vars: dict[str, str] | None = None,
    settings: AnsibleSettings | None = None,
    timeout: int = PLAYBOOK_TIMEOUT,
) -> PlaybookResult:
    """Run ``playbook`` against ``stack``'s inventory; stream progress through ``emit``.

    With ``spec``, the role variables are (re)written to ``state/<stack>/group_vars/all.yml``
    first, from ``model`` (the run's one :class:`ClusterModel` of ``spec``) when given. ``secret_vars`` (e.g. ``slurm_munge_key``) reach Ansible as extra vars through a
    private file that is removed after the run; ``extra_vars`` (plain values such as
    ``railyard_new_nodes``) as ordinary extra vars, kept in the run's artifacts. Returns the
    typed result; ``result.summary()`` is the short report. ``settings``: how Ansible runs
    (default :func:`handoff_settings`; ``extra_env`` still wins over them). A run past
    ``timeout`` seconds is stopped and reported with status ``timeout``.
    """
    import ansible_runner  # imported here: the CLI's other commands do not need it

    book = resolve_playbook(playbook)
    inventory = inventory_path(stack, state_root)
    if spec is not None:
        write_group_vars(spec, inventory.parent, model)
    private = new_artifacts_dir(stack, artifacts_root)
    settings = settings or handoff_settings(stack, state_root)
    env = {
        "ANSIBLE_CONFIG": str(REPO_ROOT / "ansible.cfg"),
        "ANSIBLE_ROLES_PATH": str(REPO_ROOT / "roles"),
        **settings.env(),
        "ANSIBLE_FORCE_COLOR": "false",
        # ansible-runner sets ANSIBLE_HOST_KEY_CHECKING=False unless told otherwise, and Ansible
        # then turns ssh's checking off ahead of the inventory's ssh args (ssh keeps the first
        # value): host keys are checked against the stack's known_hosts, always.
        "ANSIBLE_HOST_KEY_CHECKING": "True",
        # ansible-playbook from this interpreter's environment (the project venv), first.
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
        **(extra_env or {}),
    }
    summary = EventSummary(emit=emit)
    emit(
        f"running {book.relative_to(REPO_ROOT) if book.is_relative_to(REPO_ROOT) else book} "
        f"on stack {stack}{f' (limit {limit})' if limit else ''}; artifacts in {private}"
    )
    with (
        secret_vars_file(secret_vars or {}) as secrets_file,
        without_sensitive_env(),
        tempfile.TemporaryDirectory(prefix="ry-cp-") as control_dir,
    ):
        # Each run its own ssh ControlPath directory: a master connection kept open by the
        # last run (ControlPersist) would carry this run past a host key that changed since.
        env.setdefault("ANSIBLE_SSH_CONTROL_PATH_DIR", control_dir)
        # Names this run's processes: a run cut off leaves Ansible's task workers running
        # outside ansible-playbook's process group (fabric.handoff.stragglers).
        env[stragglers.MARKER] = str(private)
        try:
            runner = ansible_runner.run(
                private_data_dir=str(private),
                project_dir=str(REPO_ROOT),
                playbook=str(book),
                inventory=str(inventory),
                limit=limit,
                envvars=env,
                extravars={**settings.extra_vars(), **(extra_vars or {})} or None,
                cmdline=f"-e @{secrets_file}" if secrets_file else None,
                event_handler=summary.handle,
                quiet=True,
                # Keep every run's record; they are small and git-ignored.
                rotate_artifacts=0,
                timeout=timeout,
                **settings.runner_kwargs(),
            )
        finally:
            if left := stragglers.stop_marked(str(private)):
                emit(f"stopped {len(left)} process(es) the run left behind")
    rc = runner.rc if isinstance(runner.rc, int) else 1
    return summary.result(str(book), runner.status or "unknown", rc, private)


#: What the hand-off writes next to a stack's inventory (relative to ``state/<stack>/``).
HANDOFF_FILES = tuple(
    p.relative_to(StateLayout("_", Path("/")).dir).as_posix()
    for p in StateLayout("_", Path("/")).handoff_files
)


def remove_handoff_files(
    stack: str, state_root: Path | None = None, *, inventory: bool = False
) -> list[Path]:
    """Delete the files the hand-off wrote for ``stack`` (and folders left empty); return them.

    ``inventory``: the inventory too (a target whose inventory only the hand-off writes)."""
    layout = StateLayout(stack, state_root)
    base = layout.dir
    removed = []
    if layout.fact_cache.is_dir():
        removed += sorted(layout.fact_cache.iterdir())
        shutil.rmtree(layout.fact_cache)
    # day-2 playbooks' check reports (rolling-driver-upgrade.yml: reports/upgrade-<node>)
    for report in sorted(layout.reports.glob("upgrade-*")) if layout.reports.is_dir() else []:
        removed += sorted(p for p in report.rglob("*") if p.is_file())
        shutil.rmtree(report)
    if layout.reports.is_dir() and not any(layout.reports.iterdir()):
        layout.reports.rmdir()
    if layout.switch_renders.is_dir():  # switch_qos's rendered configurations
        removed += sorted(p for p in layout.switch_renders.rglob("*") if p.is_file())
        shutil.rmtree(layout.switch_renders)
        if not any(layout.switch_renders.parent.iterdir()):
            layout.switch_renders.parent.rmdir()
    for path in (*layout.handoff_files, *((layout.inventory,) if inventory else ())):
        if path.is_file():
            path.unlink()
            removed.append(path)
        if path.parent != base and path.parent.is_dir() and not any(path.parent.iterdir()):
            path.parent.rmdir()
    if inventory and base.is_dir() and not any(base.iterdir()):
        base.rmdir()
    return removed
