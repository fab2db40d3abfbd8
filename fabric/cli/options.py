"""How every command names a cluster, and asks for JSON: ``--spec FILE``, ``--stack NAME``,
``--json``.

The same names, help and default everywhere: ``--stack`` defaults to ``lab``
(``fabric.state.DEFAULT_STACK``, the Makefile's ``STACK``), and ``--spec`` to the stack's file,
``Pulumi.<stack>.yaml`` (``fabric.state.stack_file``). The older spellings are gone: each is
listed once in :data:`RETIRED`, still parsed (hidden from ``--help``) only to fail with one
line naming the new flag (exit 2). ``fabric.state`` is imported only where a stack has a
default or is named, so that the topology path loads no dataclasses.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, NamedTuple

from fabric.cli.errors import CommandError, RetiredSpelling, require_stack, stack_name

SPEC_HELP = "cluster spec YAML or Pulumi.<stack>.yaml stack file (default: the stack's)"
JSON_HELP = "print the result as one JSON document on stdout (an error too)"

_Parser = argparse.ArgumentParser | argparse._ArgumentGroup


class Retired(NamedTuple):
    """An older way to name the spec: ``spelling`` (an option, or ``SPEC`` for a bare file
    argument) of ``command``, now ``use``."""

    command: str
    spelling: str
    use: str = "--spec FILE"

    def message(self, value: str | None) -> str:
        """The one error line: what is gone and the flag to use instead."""
        if self.spelling.startswith("-"):
            return f"{self.spelling}: this option is gone; use {self.use}"
        named = value if value else "FILE"
        return (
            f"{self.command} {self.spelling}: a spec named without --spec is gone; use "
            f"{self.use.replace('FILE', named)}"
        )


#: Every retired spelling, in one place: ``add_retired`` adds a command's (hidden from --help).
RETIRED: tuple[Retired, ...] = (
    Retired("validate", "SPEC"),  # validate SPEC
    Retired("topology", "--from-spec"),  # topology --from-spec SPEC
    Retired("check", "SPEC"),  # check --plan SPEC
)


class _RetiredAction(argparse.Action):
    """Fails as soon as the retired spelling is parsed (an absent bare argument passes)."""

    def __init__(self, *args: Any, retired: Retired, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.retired = retired

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        if option_string is None and values is None:  # the bare argument, not given
            return
        raise RetiredSpelling(parser.prog, self.retired.message(values))


def add_retired(parser: argparse.ArgumentParser, command: str) -> None:
    """Add ``command``'s retired spellings (:data:`RETIRED`), hidden from ``--help``."""
    for entry in RETIRED:
        if entry.command != command:
            continue
        if entry.spelling.startswith("-"):
            parser.add_argument(
                entry.spelling,
                dest=f"retired_{entry.spelling.strip('-').replace('-', '_')}",
                nargs="?",
                action=_RetiredAction,
                retired=entry,
                help=argparse.SUPPRESS,
            )
        else:
            parser.add_argument(
                "retired_spec",
                nargs="?",
                action=_RetiredAction,
                retired=entry,
                help=argparse.SUPPRESS,
            )


def add_stack(parser: _Parser, *, default: bool = True) -> None:
    """``--stack NAME``, default ``lab`` (``default=False``: none, where it is one of several
    sources and must be named)."""
    help = "stack name: state/<stack>/, Pulumi.<stack>.yaml"
    stack = None
    if default:
        from fabric.state import DEFAULT_STACK

        stack, help = DEFAULT_STACK, f"{help} (default {DEFAULT_STACK})"
    parser.add_argument(
        "--stack",
        type=stack_name,
        default=stack,
        metavar="NAME",
        help=help,
        action=_StackAction,
    )


class _StackAction(argparse.Action):
    """Stores ``--stack`` and notes that it was given (``stack_given``), so a command whose
    stack only names the spec can refuse ``--spec`` beside it (:func:`spec_path`)."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        setattr(namespace, self.dest, values)
        namespace.stack_given = True


def add_spec(parser: _Parser, help: str = SPEC_HELP) -> None:
    """``--spec FILE``."""
    parser.add_argument("--spec", type=Path, metavar="FILE", help=help)


def add_json(parser: argparse.ArgumentParser, help: str = JSON_HELP) -> None:
    """``--json``: one JSON document on stdout, the result or ``fabric.cli.errors.fail``'s."""
    parser.add_argument("--json", action="store_true", help=help)


def given_spec(args: argparse.Namespace) -> Path | None:
    """The spec file the command line names with ``--spec``, or None."""
    return getattr(args, "spec", None)


def spec_path(args: argparse.Namespace, *, only_one: bool = False) -> Path:
    """The spec file: the one named, else ``Pulumi.<stack>.yaml`` of a stack this checkout
    knows (an unknown stack is bad usage, exit 2). ``only_one``: the command's stack names
    nothing but the spec, so ``--spec`` with ``--stack`` is bad usage (exit 2), not a silent
    choice of one."""
    from fabric.state import DEFAULT_STACK, stack_file

    given = given_spec(args)
    if given is not None and only_one and getattr(args, "stack_given", False):
        raise CommandError(
            "--spec FILE and --stack NAME both name the cluster; pass one of them (--stack "
            "reads Pulumi.<stack>.yaml)"
        )
    if given is not None:
        return Path(given)
    stack = getattr(args, "stack", None) or DEFAULT_STACK
    require_stack(stack)
    return stack_file(stack)
