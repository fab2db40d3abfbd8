"""``railyard check [--stack NAME] [--spec FILE]``: run the check suite and write its
reports. ``railyard check --plan [--spec FILE | --stack NAME]``: list what it would
check, touching no host. ``--json``: one JSON document of the results (or the plan). With
``--limit`` the checks the limit left out are listed (``left_out``), not passed over.
``--mark-nodes``: then set or lift each checked node's fabric taint and condition on the
spec's Kubernetes API server (``fabric.cli.kube_marks``); a call the server refuses or that
fails is exit 3 (``Exit.NOT_MARKED``), after the results."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fabric.cli.errors import CommandError, Exit, check_readable, emit, emit_bytes, whole_number
from fabric.cli.options import add_json, add_retired, add_spec, add_stack, spec_path

if TYPE_CHECKING:
    from fabric.spec import ClusterSpec


def register(subparsers: argparse._SubParsersAction) -> None:
    """Register ``check``."""
    parser = subparsers.add_parser(
        "check",
        help="verify a stack's fabric: run the check suite on its hosts, write JUnit/Markdown/graph reports",
        description="Run the testinfra check suite against state/<stack>/inventory.yml. Exit 0 when "
        "every check passes, 1 when one fails, 2 when the stack has no inventory or its spec has problems.",
    )
    add_stack(parser)
    add_spec(parser)
    parser.add_argument(
        "--plan",
        action="store_true",
        help="print the checks that would run for the spec, each with its parameters, or why a "
        "family is not generated; touches no host",
    )
    add_retired(parser, "check")
    parser.add_argument(
        "--junit", type=Path, help="JUnit XML file (default: <report dir>/checks.xml)"
    )
    parser.add_argument("--limit", help="comma-separated hosts or inventory groups to check")
    parser.add_argument(
        "--report-dir", type=Path, help="reports directory (default: state/<stack>/reports)"
    )
    parser.add_argument(
        "-n",
        "--workers",
        type=_workers,
        metavar="N",
        help="parallel pytest-xdist workers, 1 to 64 (default: one per 4 hosts checked, at "
        "least 2, at most 4 per core and 64)",
    )
    parser.add_argument(
        "--mark-nodes",
        action="store_true",
        help="after the checks, taint each checked Kubernetes node a check failed on "
        "(railyard.dev/fabric-unhealthy:NoSchedule and the RailyardFabricHealthy condition) "
        "and lift the taint from the others, keeping other taints; the spec's "
        "kubernetes.api_server, the token from RAILYARD_KUBE_TOKEN, the CA (PEM) from "
        "RAILYARD_KUBE_CA, else the stack's Pulumi config secrets the spec names; exit 3 when "
        "an API server call fails",
    )
    add_json(parser, "print the results (or the plan) as one JSON document instead of tables")
    parser.set_defaults(func=cmd_check)


def _workers(text: str) -> int:
    """An argparse ``type`` for ``-n``: 1 to 64 workers (each a Python process of ~80 MiB:
    ``fabric.verify.runner.MAX_WORKERS``)."""
    return whole_number(text, 1, 64, "workers", "each worker is a process of ~80 MiB")


def cmd_check(args: argparse.Namespace) -> int:
    """Run the checks and print the results; a missing inventory or a bad spec (ContextError,
    SpecError) is bad input, found before the suite runs: exit 2 (via main)."""
    import json

    if args.plan and args.mark_nodes:
        raise CommandError(
            "--mark-nodes marks the nodes from a check run, and --plan runs no check; pass "
            "one of them"
        )
    if args.plan:
        return cmd_check_plan(spec_path(args, only_one=True), as_json=args.json)
    from fabric.verify import context
    from fabric.verify.runner import run_checks

    spec = spec_path(args)
    inventory = context.inventory_path(args.stack)
    inventory_doc = context.load_inventory(inventory)
    cluster = context.load_cluster_spec(spec)
    where = None
    suite_env: dict[str, str] = {}
    if args.mark_nodes:  # what marking needs, found before any check runs
        from fabric.cli import kube_marks

        where = kube_marks.target(cluster, args.stack, spec)
        suite_env = kube_marks.suite_env(where)
    checked = context.select_hosts(args.limit, inventory_doc)
    dropped = left_out(cluster, inventory_doc, args.limit) if args.limit else {}
    outcome = run_checks(
        args.stack,
        junit=args.junit,
        limit=args.limit,
        report_dir=args.report_dir,
        spec=args.spec,
        workers=args.workers,
        env=suite_env,
    )
    if dropped:
        from fabric.verify.report import add_left_out

        add_left_out(Path(outcome.report_dir) / "report.md", dropped)
    marked: dict[str, Any] = {}
    mark_lines: list[str] = []
    not_marked = None
    if where is not None:
        from fabric.cli import kube_marks

        if outcome.results:
            marks, not_marked = kube_marks.mark(where, outcome.results, checked)
            mark_lines = [m.line() for m in marks]
        else:
            marks, mark_lines = [], ["kubernetes: the check suite did not run: no node marked"]
        marked = {"kubernetes": kube_marks.report(where, marks, not_marked)}
    if args.json:
        limited = {"left_out": dropped} if args.limit else {}
        emit(json.dumps({**outcome.model_dump(), **limited, **marked}, indent=2))
        if not_marked is not None:
            return Exit.NOT_MARKED
    else:
        from fabric.verify.report import terminal_table

        terminal_table(outcome.results, outcome.not_generated, causes=outcome.causes)
        lines = [f"left out: {family}: {why}" for family, why in dropped.items()]
        emit(
            "\n".join(
                [*lines, outcome.summary(), "reports: " + ", ".join(outcome.files), *mark_lines]
            )
        )
        if not_marked is not None:
            raise CommandError(
                f"--mark-nodes: {not_marked}; the marks listed above were made, the rest "
                "not: check the API server, the token in RAILYARD_KUBE_TOKEN (it must patch "
                "nodes and nodes/status) and the CA in RAILYARD_KUBE_CA, then run again",
                Exit.NOT_MARKED,
            )
    return Exit.OK if outcome.ok else Exit.FAILED


def left_out(spec: ClusterSpec, inventory: dict[str, Any], limit: str) -> dict[str, str]:
    """Check family -> what ``--limit`` left out of it and why: the parameters the whole
    inventory gives it that the selected hosts do not (a pair, an SM or a Slurm controller
    outside the limit). Families that run in full, or not at all either way, are absent."""
    from fabric.verify import context
    from fabric.verify.plan import CheckPlan, describe

    groups = context.inventory_groups(inventory)
    every = context.select_hosts(None, inventory)
    selected = context.select_hosts(limit, inventory)
    whole = describe(CheckPlan(spec=spec, hosts=every, groups=groups))
    limited = describe(CheckPlan(spec=spec, hosts=selected, groups=groups))
    out = {}
    for family, entry in whole.items():
        had = len(entry.get("parameters", []))  # type: ignore[arg-type]
        kept = len(limited[family].get("parameters", []))  # type: ignore[arg-type]
        if kept >= had:
            continue
        checks = ", ".join(entry["checks"])  # type: ignore[arg-type]
        outside = f"need hosts outside --limit {limit}"
        out[family] = (
            f"not checked: {checks} (its {had} parameters {outside})"
            if not kept
            else f"checked in part: {checks} ({had - kept} of its {had} parameters {outside})"
        )
    return out


def cmd_check_plan(path: Path, *, as_json: bool) -> int:
    """Print the check plan of a spec or stack file: every family's checks and parameters over
    every declared host, or the reason it is not generated. A bad spec exits 2 (via main)."""
    import json

    from fabric.gcpause import gc_paused
    from fabric.redact import redact_doc
    from fabric.spec import load_spec
    from fabric.verify.plan import CheckPlan, describe

    check_readable(path, "give a spec YAML or a Pulumi.<stack>.yaml stack file")
    with gc_paused():  # millions of objects, no cycles: 2.3 of 16 CPU s at 16,384 hosts
        spec = load_spec(path)  # any readable file, a device too: read up to the size cap
        plan = CheckPlan(spec=spec, hosts=list(spec.hosts))
        families = redact_doc(describe(plan, plain=not as_json))
        if as_json:
            emit_bytes(plan_json({"spec": str(path), "families": families}))
            return Exit.OK
    lines = []
    for family, entry in families.items():
        if "not_generated" in entry:
            lines.append(f"{family}: not generated: {entry['not_generated']}")
            continue
        checks = ", ".join(entry["checks"])  # type: ignore[arg-type]
        params = entry["parameters"]
        lines.append(f"{family}: {checks} over {len(params)} parameter(s)")  # type: ignore[arg-type]
        lines += [f"  {json.dumps(v, sort_keys=True)}" for v in params]  # type: ignore[attr-defined]
    emit("\n".join(lines))
    return Exit.OK


def plan_json(doc: dict[str, Any]) -> bytes:
    """The plan as one line of JSON. orjson writes its records (dataclasses) as objects of
    their fields, in C: a 16,384-host plan (87 MB) in 0.2 s, where json's encoder took 1.5 s
    after the records were made mappings. A number orjson cannot hold (over 64 bits) is
    left to json."""
    import orjson

    try:
        return orjson.dumps(doc)
    except orjson.JSONEncodeError:
        import json

        from fabric.verify.plan import jsonable

        return json.dumps(doc, default=jsonable).encode()
