"""``railyard validate [--spec FILE | --stack NAME]`` and ``railyard schema``."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from fabric.cli.errors import CommandError, Exit, check_readable, emit_json
from fabric.cli.options import add_json, add_retired, add_spec, add_stack, spec_path

if TYPE_CHECKING:
    from fabric.spec import ClusterSpec

_VALIDATE_EPILOG = """\
--spec FILE is a plain spec YAML (the cluster mapping at the top level) or a Pulumi
stack file, whose cluster is read from config["railyard:cluster"]; without it, the
stack's file Pulumi.<stack>.yaml (--stack, default lab).

examples:
  railyard validate
  railyard validate --spec examples/roce-rail.yaml
  railyard validate --json --spec cluster.yaml | jq .problems

exit status: 0 when the spec is valid, 1 when it has problems (each printed on
stdout as "path: message", all of them at once: field errors and cross-field rules
together), 2 when the spec cannot be read.
"""

_SCHEMA_EPILOG = """\
examples:
  railyard schema > cluster.schema.json
  railyard schema --output cluster.schema.json

Point your editor's YAML language server at the file to get completion and
inline errors while writing a spec.
"""


def _plural(count: int, one: str, many: str | None = None) -> str:
    return f"{count} {one if count == 1 else (many or one + 's')}"


def summary(spec: ClusterSpec) -> str:
    """A one-line description of a valid spec, e.g. for ``validate`` output."""
    fabric = spec.fabric
    parts = [_plural(len(spec.hosts), "host")]
    words = [fabric.kind]
    if fabric.topology is not None:
        tree = fabric.topology
        if tree.rail_optimized:
            words.append("rail-optimized")
        leaves = _plural(tree.leaves, "leaf", "leaves")
        words.append(f"fat-tree {leaves}/{_plural(tree.spines, 'spine')}")
    types = sorted({g.instance_type for g in spec.nodes if g.instance_type and g.gpus})
    if types:  # a target whose nodes are machine types (a cloud's): name it and them
        words.append(f"on {spec.target} ({', '.join(types)})")
    parts.append(" ".join(words))
    if fabric.infiniband is not None:
        parts.append(_plural(len(fabric.infiniband.subnet_managers), "subnet manager"))
    if fabric.roce is not None:
        roce = fabric.roce
        parts.append(f"PFC priority {roce.pfc_priority}, RDMA DSCP {roce.rdma_dscp}")
    return f"{spec.name}: valid — {', '.join(parts)}"


def cmd_validate(args: argparse.Namespace) -> int:
    """Validate one spec file; print a summary or every problem (the result, on stdout)."""
    import json

    from fabric.spec import SpecError, load_spec

    path = spec_path(args, only_one=True)
    check_readable(path, "pass a spec YAML or Pulumi.<stack>.yaml")
    try:
        spec = load_spec(path)
    except SpecError as error:
        if args.json:
            problems = [{"path": path, "message": message} for path, message in error.problems]
            print(json.dumps({"valid": False, "problems": problems}, indent=2))
        else:
            print(f"{path}: {_plural(len(error.problems), 'problem')}")
            for path, message in error.problems:
                print(f"  {path}: {message}")
        return Exit.FAILED
    from fabric.redact import redact

    line = redact(summary(spec))  # validated values only; the filter all the same
    if args.json:
        print(json.dumps({"valid": True, "summary": line, "problems": []}, indent=2))
    else:
        print(line)
    return Exit.OK


def cmd_schema(args: argparse.Namespace) -> int:
    """Print (or write) the cluster spec's JSON Schema."""
    import json

    from fabric.spec import ClusterSpec

    text = json.dumps(ClusterSpec.model_json_schema(), indent=2) + "\n"
    if args.output is None:
        sys.stdout.write(text)  # JSON already, with or without --json
        return Exit.OK
    try:
        with open(args.output, "w", encoding="utf-8") as out:
            out.write(text)
    except OSError as err:  # a full disk or /dev/full: name the file
        raise CommandError(
            f"cannot access {args.output} (--output): {err.strerror or err}; pass a writable "
            "file on a disk with room, or leave --output out for stdout"
        ) from None
    if args.json:
        emit_json({"output": str(args.output)})
    else:
        print(f"wrote {args.output}")
    return Exit.OK


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``validate`` and ``schema`` subcommands."""
    validate = subparsers.add_parser(
        "validate",
        help="check a cluster spec and report every problem",
        description=(
            "Check a cluster spec: field types, ranges and keys, and the rules that span\n"
            "fields (unique hosts, switch port counts, MTU for the fabric kind, subnet\n"
            "managers, Slurm hosts, cloud instance types). Every problem is reported in one\n"
            "run, field errors first; a rule that reads a broken field is skipped."
        ),
        epilog=_VALIDATE_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_spec(validate)
    add_stack(validate)
    add_retired(validate, "validate")
    add_json(validate, "print the result as one JSON document (for CI and editors)")
    validate.set_defaults(func=cmd_validate)

    schema = subparsers.add_parser(
        "schema",
        help="print the cluster spec's JSON Schema",
        description="Print the JSON Schema of the cluster spec (fabric/spec.py).",
        epilog=_SCHEMA_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    schema.add_argument(
        "-o", "--output", metavar="FILE", help="write the schema to FILE instead of stdout"
    )
    add_json(
        schema,
        'the schema is JSON already; with --output, print {"output": FILE}, and an error as JSON',
    )
    schema.set_defaults(func=cmd_schema)
