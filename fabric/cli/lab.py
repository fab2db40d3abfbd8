"""``railyard lab ...``: the one-machine lab (node image, status); ``--json`` on both."""

from __future__ import annotations

import argparse

from fabric.cli.errors import CommandError, Exit, emit_json, require_stack
from fabric.cli.options import add_json, add_stack


def cmd_lab_image(args: argparse.Namespace) -> int:
    """Build the node image when missing and print its tag; an ImageError exits 1 (via main)."""
    from fabric.lab.image import ensure_image

    tag = ensure_image()
    if args.json:
        emit_json({"image": tag})
    else:
        print(tag)
    return Exit.OK


def cmd_lab_status(args: argparse.Namespace) -> int:
    """Print each node's state; exit 1 when a node is unhealthy or a known stack's lab is not
    up, 2 for a stack this checkout does not know."""
    from fabric.lab.status import lab_status
    from fabric.state import StateLayout

    require_stack(args.stack)
    state = StateLayout(args.stack).dir
    try:
        status = lab_status(state)
    except FileNotFoundError as exc:  # no lab state: the lab is not up, so not healthy
        raise CommandError(f"{exc}; or pass --stack NAME", Exit.FAILED) from exc
    except (OSError, ValueError, KeyError) as exc:  # state there but unreadable: bad input
        raise CommandError(
            f"cannot read the lab's state in {state}: {exc}; bring the lab up again (make up)"
        ) from exc
    if args.json:
        print(status.model_dump_json(indent=1, exclude={"nodes": {"__all__": {"error"}}}))
    else:
        from rich.console import Console
        from rich.table import Table

        table = Table(title=f"lab {args.stack}")
        for col in ("node", "running", "ssh", "power", "ports", "note"):
            table.add_column(col)
        for n in status.nodes:
            ports = ", ".join(
                f"{p.device}/{p.port} {p.state} {p.physical_state} {p.rate_gbps:g}G"
                for p in n.ports
            )
            table.add_row(
                n.name,
                "yes" if n.running else "no",
                "yes" if n.ssh else "no",
                n.power or "?",
                ports or "-",
                n.error or "",
            )
        Console().print(table)
    healthy = all(n.running and n.ssh and n.power == "On" for n in status.nodes)
    return Exit.OK if healthy else Exit.FAILED


def register(subparsers: argparse._SubParsersAction) -> None:
    """Register ``lab image`` and ``lab status``."""
    lab = subparsers.add_parser("lab", help="the one-machine lab: node image, status")
    sub = lab.add_subparsers(dest="lab_command", metavar="LAB_COMMAND", required=True)
    image = sub.add_parser("image", help="build the node image when missing and print its tag")
    add_json(image, 'print {"image": TAG} as one JSON document; an error too')
    image.set_defaults(func=cmd_lab_image)
    status = sub.add_parser(
        "status",
        help="per node: container, SSH, BMC power, HCA ports",
        description="Exit 0 when every node runs, answers SSH and is powered on; "
        "1 when one does not, or the lab is not up; 2 for a stack this checkout does not know.",
    )
    add_stack(status)
    add_json(status, "print the status as one JSON document instead of a table")
    status.set_defaults(func=cmd_lab_status)
