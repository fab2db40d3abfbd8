"""A lab of a test module's own: ``pulumi up`` of the project's program through the Automation
API, on a file backend in tmp, under its own stack name (``<prefix>-<random hex>``), state
directory and passphrase, destroyed and removed when the module is done.

The spec is a function of a random ``tag`` (0 <= tag < ``tags``) that each test module turns
into its own subnets (inside 198.18.0.0/15) and ports, so labs of several modules, and the
developers' ``lab`` stack, run side by side::

    @pytest.fixture(scope="module")
    def lab(tmp_path_factory):
        with own_lab(tmp_path_factory, "rytest", _spec) as lab:
            yield lab
        assert lab.leftovers == {}
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from fabric.state import REPO_ROOT
from fabric.verify.results import CheckResult

PULUMI_BIN = Path(
    os.environ.get("RAILYARD_PULUMI_BIN", Path.home() / ".cache/railyard/pulumi/v3.259.0/bin")
)

#: Seconds a lab's destroy waits for the lock of an ``up`` that was cut off and still cancels.
LOCK_WAIT_S = 300.0

#: What an Ansible run says of a host whose key no longer matches the stack's ``known_hosts``:
#: ssh's own warning, or Mitogen's words for ssh's "Host key verification failed." (Mitogen runs
#: the plays, ``ansible.cfg``).
HOST_KEY_REFUSED = ("REMOTE HOST IDENTIFICATION HAS CHANGED", "mismatching host key")


def host_key_refused(text: str) -> bool:
    """Whether an Ansible run's output ``text`` says a host key was refused."""
    return any(words in text for words in HOST_KEY_REFUSED)


#: tag -> cluster spec (a mapping as the stack file holds it under ``railyard:cluster``).
SpecFor = Callable[[int], dict[str, Any]]


