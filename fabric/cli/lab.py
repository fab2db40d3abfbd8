"""``python -m fabric lab ...``: the one-machine lab (node image, status)."""

from __future__ import annotations

import argparse


def _image(args: argparse.Namespace) -> int:
    from fabric.lab.image import ImageError, ensure_image

    try:
        print(ensure_image())
    except ImageError as exc:
        print(f"error: {exc}")
        return 1
    return 0


def _status(args: argparse.Namespace) -> int:
    from fabric.components.lab import state_root
    from fabric.lab.status import lab_status

    try:
        status = lab_status(state_root() / args.stack)
    except FileNotFoundError as exc:
        print(f"error: {exc}")
        return 1
    if args.json:
        print(status.model_dump_json(indent=1, exclude={"nodes": {"__all__": {"error"}}}))
    else:
        from rich.console import Console
        from rich.table import Table

        table = Table(title=f"lab {args.stack}")
        for col in ("node", "running", "ssh", "power", "ports", "note"):
            table.add_column(col)
        for n in status.nodes:
            ports = ", ".join(f"{p.device}/{p.port} {p.state} {p.physical_state} {p.rate_gbps:g}G" for p in n.ports)
            table.add_row(n.name, "yes" if n.running else "no", "yes" if n.ssh else "no", n.power or "?",
                          ports or "-", n.error or "")
        Console().print(table)
    healthy = all(n.running and n.ssh and n.power == "On" for n in status.nodes)
    return 0 if healthy else 1


def register(subparsers: argparse._SubParsersAction) -> None:
    """Register ``lab image`` and ``lab status``."""
    lab = subparsers.add_parser("lab", help="the one-machine lab: node image, status")
    sub = lab.add_subparsers(dest="lab_command", metavar="LAB_COMMAND")
    image = sub.add_parser("image", help="build the node image when missing and print its tag")
    image.set_defaults(func=_image)
    status = sub.add_parser("status", help="per node: container, SSH, BMC power, HCA ports")
    status.add_argument("--stack", default="lab", help="stack name (state/<stack>/)")
    status.add_argument("--json", action="store_true", help="print JSON instead of a table")
    status.set_defaults(func=_status)
