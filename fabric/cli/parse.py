"""``python -m fabric parse TOOL FILE``: print a tool output file as JSON."""

from __future__ import annotations

import argparse
import sys

from fabric.cli.errors import Exit, read_input


class _ToolsFormatter(argparse.HelpFormatter):
    """Fills ``{tools}`` in the description with the registered parsers, only when the help
    is shown: listing them imports every parser (pydantic), which ``--help`` must not pay."""

    def add_text(self, text: str | None) -> None:
        if text and "{tools}" in text:
            from fabric.parsers import PARSERS

            text = text.replace("{tools}", ", ".join(sorted(PARSERS)))
        super().add_text(text)


def register(subparsers: argparse._SubParsersAction) -> None:
    """Register the ``parse`` subcommand."""
    parser = subparsers.add_parser(
        "parse",
        help="parse captured RDMA tool output into JSON",
        description="Parse a tool's output and print it as JSON. Tools: {tools}. Exit 0 (also when "
        'the output is the tool\'s own failure: "ok": false), or 2 when TOOL is unknown, FILE '
        "cannot be read or is not that tool's output.",
        formatter_class=_ToolsFormatter,
    )
    parser.add_argument("tool", metavar="TOOL", help="tool name, e.g. ibstat")
    parser.add_argument("file", metavar="FILE", help="file holding the output ('-' for stdin)")
    parser.set_defaults(func=cmd_parse)


def cmd_parse(args: argparse.Namespace) -> int:
    """Parse ``args.file`` as ``args.tool`` output; print JSON. An unknown tool or text that
    is not the tool's output (ParseError, naming the line) is bad input: exit 2 (via main)."""
    import json

    from fabric.parsers import PARSERS, UnknownToolError, parse

    if args.tool not in PARSERS:
        raise UnknownToolError(args.tool)
    text = read_input(args.file, "pass a file holding the tool's output, or '-' for stdin")
    model = parse(args.tool, text)
    json.dump(model.model_dump(mode="json"), sys.stdout, indent=2)
    sys.stdout.write("\n")
    return Exit.OK