@dataclass
class OwnLab:
    """A lab brought up by :func:`own_lab`: its stack and where everything of it lives."""

    name: str  #: stack name, also the ``railyard:prefix`` of every container and network
    tag: int  #: the random tag its spec was made with
    root: Path  #: tmp directory holding program/, backend/, state/
    stack: Any  #: the ``pulumi.automation.Stack``
    env: dict[
        str, str
    ]  #: the environment ``pulumi`` runs with (also set in ``os.environ`` meanwhile)
    outputs: dict[str, Any] = field(
        default_factory=dict
    )  #: the outputs of the last ``up`` that set them
    up_log: str = ""  #: the engine output of the first ``up``
    up_seconds: float = 0.0  #: how long the first ``up`` took
    leftovers: dict[str, Any] = field(
        default_factory=dict
    )  #: what destroy left behind (see :func:`leftovers`)

    @property
    def work(self) -> Path:
        """The program directory (``Pulumi.yaml``, ``__main__.py``, the stack file)."""
        return self.root / "program"

    @property
    def backend(self) -> Path:
        """The file backend's directory."""
        return self.root / "backend"

    @property
    def state_root(self) -> Path:
        """``$RAILYARD_STATE_DIR``: the parent of this stack's state directory."""
        return self.root / "state"

    @property
    def state(self) -> Path:
        """This stack's state directory (inventory, ssh key, known_hosts, logs ...)."""
        return self.state_root / self.name

    @property
    def stack_file(self) -> Path:
        """``Pulumi.<stack>.yaml``."""
        return self.work / f"Pulumi.{self.name}.yaml"

    def read_config(self) -> dict[str, Any]:
        """The stack file as a mapping (it keeps the stack's encryption salt)."""
        return yaml.safe_load(self.stack_file.read_text())

    def write_config(self, doc: dict[str, Any]) -> None:
        """Rewrite the stack file."""
        self.stack_file.write_text(yaml.safe_dump(doc))

    def set_spec(self, spec: dict[str, Any]) -> None:
        """Replace ``railyard:cluster`` in the stack file, keeping everything else."""
        doc = self.read_config()
        doc["config"]["railyard:cluster"] = spec
        self.write_config(doc)

    def hosts(self) -> dict[str, dict[str, Any]]:
        """Node name -> its entry of the ``hosts`` output (address, container, fabric_address ...)."""
        return {h["name"]: h for h in self.outputs["hosts"].value}

    def connect(self, node: str) -> Any:
        """A paramiko SSH session to ``node`` as root with the stack's key, host key checked."""
        from fabric.lab.ssh import connect, host_keys_from

        return connect(
            self.hosts()[node]["address"],
            user="root",
            private_key=(self.state / "ssh" / "id_ed25519").read_text(),
            host_keys=host_keys_from(self.state / "known_hosts"),
        )

    def ssh(self, node: str, command: str, timeout: float = 60.0) -> str:
        """Run ``command`` on ``node`` over SSH (see :meth:`connect`); return its stdout; it must succeed."""
        from fabric.lab.ssh import run

        with self.connect(node) as client:
            rc, out, err = run(client, command, timeout=timeout)
        assert rc == 0, f"{node}: {command!r} exited {rc}: {out}{err}"
        return out

    def fabric_run(
        self, playbook: str, timeout: float = 1500.0, *, limit: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        """``python -m fabric run PLAYBOOK --stack <lab>``, as an operator runs it; with
        ``limit``, ``--limit LIMIT`` (the Ansible host pattern of the hosts to run on)."""
        import sys

        return subprocess.run(
            [sys.executable, "-m", "fabric", "run", playbook, "--stack", self.name]
            + ["--spec", str(self.stack_file)]
            + (["--limit", limit] if limit is not None else []),
            capture_output=True,
            text=True,
            cwd=REPO_ROOT,
            timeout=timeout,
            env={**os.environ, **self.env},
            check=False,
        )

    def slurm_node(self, controller: str, node: str) -> tuple[str, str]:
        """(State, Reason) of ``node`` as slurmctld on ``controller`` reports it."""
        out = self.ssh(controller, f"scontrol show node -o {node}")
        state = re.search(r"\bState=(\S+)", out)
        reason = re.search(r"\bReason=(.*?)(?: \[[^\]]*\])?(?= \w+=|$)", out)
        return (state[1] if state else "", reason[1] if reason else "")

    def health(self, node: str) -> dict[str, Any]:
        """One run of ``railyard-health --json`` on ``node``, as slurmd runs it (drains, resumes)."""
        import json

        from fabric.lab.ssh import run

        with self.connect(node) as client:
            rc, out, err = run(client, "/usr/local/sbin/railyard-health --json", timeout=60)
        assert rc in (0, 1, 3), f"{node}: railyard-health exited {rc}: {out}{err}"
        return json.loads(out)

    def testinfra_host(self, node: str) -> Any:
        """A testinfra host for ``node`` through the stack's Ansible inventory."""
        import testinfra

        return testinfra.get_host(
            f"ansible://{node}", ansible_inventory=str(self.state / "inventory.yml")
        )

    def checks(self, select: str) -> dict[str, CheckResult]:
        """Run the checks chosen by the ``-k`` expression ``select`` (``run_checks``, one worker,
        reports under ``root/reports``); return ``name[param]`` -> its ``CheckResult``. The suite must have run at least one check."""
        from fabric.verify.runner import run_checks

        reports = (
            self.root / "reports" / self.name
        )  # outside the state directory the destroy empties
        outcome = run_checks(
            self.name,
            spec=self.stack_file,
            select=select,
            quiet=True,
            workers=1,
            report_dir=reports,
        )
        assert outcome.results, f"the check suite did not run: {outcome.summary()}"
        return {f"{r.name}[{r.param}]": r for r in outcome.results}

    def failed_checks(self, select: str) -> dict[str, str]:
        """Run the checks chosen by ``select`` (see :meth:`checks`); return ``name[param]`` -> message
        of each one that failed."""
        return {key: r.message for key, r in self.checks(select).items() if r.failed}

    def settle_checks(
        self,
        select: str,
        done: Callable[[dict[str, str]], bool],
        seconds: float = 90.0,
        pause: float = 5.0,
    ) -> dict[str, str]:
        """Re-run :meth:`failed_checks` until ``done(failures)`` or ``seconds`` pass; return the last failures."""
        deadline = time.monotonic() + seconds
        while True:
            failed = self.failed_checks(select)
            if done(failed) or time.monotonic() > deadline:
                return failed
            time.sleep(pause)


def slurm_idle(found: tuple[str, str]) -> bool:
    """Whether a (State, Reason) from :meth:`OwnLab.slurm_node` is IDLE and not drained."""
    return found[0].split("+")[0] == "IDLE" and "DRAIN" not in found[0]


def leftovers(prefix: str, state: Path) -> dict[str, Any]:
    """What of a lab is still there: containers and networks named ``prefix*``, processes
    naming its state directory, the state directory and its files. Empty when nothing is."""
    from fabric.lab.podman import podman

    out: dict[str, Any] = {}
    containers = podman(
        ["ps", "-a", "--filter", f"name={prefix}", "--format", "{{.Names}}"]
    ).stdout.split()
    networks = [
        n
        for n in podman(["network", "ls", "--format", "{{.Name}}"]).stdout.split()
        if n.startswith(prefix)
    ]
    procs = subprocess.run(
        ["pgrep", "-af", str(state)], capture_output=True, text=True, check=False, timeout=30
    ).stdout.split("\n")
    for key, value in (
        ("containers", containers),
        ("networks", networks),
        ("processes", [p for p in procs if p]),
        ("files", [str(p) for p in state.rglob("*")] if state.exists() else []),
    ):
        if value:
            out[key] = value
    if state.exists():
        out["state_dir"] = str(state)
    return out


def _destroy(stack: Any) -> None:
    """``pulumi destroy``, once more if the first fails: a lab left behind by a failed destroy
    (its podman networks hold the subnets) breaks the next run of the same module.

    An ``up`` cut off (Ctrl-C, a step's timeout: SIGINT reaches the whole process group) still
    holds the stack's lock while Pulumi cancels it; the destroy waits for the lock, up to
    ``LOCK_WAIT_S``, rather than failing at once and leaving the lab behind."""
    from pulumi.automation.errors import CommandError, ConcurrentUpdateError

    deadline = time.monotonic() + LOCK_WAIT_S
    while True:
        try:
            stack.destroy(on_output=lambda _: None)
            return
        except ConcurrentUpdateError:
            if time.monotonic() > deadline:
                raise
            time.sleep(5)
        except CommandError:
            stack.refresh(on_output=lambda _: None)
            stack.destroy(on_output=lambda _: None)
            return


@contextmanager
def own_lab(
    tmp_path_factory: Any,
    name_prefix: str,
    spec: SpecFor,
    *,
    tags: int = 15,
    handoff: bool = False,
    verify: bool = False,
) -> Iterator[OwnLab]:
    """Bring up a lab of ``spec(tag)`` as stack ``<name_prefix>-<hex>``; destroy it on exit.

    ``handoff``/``verify`` set ``railyard:handoff`` (``playbooks/site.yml`` during ``up``) and
    ``railyard:verify`` (the check suite during ``up``). While the lab exists ``os.environ``
    holds its ``env`` (state directory, backend, passphrase), so in-process helpers such as
    ``run_checks`` and ``run_playbook`` find it; the environment is restored on exit.
    ``lab.leftovers`` tells what the destroy left behind.
    """
    from pulumi import automation as auto

    root = tmp_path_factory.mktemp(name_prefix)
    run_id = secrets.token_hex(3)
    name, tag = f"{name_prefix}-{run_id}", secrets.randbelow(tags)
    work = root / "program"
    work.mkdir()
    for file in ("Pulumi.yaml", "__main__.py"):
        shutil.copy(REPO_ROOT / file, work / file)
    (root / "backend").mkdir()
    env = {
        "PATH": f"{PULUMI_BIN}:{REPO_ROOT / '.venv' / 'bin'}:{os.environ['PATH']}",
        "PULUMI_BACKEND_URL": f"file://{root / 'backend'}",
        "PULUMI_CONFIG_PASSPHRASE": run_id,
        "PULUMI_SKIP_UPDATE_CHECK": "true",
        "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
        "PYTHONPATH": str(REPO_ROOT),
        "RAILYARD_STATE_DIR": str(root / "state"),
        "ANSIBLE_CONFIG": str(REPO_ROOT / "ansible.cfg"),
        "CONTAINERS_CONF": str(REPO_ROOT / "scripts" / "containers.conf"),
    }
    saved = dict(os.environ)
    os.environ.update(env)
    ws = auto.LocalWorkspace(
        work_dir=str(work), env_vars=env, pulumi_command=auto.PulumiCommand(str(PULUMI_BIN.parent))
    )
    lab = OwnLab(name=name, tag=tag, root=root, stack=None, env=env)
    lab.write_config(
        {
            "config": {
                "railyard:prefix": name,
                "railyard:cluster": spec(tag),
                "railyard:handoff": str(handoff).lower(),
                "railyard:verify": str(verify).lower(),
            }
        }
    )
    try:
        lab.stack = auto.Stack.create(name, ws)
        try:
            log: list[str] = []
            started = time.monotonic()
            result = lab.stack.up(on_output=log.append)
            lab.up_seconds, lab.up_log, lab.outputs = (
                time.monotonic() - started,
                "".join(log),
                result.outputs,
            )
            yield lab
        finally:
            try:
                _destroy(lab.stack)
                ws.remove_stack(name)
            finally:
                lab.leftovers = leftovers(name, lab.state)
    finally:
        os.environ.clear()
        os.environ.update(saved)
