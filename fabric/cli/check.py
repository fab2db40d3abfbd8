"""``python -m fabric check --stack STACK``: run the check suite and write its reports."""

from __future__ import annotations

import argparse
from pathlib import Path

from fabric.cli.errors import Exit, stack_name


def register(subparsers: argparse._SubParsersAction) -> None:
    """Register ``check``."""
    parser = subparsers.add_parser(
        "check",
        help="verify a stack's fabric: run the check suite on its hosts, write JUnit/Markdown/graph reports",
        description="Run the testinfra check suite against state/<stack>/inventory.yml. Exit 0 when "
        "every check passes, 1 when one fails, 2 when the stack has no inventory or its spec has problems.",
    )
    parser.add_argument(
        "--stack",
        required=True,
        type=stack_name,
        help="stack name (state/<stack>/inventory.yml, Pulumi.<stack>.yaml)",
    )
    parser.add_argument(
        "--junit", type=Path, help="JUnit XML file (default: <report dir>/checks.xml)"
    )
    parser.add_argument("--limit", help="comma-separated hosts or inventory groups to check")
    parser.add_argument(
        "--report-dir", type=Path, help="reports directory (default: state/<stack>/reports)"
    )
    parser.add_argument(
        "--spec", type=Path, help="spec or stack file (default: Pulumi.<stack>.yaml)"
    )
    parser.add_argument(
        "-n", "--workers", type=int, default=2, help="parallel pytest-xdist workers (default 2)"
    )
    parser.add_argument(
        "--json", action="store_true", help="print the results as JSON instead of tables"
    )
    parser.set_defaults(func=cmd_check)


def cmd_check(args: argparse.Namespace) -> int:
    """Run the checks and print the results; a missing inventory or a bad spec (ContextError,
    SpecError) is bad input, found before the suite runs: exit 2 (via main)."""
    import json

    from fabric.verify import context
    from fabric.verify.runner import run_checks

    inventory = context.inventory_path(args.stack)
    context.load_inventory(inventory)
    context.load_cluster_spec(args.spec or context.spec_path_for(inventory))
    outcome = run_checks(
        args.stack,
        junit=args.junit,
        limit=args.limit,
        report_dir=args.report_dir,
        spec=args.spec,
        workers=args.workers,
    )
    if args.json:
        print(json.dumps(outcome.model_dump(), indent=2))
    else:
        from fabric.verify.report import terminal_table

        terminal_table(outcome.results, outcome.not_generated)
        print(outcome.summary())
        print("reports: " + ", ".join(outcome.files))
    return Exit.OK if outcome.ok else Exit.FAILED
