"""``python -m fabric check --stack STACK``: run the check suite and write its reports."""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    """Register ``check``."""
    parser = subparsers.add_parser(
        "check",
        help="verify a stack's fabric: run the check suite on its hosts, write JUnit/Markdown/graph reports",
        description="Run the testinfra check suite against state/<stack>/inventory.yml; exit 1 when any check fails.",
    )
    parser.add_argument("--stack", required=True, help="stack name (state/<stack>/inventory.yml, Pulumi.<stack>.yaml)")
    parser.add_argument("--junit", type=Path, help="JUnit XML file (default: <report dir>/checks.xml)")
    parser.add_argument("--limit", help="comma-separated hosts or inventory groups to check")
    parser.add_argument("--report-dir", type=Path, help="reports directory (default: state/<stack>/reports)")
    parser.add_argument("--spec", type=Path, help="spec or stack file (default: Pulumi.<stack>.yaml)")
    parser.add_argument("-n", "--workers", type=int, default=2, help="parallel pytest-xdist workers (default 2)")
    parser.add_argument("--json", action="store_true", help="print the results as JSON instead of tables")
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from fabric.verify.context import ContextError
    from fabric.verify.runner import run_checks

    try:
        outcome = run_checks(args.stack, junit=args.junit, limit=args.limit, report_dir=args.report_dir,
                             spec=args.spec, workers=args.workers)
    except ContextError as err:
        print(f"check: {err}")
        return 2
    if args.json:
        print(json.dumps(outcome.model_dump(), indent=2))
    else:
        from fabric.verify.report import terminal_table

        terminal_table(outcome.results, outcome.not_generated)
        print(outcome.summary())
        print("reports: " + ", ".join(outcome.files))
    return 0 if outcome.ok else 1
