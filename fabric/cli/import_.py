"""``railyard import``: write a cluster spec from what a running fabric reports.

From an ``ibnetdiscover`` capture file (with ``--sminfo FILE``, ``sminfo``'s output captured
beside it), or from a host reached over SSH (``--ssh HOST``: ``ibnetdiscover``, ``sminfo`` and
``smpquery nodeinfo``/``nodedesc`` on the master SM's LID run there, each with a timeout, the
host key checked against the user's known_hosts). The subnet manager is never one railyard
would start unasked: a switch's SM or an external one as found, ``managed`` only with
``--manage-sm`` (fabric.topology.importer). The spec goes to stdout or ``--output FILE``; what the capture cannot
tell is marked PLACEHOLDER in it and listed on stderr (fabric.topology.importer), and so is each
CA whose node description was never set to its host's (``localhost mlx5_0``, ``<host> HCA-1``),
with its GUID and the fix. ``--json``:
one JSON document of the spec's text and those notes.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import threading

from fabric.cli.errors import (
    CommandError,
    Exit,
    emit,
    emit_json,
    positive_mib,
    read_input,
    require_stack,
    seconds,
)
from fabric.cli.options import add_json, add_stack

_FIX = "pass ibnetdiscover's plain output (a file, or '-' for stdin)"
#: Seconds allowed for each command run over SSH.
SSH_TIMEOUT = 120


def register(subparsers: argparse._SubParsersAction) -> None:
    """Register the ``import`` subcommand."""
    parser = subparsers.add_parser(
        "import",
        help="write a spec from a running fabric (ibnetdiscover capture or --ssh HOST)",
        description="Write a cluster spec (target existing) from an ibnetdiscover capture or "
        "from a host over SSH, where sminfo also names the master subnet manager. What the "
        "capture cannot tell is marked PLACEHOLDER and listed on stderr. Exit 0, or 2 on "
        "unreadable, binary or cut-off input, input over --max-mb (default 64 MiB, as parse: "
        "a larger capture is refused at once), a capture naming no host, or an SSH failure. "
        "--ssh checks the host key against your own ~/.ssh/known_hosts and logs in with your "
        "keys; with --stack NAME, against state/NAME/known_hosts with the stack's key, as "
        "every other command does.",
    )
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "capture", nargs="?", metavar="FILE", help="ibnetdiscover output ('-': stdin)"
    )
    source.add_argument("--ssh", metavar="[USER@]HOST", help="run ibnetdiscover and sminfo there")
    parser.add_argument(
        "--sminfo",
        metavar="FILE",
        help="sminfo's output captured with FILE: names the master SM's port (capture only)",
    )
    parser.add_argument(
        "--manage-sm",
        action="store_true",
        help="railyard takes over the master SM found on a host's HCA (mode managed: it "
        "then runs OpenSM there); without it the SM is written as external or switch",
    )
    add_stack(parser, default=False)  # with --ssh: the stack's known_hosts and key
    parser.add_argument("--name", default="imported", help="the spec's cluster name")
    parser.add_argument("--output", metavar="FILE", help="write the spec here, not to stdout")
    parser.add_argument(
        "--timeout",
        type=seconds,
        default=SSH_TIMEOUT,
        metavar="S",
        help="seconds per SSH command (1 to a day)",
    )
    parser.add_argument(
        "--max-mb",
        type=positive_mib,
        default=None,
        metavar="N",
        help="refuse a capture (file, stdin or --ssh output) larger than N MiB before reading "
        "further (default 64, as parse)",
    )
    add_json(
        parser,
        'print {"name", "spec": YAML, "notes": [...], "output": FILE or null} as one JSON '
        "document instead of the spec; an error too",
    )
    parser.set_defaults(func=cmd_import)


def note(text: str) -> None:
    """One line on stderr for the operator, secrets redacted (fabric.redact)."""
    from fabric.redact import redact

    print(f"railyard import: {redact(text)}", file=sys.stderr)


def ssh_argv(host: str, command: str, stack: str | None = None) -> list[str]:
    """``ssh`` running ``command`` on ``host``: no prompt, host key checked strictly against
    the user's known_hosts (an unknown or changed key fails), or with ``stack`` against the
    stack's known_hosts, logging in with the stack's key (the lab's generated one, else the
    provided ``state/<stack>/id_ed25519``) when it has one."""
    options = ["-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes"]
    if stack is not None:
        from fabric.state import StateLayout

        layout = StateLayout(stack)
        options += ["-o", f"UserKnownHostsFile={layout.known_hosts}"]
        key = next((k for k in (layout.ssh_key, layout.provided_ssh_key) if k.is_file()), None)
        if key is not None:
            options += ["-o", "IdentitiesOnly=yes", "-i", str(key)]
    return ["ssh", *options, "-o", "ConnectTimeout=15", "--", host, command]


def _scrubbed(line: str, host: str) -> str:
    """ssh's own error line without the ``--ssh`` value in any case (ssh lowercases a host
    name it cannot resolve), secrets redacted: the value is named by the prefix only."""
    import re

    from fabric.redact import redact

    for part in sorted({host, *re.split(r"[@:]", host)}, key=len, reverse=True):
        if len(part) >= 4:
            line = re.sub(re.escape(part), "HOST", line, flags=re.IGNORECASE)
    return redact(line)


#: How much of an SSH command's stderr is kept (its last line is shown).
_STDERR_KEPT = 64 * 1024


def _ssh(
    host: str, command: str, timeout: int, limit_mib: int, stack: str | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``command`` on ``host``; its stdout read no further than ``limit_mib`` MiB (the
    command is stopped beyond it), text checked by the one decoder."""
    from fabric.parsers.text import MIB, InputError, decode

    try:
        proc = subprocess.Popen(  # noqa: S603 - a fixed argv, no shell
            ssh_argv(host, command, stack), stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
    except OSError as err:
        raise CommandError(f"--ssh: cannot run ssh: {err.strerror or err}") from err
    limit = limit_mib * MIB
    out, err = bytearray(), bytearray()

    def read_out() -> None:
        assert proc.stdout is not None
        while chunk := proc.stdout.read(1 << 20):
            out.extend(chunk)
            if len(out) > limit:
                proc.kill()
                return

    def read_err() -> None:
        assert proc.stderr is not None
        while chunk := proc.stderr.read(1 << 16):
            err.extend(chunk)
            del err[:-_STDERR_KEPT]

    readers = [threading.Thread(target=f, daemon=True) for f in (read_out, read_err)]
    for reader in readers:
        reader.start()
    try:
        code = proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise CommandError(
            f"--ssh {host}: {command!r} did not finish in {timeout} s; raise --timeout"
        ) from None
    finally:
        for reader in readers:
            reader.join(5)
    if len(out) > limit:
        raise CommandError(
            f"--ssh {host}: {command} printed more than the input cap of {limit_mib} MiB; if it "
            "really is one fabric's output, raise the cap with --max-mb N"
        )
    try:
        text = decode(f"--ssh {host}: {command}", bytes(out)).text
    except InputError as error:
        raise CommandError(str(error)) from None
    return subprocess.CompletedProcess(proc.args, code, text, err.decode("utf-8", errors="replace"))


def _remote(
    host: str, timeout: int, limit_mib: int, stack: str | None = None
) -> tuple[str, str | None]:
    """(ibnetdiscover output, sminfo output or None) from ``host``."""
    run = _ssh(host, "ibnetdiscover", timeout, limit_mib, stack)
    if run.returncode != 0 or not run.stdout.strip():
        last = _scrubbed((run.stderr.strip().splitlines() or ["no output"])[-1], host)
        known = f"state/{stack}/known_hosts" if stack else "~/.ssh/known_hosts, or pass --stack"
        raise CommandError(
            f"--ssh {host}: ibnetdiscover failed (exit {run.returncode}): {last}; check the "
            f"host key ({known}), the login and infiniband-diags there"
        )
    sm = _ssh(host, "sminfo", timeout, limit_mib, stack)
    return run.stdout, sm.stdout if sm.returncode == 0 else None


def _sm_identity(
    host: str, lid: int, timeout: int, limit_mib: int, stack: str | None = None
) -> object | None:
    """What ``smpquery nodeinfo``/``nodedesc`` on ``host`` say about the node at ``lid``
    (a ``fabric.topology.importer.SmIdentity``), or None when neither answers."""
    from fabric.parsers.common import ParseError
    from fabric.parsers.smpquery import NodeDescReport, NodeInfoReport, parse
    from fabric.topology.importer import SmIdentity

    node_type = description = None
    for query in ("nodeinfo", "nodedesc"):
        run = _ssh(host, f"smpquery {query} {lid}", timeout, limit_mib, stack)
        try:
            report = parse(run.stdout + run.stderr)
        except ParseError as err:
            note(f"smpquery {query} {lid} on {host}: {err}")
            continue
        if isinstance(report, NodeInfoReport) and report.ok:
            node_type = report.node_type
        elif isinstance(report, NodeDescReport) and report.ok:
            description = report.description
    if node_type is None and description is None:
        return None
    return SmIdentity(node_type=node_type, description=description)


def _check_ssh_target(target: str) -> None:
    """Refuse an ``--ssh`` value that is not ``[USER@]HOST`` of public characters (a password
    or a key pasted there), naming it only as the secret filter shows it."""
    import re

    from fabric.redact import first_bad_char, redact, text_problem

    why = text_problem(target)
    if why is not None:
        named = redact(target)  # a password in USER:PASSWORD@HOST: its marker, the rest kept
        if first_bad_char(re.sub(r"<redacted [^>]*>", "", named)) is not None:
            named = "(not shown)"
        raise CommandError(f"--ssh {named}: {why}; --ssh takes [USER@]HOST, the login by key")


def _check_output(output: str, *inputs: str | None) -> None:
    """Refuse ``--output`` naming an input file, before anything is read or written."""
    import os

    for given in inputs:
        if not given or given == "-":
            continue
        same = os.path.abspath(given) == os.path.abspath(output)
        try:
            same = same or os.path.samefile(given, output)
        except OSError:  # the output does not exist yet: no file to overwrite
            pass
        if same:
            raise CommandError(
                f"--output {output}: is the input {given}; writing the spec there would "
                "overwrite the capture: pass another --output FILE"
            )


def cmd_import(args: argparse.Namespace) -> int:
    """Read the capture (file or SSH), write the spec, list the placeholders on stderr."""
    from fabric.parsers.common import ParseError
    from fabric.parsers.ibnetdiscover import parse
    from fabric.parsers.sminfo import SminfoReport
    from fabric.parsers.sminfo import parse as parse_sminfo
    from fabric.parsers.text import DEFAULT_LIMIT_MIB
    from fabric.spec import HOSTNAME_PATTERN
    from fabric.topology.importer import CaptureError, import_fabric

    if not HOSTNAME_PATTERN.match(args.name) or args.name != args.name.lower():
        raise CommandError(f"--name {args.name!r}: use lowercase letters, digits and hyphens")
    sm: SminfoReport | None = None
    identity = None
    limit_mib = args.max_mb or DEFAULT_LIMIT_MIB
    if args.ssh and args.sminfo:
        raise CommandError("--sminfo goes with a capture FILE; --ssh runs sminfo itself")
    if args.stack:
        require_stack(args.stack)  # an unknown stack: exit 2, naming the known ones
        if not args.ssh:
            raise CommandError("--stack goes with --ssh HOST (the stack's known_hosts and key)")
    if args.ssh:
        _check_ssh_target(args.ssh)
    if args.output:
        _check_output(args.output, args.capture, args.sminfo)
    if args.ssh:
        text, sm_text = _remote(args.ssh, args.timeout, limit_mib, args.stack)
        try:
            sm = parse_sminfo(sm_text) if sm_text else None
        except ParseError as err:  # no SM answer is a placeholder, not a failed import
            note(f"sminfo on {args.ssh}: {err}")
        if sm is not None and sm.ok and sm.sm_lid is not None:
            identity = _sm_identity(args.ssh, sm.sm_lid, args.timeout, limit_mib, args.stack)
        where = f"{args.ssh}: ibnetdiscover"
    else:
        if args.sminfo:
            sm_source = read_input(
                args.sminfo, "pass sminfo's output (a file)", limit_mib, "--max-mb N"
            )
            try:
                sm = parse_sminfo(sm_source.text)
            except ParseError as err:
                raise CommandError(f"--sminfo {args.sminfo}: {err}") from None
            if not sm.ok:
                raise CommandError(
                    f"--sminfo {args.sminfo}: sminfo found no SM ({sm.reason}); capture it "
                    "again once the SM answers, or leave --sminfo out"
                )
        source = read_input(args.capture, _FIX, limit_mib, "--max-mb N")
        if not source.complete:
            raise CommandError(
                f"{source.name}: line {source.last_line}: the last line has no newline, so the "
                "capture was cut off mid-line; capture the whole ibnetdiscover output again"
            )
        text, where = source.text, source.name
        del source
    graph = parse(text)
    del text  # up to --max-mb of it: not kept while the spec is built and validated
    try:
        imported = import_fabric(graph, args.name, sm, identity, args.manage_sm)  # type: ignore[arg-type]
    except CaptureError as err:
        raise CommandError(f"{where}: {err}") from None
    if args.output:
        try:
            with open(args.output, "w", encoding="utf-8") as out:
                out.write(imported.text)
        except OSError as err:
            raise CommandError(f"--output {args.output}: {err.strerror or err}") from err
    elif not args.json:
        emit(imported.text.rstrip("\n"))
    if args.json:  # the document first, then the notes on stderr, as without --json
        from fabric.redact import redact

        emit_json(
            {
                "name": args.name,
                "spec": imported.text,
                "notes": [redact(text) for text in imported.notes],
                "output": args.output,
            }
        )
    for text in imported.notes:
        note(text)
    return Exit.OK
