"""``python -m fabric parse TOOL FILE``: print a tool output file as JSON."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from fabric.parsers import PARSERS, ParseError, UnknownToolError, parse


def register(subparsers: argparse._SubParsersAction) -> None:
    """Register the ``parse`` subcommand."""
    parser = subparsers.add_parser(
        "parse",
        help="parse captured RDMA tool output into JSON",
        description=f"Parse a tool's output. Tools: {', '.join(sorted(PARSERS))}.",
    )
    parser.add_argument("tool", metavar="TOOL", help="tool name, e.g. ibstat")
    parser.add_argument("file", metavar="FILE", help="file holding the output ('-' for stdin)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Parse ``args.file`` as ``args.tool`` output; print JSON; return the exit code."""
    if args.tool not in PARSERS:
        print(f"parse: {UnknownToolError(args.tool)}", file=sys.stderr)
        return 2
    try:
        text = sys.stdin.read() if args.file == "-" else Path(args.file).read_text()
    except OSError as err:
        print(f"parse: cannot read {args.file}: {err.strerror}", file=sys.stderr)
        return 2
    try:
        model = parse(args.tool, text)
    except ParseError as err:
        print(f"parse error: {err}", file=sys.stderr)
        return 1
    print(json.dumps(model.model_dump(mode="json"), indent=2))
    return 0
