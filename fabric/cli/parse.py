"""``railyard parse TOOL FILE``: print a tool output file as JSON (``--json``: an error
as JSON too)."""

from __future__ import annotations

import argparse

from fabric.cli.errors import Exit, emit_json, positive_mib, read_input
from fabric.cli.options import add_json
from fabric.gcpause import gc_paused


class _ToolsFormatter(argparse.HelpFormatter):
    """Fills ``{tools}`` in the description with the registered parsers, only when the help
    is shown: listing them imports every parser (pydantic), which ``--help`` must not pay."""

    def add_text(self, text: str | None) -> None:
        if text and "{tools}" in text:
            from fabric.parsers import PARSERS
            from fabric.parsers.text import DEFAULT_LIMIT_MIB

            text = text.replace("{tools}", ", ".join(sorted(PARSERS)))
            text = text.replace("{max_mb}", str(DEFAULT_LIMIT_MIB))
        super().add_text(text)


def register(subparsers: argparse._SubParsersAction) -> None:
    """Register the ``parse`` subcommand."""
    parser = subparsers.add_parser(
        "parse",
        help="parse captured RDMA tool output into JSON",
        description="Parse a tool's output and print it as JSON. Tools: {tools}. Exit 0 (also when "
        'the output is the tool\'s own failure or was cut short: "ok": false with the reason, '
        "the records before it kept), or 2 when TOOL is unknown, FILE cannot be read, is binary, "
        "not UTF-8, larger than --max-mb (default {max_mb} MiB) or not that tool's output.",
        formatter_class=_ToolsFormatter,
    )
    parser.add_argument("tool", metavar="TOOL", help="tool name, e.g. ibstat")
    parser.add_argument("file", metavar="FILE", help="file holding the output ('-' for stdin)")
    parser.add_argument(
        "--max-mb",
        type=positive_mib,
        default=None,
        metavar="N",
        help="refuse input larger than N MiB before reading further (default in the description)",
    )
    add_json(parser, "the result is JSON already; an error is printed as JSON on stdout too")
    parser.set_defaults(func=cmd_parse)


def cmd_parse(args: argparse.Namespace) -> int:
    """Parse ``args.file`` as ``args.tool`` output; print JSON. An unknown tool, input that is
    binary, not UTF-8 or over the cap, or text that is not the tool's output (ParseError,
    naming the line) is bad input: exit 2 (via main). Output cut mid-line keeps what parsed,
    with ``ok: false`` (a graph, which has no ``ok``: exit 2)."""
    from fabric.parsers import PARSERS, UnknownToolError, parse
    from fabric.parsers.common import cut_short
    from fabric.parsers.text import DEFAULT_LIMIT_MIB

    if args.tool not in PARSERS:
        raise UnknownToolError(args.tool)
    source = read_input(
        args.file,
        "pass a file holding the tool's output, or '-' for stdin",
        args.max_mb or DEFAULT_LIMIT_MIB,
        "--max-mb N",
    )
    with gc_paused():
        result = parse(args.tool, source.text)
        if not source.complete:
            result = cut_short(args.tool, result, source.last_line)
        doc = result.model_dump(mode="json")
    emit_json(doc)
    return Exit.OK
