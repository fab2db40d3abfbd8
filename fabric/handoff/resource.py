"""``AnsibleHandoff``: the hand-off's Pulumi dynamic resource, which runs ``playbooks/site.yml``
on the provisioned hosts through ``fabric.handoff.runner``.

Every target hands off: before each run it writes the inventory text it is given to the
stack's inventory (``StateLayout(stack).inventory``, 0644, atomically), where the runner and a
day-2 ``python -m fabric run`` find it. It runs on create, and again only when an input changes
(:class:`fabric.components.rerun.RerunProvider`): the spec, the inventory text, the playbook,
or the hash of ``roles/`` and ``playbooks/`` (``content_hash``, computed when the program runs).
Deleting it leaves the hosts as they are and removes the files it wrote.

Progress reaches ``pulumi up``: a dynamic provider has no engine connection for
``pulumi.log`` (it falls back to printing), but the engine shows every line a provider
plugin writes to stderr as an info diagnostic, so the runner's progress lines go to stderr.
A failed run fails the resource with the short summary (failed hosts and tasks, artifacts).

Stacks made before this module moved here store its provider as
``fabric.components.handoff.AnsibleHandoffProvider``: that alias module stays until they are gone.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pulumi

from fabric.components import rerun
from fabric.handoff.secrets import MUNGE_KEY_ENV
from fabric.state import REPO_ROOT
from fabric.targets import line_of

#: Inputs whose change re-runs the playbook.
RERUN_ON = (
    *("stack", "spec_json", "inventory", "playbook", "limit", "content_hash", "munge_key"),
    *("kube_token", "kube_ca"),
)
#: Paths under roles/ and playbooks/ that do not change what runs on the hosts.
IGNORED_PARTS = frozenset({"molecule", "tests", "__pycache__", ".pytest_cache"})
OUTPUTS = ("status", "rc", "recap", "artifacts", "changed_hosts")
#: Seconds the provider waits for the child past its playbook's own timeout (start, summary).
CHILD_MARGIN = 300


def content_hash(root: Path = REPO_ROOT, dirs: tuple[str, ...] = ("roles", "playbooks")) -> str:
    """sha256 over the relative paths and bytes of every file that Ansible runs."""
    return rerun.content_hash(
        root,
        dirs,
        ignored_parts=IGNORED_PARTS,
        ignored_suffixes=frozenset({".md", ".pyc"}),
        end=b"\0",
    )


def run(props: dict[str, Any]) -> dict[str, Any]:
    """Run the playbook for ``props``; the outputs, or an exception carrying the summary.

    The run happens in a child ``python -m fabric run`` process: ansible-runner forks (pexpect),
    and a fork of this provider process, whose gRPC threads are running, produced an
    ansible-playbook that wrote nothing and failed at once (``fork_posix.cc: Other threads are
    currently calling into gRPC, skipping fork() handlers``). The child's progress lines
    (stderr) pass straight through to ``pulumi up``. The child stops its playbook after
    ``PLAYBOOK_TIMEOUT``; this process waits that long and a margin, then stops the child.
    """
    import os
    import subprocess
    import sys
    import tempfile

    from fabric.handoff.runner import PLAYBOOK_TIMEOUT, write_inventory

    write_inventory(props["stack"], props["inventory"])
    with tempfile.TemporaryDirectory(prefix="railyard-handoff-") as tmp:
        spec_file = Path(tmp) / "spec.json"
        spec_file.write_text(props["spec_json"])
        result_file = Path(tmp) / "result.json"
        argv = [
            sys.executable,
            "-m",
            "fabric",
            "run",
            props["playbook"],
            "--stack",
            props["stack"],
            "--spec",
            str(spec_file),
            "--result-json",
            str(result_file),
        ]
        if props.get("limit"):
            argv += ["--limit", props["limit"]]
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(
                p for p in (str(REPO_ROOT), os.environ.get("PYTHONPATH", "")) if p
            ),
        }
        if props.get("munge_key"):
            env[MUNGE_KEY_ENV] = props["munge_key"]
        for name, prop in (("RAILYARD_KUBE_TOKEN", "kube_token"), ("RAILYARD_KUBE_CA", "kube_ca")):
            if props.get(prop):  # railyard-health's taints (fabric.handoff.secrets.KUBE_SECRET_ENV)
                env[name] = props[prop]
        try:
            proc = subprocess.run(
                argv,
                cwd=REPO_ROOT,
                env=env,
                stdout=subprocess.PIPE,
                stderr=None,
                text=True,
                check=False,
                timeout=PLAYBOOK_TIMEOUT + CHILD_MARGIN,
            )
        except subprocess.TimeoutExpired as exc:
            raise RuntimeError(
                f"python -m fabric run {props['playbook']} was still running after "
                f"{exc.timeout:.0f} s and was stopped; its artifacts are under "
                f"artifacts/{props['stack']}/"
            ) from None
        if not result_file.is_file():
            raise RuntimeError(
                f"python -m fabric run exited {proc.returncode} without a result: "
                f"{proc.stdout.strip()[-1500:]}"
            )
        result = json.loads(result_file.read_text())
    if not result["ok"]:
        raise RuntimeError(result["summary"])
    # The recap table closes the progress lines (stderr: the engine shows it as info).
    print(result["summary"], file=sys.stderr, flush=True)
    return {
        "status": result["status"],
        "rc": result["rc"],
        "recap": result["recap"],
        "artifacts": result["artifacts"],
        "changed_hosts": sorted(h for h, c in result["hosts"].items() if c["changed"]),
    }


class AnsibleHandoffProvider(rerun.RerunProvider):
    """The dynamic provider behind :class:`AnsibleHandoff`."""

    RERUN_ON = RERUN_ON
    ID_PREFIX = "handoff"

    def run(self, props: dict[str, Any]) -> dict[str, Any]:
        return run(props)

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        """Leave the hosts as they are; remove the files the hand-off wrote (vars, discovered
        fabric, and the inventory, unless the lab's own state file keeps it)."""
        from fabric.handoff.runner import remove_handoff_files

        remove_handoff_files(props["stack"], inventory=not _target_keeps_inventory(props))


def _target_keeps_inventory(props: dict[str, Any]) -> bool:
    """True when the stack's target writes the inventory itself and removes it on its own
    delete (its registry line's ``keeps_inventory``: the lab)."""
    try:
        target = json.loads(props.get("spec_json") or "{}").get("target")
    except ValueError:
        return False
    return isinstance(target, str) and line_of(target).keeps_inventory


class AnsibleHandoff(rerun.RerunResource):
    """Run ``playbook`` (site.yml) with ansible-runner against ``state/<stack>/inventory.yml``,
    written from ``inventory`` first."""

    status: pulumi.Output[str]
    rc: pulumi.Output[int]
    recap: pulumi.Output[str]
    artifacts: pulumi.Output[str]
    changed_hosts: pulumi.Output[list[str]]

    def __init__(
        self,
        name: str,
        *,
        stack: str,
        spec_json: pulumi.Input[str],
        inventory: pulumi.Input[str],
        playbook: str = "playbooks/site.yml",
        limit: str | None = None,
        munge_key: pulumi.Input[str] | None = None,
        kube_token: pulumi.Input[str] | None = None,
        kube_ca: pulumi.Input[str] | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        props: dict[str, Any] = {
            "munge_key": munge_key,
            "kube_token": kube_token,
            "kube_ca": kube_ca,
            "stack": stack,
            "spec_json": spec_json,
            "inventory": inventory,
            "playbook": playbook,
            "limit": limit,
            "content_hash": content_hash(),
        }
        secret = pulumi.ResourceOptions(
            additional_secret_outputs=["munge_key", "kube_token", "kube_ca"]
        )
        super().__init__(
            AnsibleHandoffProvider(),
            name,
            props,
            OUTPUTS,
            pulumi.ResourceOptions.merge(opts, secret),
        )
