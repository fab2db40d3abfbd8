"""How every command names a spec or a stack: ``--spec FILE`` and ``--stack NAME``.

The same names, help and default everywhere: ``--stack`` defaults to ``lab``
(``fabric.state.DEFAULT_STACK``, the Makefile's ``STACK``), and ``--spec`` to the stack's file,
``Pulumi.<stack>.yaml`` (``fabric.state.stack_file``). Older spellings a command still takes
for compatibility (``validate SPEC``, ``topology --from-spec``, ``check --plan SPEC``) are
hidden from ``--help``. ``fabric.state`` is imported when a stack is named, so that the
topology path, which names none, loads no dataclasses.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from fabric.cli.errors import CommandError, require_stack, stack_name

SPEC_HELP = "cluster spec YAML or Pulumi.<stack>.yaml stack file (default: the stack's)"


def add_stack(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """``--stack NAME``, default ``lab``."""
    from fabric.state import DEFAULT_STACK

    parser.add_argument(
        "--stack",
        type=stack_name,
        default=DEFAULT_STACK,
        metavar="NAME",
        help=f"stack name: state/<stack>/, Pulumi.<stack>.yaml (default {DEFAULT_STACK})",
    )


def add_spec(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup, help: str = SPEC_HELP
) -> None:
    """``--spec FILE``."""
    parser.add_argument("--spec", type=Path, metavar="FILE", help=help)


def add_legacy_spec(parser: argparse.ArgumentParser | argparse._ArgumentGroup, *flags: str) -> None:
    """An older way to give the spec (a positional, or ``flags``), kept for compatibility and
    hidden from ``--help``; :func:`given_spec` and :func:`spec_path` read it."""
    if flags:
        parser.add_argument(*flags, dest="legacy_spec", type=Path, help=argparse.SUPPRESS)
    else:
        parser.add_argument("legacy_spec", nargs="?", type=Path, help=argparse.SUPPRESS)


def given_spec(args: argparse.Namespace) -> Path | None:
    """The spec file the command line names (``--spec``, or an older spelling), or None."""
    legacy = getattr(args, "legacy_spec", None)
    if legacy is not None and args.spec is not None:
        raise CommandError(f"the spec is given twice ({legacy} and {args.spec}); give --spec once")
    return args.spec if args.spec is not None else legacy


def spec_path(args: argparse.Namespace) -> Path:
    """The spec file: the one named, else ``Pulumi.<stack>.yaml`` of a stack this checkout
    knows (an unknown stack is bad usage, exit 2)."""
    from fabric.state import stack_file

    given = given_spec(args)
    if given is not None:
        return Path(given)
    require_stack(args.stack)
    return stack_file(args.stack)
