"""``python -m fabric import``: write a cluster spec from what a running fabric reports.

From an ``ibnetdiscover`` capture file, or from a host reached over SSH (``--ssh HOST``:
``ibnetdiscover`` and ``sminfo`` run there, each with a timeout, the host key checked against
the user's known_hosts). The spec goes to stdout or ``--output FILE``; what the capture cannot
tell is marked PLACEHOLDER in it and listed on stderr (fabric.topology.importer).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import threading

from fabric.cli.errors import CommandError, Exit, emit, positive_mib, read_input

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
        "a larger capture is refused at once), a capture naming no host, or an SSH failure.",
    )
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "capture", nargs="?", metavar="FILE", help="ibnetdiscover output ('-': stdin)"
    )
    source.add_argument("--ssh", metavar="[USER@]HOST", help="run ibnetdiscover and sminfo there")
    parser.add_argument("--name", default="imported", help="the spec's cluster name")
    parser.add_argument("--output", metavar="FILE", help="write the spec here, not to stdout")
    parser.add_argument(
        "--timeout", type=int, default=SSH_TIMEOUT, metavar="S", help="seconds per SSH command"
    )
    parser.add_argument(
        "--max-mb",
        type=positive_mib,
        default=None,
        metavar="N",
        help="refuse a capture (file, stdin or --ssh output) larger than N MiB before reading "
        "further (default 64, as parse)",
    )
    parser.set_defaults(func=cmd_import)


def note(text: str) -> None:
    """One line on stderr for the operator, secrets redacted (fabric.redact)."""
    from fabric.redact import redact

    print(f"python -m fabric import: {redact(text)}", file=sys.stderr)


def ssh_argv(host: str, command: str) -> list[str]:
    """``ssh`` running ``command`` on ``host``: no prompt, host key checked strictly against
    the user's known_hosts (an unknown or changed key fails)."""
    return [
        "ssh",
        "-o",
        "BatchMode=yes",
        "-o",
        "StrictHostKeyChecking=yes",
        "-o",
        "ConnectTimeout=15",
        "--",
        host,
        command,
    ]


#: How much of an SSH command's stderr is kept (its last line is shown).
_STDERR_KEPT = 64 * 1024


def _ssh(host: str, command: str, timeout: int, limit_mib: int) -> subprocess.CompletedProcess[str]:
    """Run ``command`` on ``host``; its stdout read no further than ``limit_mib`` MiB (the
    command is stopped beyond it), text checked by the one decoder."""
    from fabric.parsers.text import MIB, InputError, decode

    try:
        proc = subprocess.Popen(  # noqa: S603 - a fixed argv, no shell
            ssh_argv(host, command), stdout=subprocess.PIPE, stderr=subprocess.PIPE
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


def _remote(host: str, timeout: int, limit_mib: int) -> tuple[str, str | None]:
    """(ibnetdiscover output, sminfo output or None) from ``host``."""
    run = _ssh(host, "ibnetdiscover", timeout, limit_mib)
    if run.returncode != 0 or not run.stdout.strip():
        last = (run.stderr.strip().splitlines() or ["no output"])[-1]
        raise CommandError(
            f"--ssh {host}: ibnetdiscover failed (exit {run.returncode}): {last}; check the "
            "host key (ssh-keyscan, known_hosts), the login and infiniband-diags there"
        )
    sm = _ssh(host, "sminfo", timeout, limit_mib)
    return run.stdout, sm.stdout if sm.returncode == 0 else None


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
    limit_mib = args.max_mb or DEFAULT_LIMIT_MIB
    if args.ssh:
        text, sm_text = _remote(args.ssh, args.timeout, limit_mib)
        try:
            sm = parse_sminfo(sm_text) if sm_text else None
        except ParseError as err:  # no SM answer is a placeholder, not a failed import
            note(f"sminfo on {args.ssh}: {err}")
        where = f"{args.ssh}: ibnetdiscover"
    else:
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
        imported = import_fabric(graph, args.name, sm)
    except CaptureError as err:
        raise CommandError(f"{where}: {err}") from None
    if args.output:
        try:
            with open(args.output, "w", encoding="utf-8") as out:
                out.write(imported.text)
        except OSError as err:
            raise CommandError(f"--output {args.output}: {err.strerror or err}") from err
    else:
        emit(imported.text.rstrip("\n"))
    for text in imported.notes:
        note(text)
    return Exit.OK
