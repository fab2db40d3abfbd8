"""Command-line interface: ``python -m fabric <command>``.

Each subcommand lives in its own module exposing ``register(subparsers)``; the
module's handler is stored as the parser default ``func`` and returns an exit code.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

#: Subcommand modules, in the order they appear in ``--help``.
COMMAND_MODULES = (
    "fabric.cli.validate",  # validate, schema
    "fabric.cli.topology",  # topology
    "fabric.cli.parse",  # parse
    "fabric.cli.lab",  # lab status, lab ...
    "fabric.cli.run",  # run PLAYBOOK
    "fabric.cli.check",  # check --stack
)


def build_parser() -> argparse.ArgumentParser:
    """Return the top-level parser with every subcommand registered."""
    parser = argparse.ArgumentParser(
        prog="python -m fabric",
        description="railyard: declare a GPU cluster's RDMA fabric, provision it, verify it.",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` and run the chosen subcommand; return its exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return 2
    return int(args.func(args) or 0)
