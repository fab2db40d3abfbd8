"""``railyard run PLAYBOOK [--stack NAME] [--spec FILE] [--limit HOSTS] [-e KEY=VALUE]
[--json]``: the Ansible hand-off.

Writes the role variables from the stack's spec to ``state/<stack>/group_vars/all.yml``,
runs the playbook with ansible-runner against ``state/<stack>/inventory.yml``, streams
progress to stderr and prints the short summary (per-host counts, failed tasks, where the
artifacts are). The cluster's munge key comes from the stack (``fabric.handoff.secrets``).
Exit 0 on success, 1 when a host failed, 2 on bad usage or input (a spec with problems,
no inventory, an unknown playbook).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fabric.cli.errors import Exit, emit, seconds
from fabric.cli.options import add_json, add_spec, add_stack, spec_path

if TYPE_CHECKING:
    from fabric.handoff.summary import PlaybookResult


def register(subparsers: argparse._SubParsersAction) -> None:
    """Register ``run``."""
    parser = subparsers.add_parser(
        "run",
        help="run a playbook against a stack's inventory (ansible-runner)",
        description=__doc__.split("\n\n", 1)[1] if __doc__ else None,
    )
    parser.add_argument("playbook", help="e.g. playbooks/site.yml, or site.yml")
    add_stack(parser)
    parser.add_argument("--limit", default=None, help="Ansible host pattern to limit the run to")
    parser.add_argument(
        "-e",
        "--extra-vars",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        type=_extra_var,
        help="a playbook variable, e.g. -e railyard_new_nodes=gpu09 (repeatable; not for secrets: "
        "the run's artifacts keep it)",
    )
    add_spec(
        parser,
        help="cluster spec YAML or Pulumi.<stack>.yaml to derive role variables from "
        "(default: the stack's)",
    )
    parser.add_argument(
        "--timeout",
        type=seconds,
        default=None,
        metavar="SECONDS",
        help="stop the run after this many seconds, at most a day (default: 14400, four hours)",
    )
    parser.add_argument(
        "--result-json",
        default=None,
        help="also write the result (status, rc, recap, per-host counts, summary) to this JSON file",
    )
    add_json(
        parser,
        "print the result (as --result-json writes it) as one JSON document instead of the summary",
    )
    parser.set_defaults(func=cmd_run)


#: Variable names that hold secrets: they come from the stack or a vault, never from ``-e``
#: (ansible-runner keeps extra vars in the run's artifacts).
_SECRET_WORDS = ("password", "passphrase", "secret", "token", "munge_key", "private_key")


def _extra_var(text: str) -> tuple[str, str]:
    """``KEY=VALUE`` -> (KEY, VALUE); KEY must be a variable name and not a secret's."""
    key, sep, value = text.partition("=")
    if not sep or not key.isidentifier():
        raise argparse.ArgumentTypeError(
            f"{text!r} is not KEY=VALUE with a variable name as KEY (e.g. railyard_new_nodes=gpu09)"
        )
    if any(word in key.lower() for word in _SECRET_WORDS):
        raise argparse.ArgumentTypeError(
            f"{key} looks like a secret; -e values are kept in the run's artifacts. Set secrets as "
            "Pulumi secrets (the munge key comes from the stack) or in an Ansible vault instead"
        )
    return key, value


def cmd_run(args: argparse.Namespace) -> int:
    """Run the playbook; a bad spec or a HandoffError is bad input: exit 2 (via main)."""
    import json

    from fabric.handoff.runner import PLAYBOOK_TIMEOUT, REPO_ROOT, run_playbook
    from fabric.handoff.secrets import kube_secrets, munge_key
    from fabric.spec import load_spec

    spec_file = spec_path(args)
    spec = load_spec(spec_file)
    key = munge_key(args.stack, REPO_ROOT)
    secrets = ({"slurm_munge_key": key} if key else {}) | kube_secrets()
    result = run_playbook(
        args.playbook,
        stack=args.stack,
        spec=spec,
        limit=args.limit,
        secret_vars=secrets or None,
        extra_vars=dict(args.extra_vars),
        timeout=args.timeout or PLAYBOOK_TIMEOUT,
    )
    doc = _result_doc(result)
    if args.result_json:
        Path(args.result_json).write_text(json.dumps(doc))
    emit(json.dumps(doc, indent=2) if args.json else result.summary())
    return Exit.OK if result.ok else Exit.FAILED


def _result_doc(result: PlaybookResult) -> dict[str, Any]:
    """A PlaybookResult as the JSON document ``--result-json`` and ``--json`` give."""
    from dataclasses import asdict

    return {
        "ok": result.ok,
        "status": result.status,
        "rc": result.rc,
        "recap": result.recap(),
        "summary": result.summary(),
        "artifacts": str(result.artifacts),
        "hosts": {h: asdict(c) for h, c in result.hosts.items()},
    }
