"""Command-line interface: ``railyard <command>`` (or ``python -m fabric <command>``).

Each subcommand lives in its own module exposing ``register(subparsers)``. Its handler is
named ``cmd_<command>`` (``cmd_validate``, ``cmd_lab_status`` for ``lab status``), is stored
as the parser default ``func``, takes the parsed ``argparse.Namespace`` and returns an
``Exit`` code (``fabric.cli.errors``): ``OK`` (0), or ``FAILED`` (1) when the thing checked
is wrong. When it cannot do its job it raises ``CommandError`` (or lets one of the
project's own errors propagate); :func:`main` reports it as one line through
``errors.fail`` with exit code 2 (or JSON on stdout under ``--json``), never a traceback.

Command modules import only the standard library at module level: pydantic models,
pulumi, ansible_runner and rich are imported inside the handlers, so that ``--help``
stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from fabric.cli.errors import (
    EXIT_CODES_HELP,
    PROG,
    CommandError,
    Exit,
    StdoutError,
    UsageError,
    describe,
    fail,
    finish_stdout,
    guard_stdout,
)

#: The module that registers each command, in the order they appear in ``--help``:
#: ``railyard COMMAND ...`` imports only that one (a command does not pay for the
#: others' imports at start-up); ``--help``, a misspelt command or an unknown one gets them all.
#: A test checks this against what each registers. The one list of commands.
COMMANDS = {
    "validate": "fabric.cli.validate",
    "schema": "fabric.cli.validate",
    "topology": "fabric.cli.topology",
    "kubernetes": "fabric.cli.kubernetes",
    "parse": "fabric.cli.parse",
    "lab": "fabric.cli.lab",
    "run": "fabric.cli.run",
    "check": "fabric.cli.check",
    "import": "fabric.cli.import_",
    "watch": "fabric.cli.watch",
}

#: Subcommand modules, in the order they appear in ``--help`` (from ``COMMANDS``).
COMMAND_MODULES = tuple(dict.fromkeys(COMMANDS.values()))


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose usage errors become a UsageError (exit 2) for ``main``."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(self.prog, message)


def build_parser(modules: Sequence[str] = COMMAND_MODULES) -> argparse.ArgumentParser:
    """Return the top-level parser with the subcommands of ``modules`` (all by default)."""
    parser = Parser(
        prog=PROG,
        description="railyard: declare a GPU cluster's RDMA fabric, provision it, verify it.",
        epilog=EXIT_CODES_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in modules:
        importlib.import_module(name).register(subparsers)
    return parser


def command_prog(args: argparse.Namespace) -> str:
    """``railyard lab status`` for the handler ``cmd_lab_status``."""
    name = getattr(getattr(args, "func", None), "__name__", "")
    return (
        f"{PROG} {name.removeprefix('cmd_').replace('_', ' ')}".rstrip()
        if name.startswith("cmd_")
        else PROG
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` and run the chosen subcommand; return its exit code.

    Every error the project knows (``errors.describe``) and Ctrl-C (130) is reported as one
    line (or JSON under ``--json``); anything else is a bug and keeps its traceback.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    json_mode = "--json" in argv
    prog = PROG
    stdout = guard_stdout()  # a closed or full stdout: StdoutError, exit 2
    try:
        module = COMMANDS.get(argv[0]) if argv else None
        args = build_parser(COMMAND_MODULES if module is None else (module,)).parse_args(argv)
        json_mode = bool(getattr(args, "json", False))
        prog = command_prog(args)
        code = int(args.func(args) or Exit.OK)
        finish_stdout(stdout)
        return code
    except (Exception, KeyboardInterrupt) as exc:  # noqa: BLE001 - re-raised unless the project's own
        finish_stdout(stdout, quietly=True)
        error = describe(exc)
        if error is None:
            raise
        if isinstance(error, UsageError):
            prog = error.prog
        json_mode = json_mode and not isinstance(error, StdoutError)  # no stdout: on stderr
        return fail(
            error.message, error.code, json_mode=json_mode, prog=prog, problems=error.problems
        )


__all__ = ["COMMANDS", "COMMAND_MODULES", "PROG", "CommandError", "Exit", "build_parser", "main"]
