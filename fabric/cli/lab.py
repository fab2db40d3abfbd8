"""``railyard lab ...``: the one-machine lab (node image, status, faults); ``--json`` on each."""

from __future__ import annotations

import argparse

from fabric.cli.errors import CommandError, Exit, emit, emit_json, require_stack
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
        from fabric.lab.status import SIMULATED_NOTE

        doc = status.model_dump(mode="json", exclude={"nodes": {"__all__": {"error"}}})
        emit_json({**doc, **({"note": SIMULATED_NOTE} if status.simulated else {})})
    else:
        from rich.console import Console
        from rich.table import Table

        table = Table(title=f"lab {args.stack}")
        for col in ("node", "running", "ssh", "power", "ports", "note"):
            table.add_column(col)
        for n in status.nodes:
            ports = ", ".join(p.shown() for p in n.ports)
            table.add_row(
                n.name,
                "yes" if n.running else "no",
                "yes" if n.ssh else "no",
                n.power or "?",
                ports or "-",
                n.error or "",
            )
        Console().print(table)
        if status.simulated:
            from fabric.lab.status import SIMULATED_NOTE

            emit(SIMULATED_NOTE)
    healthy = all(n.running and n.ssh and n.power == "On" for n in status.nodes)
    return Exit.OK if healthy else Exit.FAILED


def _lab_faults(stack: str):  # type: ignore[no-untyped-def]
    """The stack's :class:`fabric.lab.faults.LabFaults`; exit 2 when the lab is not up."""
    from fabric.lab.faults import LabFaults
    from fabric.state import StateLayout

    require_stack(stack)
    try:
        return LabFaults(StateLayout(stack).dir)
    except FileNotFoundError as exc:
        raise CommandError(f"{exc}; or pass --stack NAME") from exc
    except (OSError, ValueError, KeyError) as exc:
        raise CommandError(f"cannot read the lab's state of {stack}: {exc}; make up again") from exc


#: ``lab fault`` actions that inject a fault: what each does, its subject, its value's help.
FAULTS: dict[str, tuple[str, str, str | None]] = {
    "pull": ("pull a node's cable (ibsim Unlink)", "NODE[:HCA[:PORT]]", None),
    "speed": ("train a node's cable at a lower speed", "NODE[:HCA[:PORT]]", "FDR, EDR or HDR"),
    "width": ("train a node's cable narrower", "NODE[:HCA[:PORT]]", "1x, 2x, 4x, 8x or 12x"),
    "counter": (
        "raise an error counter on the switch port facing a node",
        "NODE[:HCA[:PORT]]",
        None,
    ),
    "sm": ("stop OpenSM on a subnet-manager host", "NODE", None),
    "mtu": ("set a RoCE lab switch port's MTU", "[SWITCH:]PORT", "bytes, 68 to 9216"),
}


def _fault(args: argparse.Namespace, action: str) -> int:
    """Inject a fault, put faults back, or list them. Bad input exits 2 before anything is
    touched; a lab that refused the fault (a tool failed) exits 1; nothing is recorded then."""
    from fabric.lab.faults import FaultError

    lab = _lab_faults(args.stack)
    try:
        if action == "list":
            faults = lab.recorded()
        elif action == "restore":
            if args.all == bool(args.kind):
                raise ValueError("name one fault (restore KIND SUBJECT) or give --all")
            if args.kind and not args.subject:
                raise ValueError(f"restore {args.kind} needs its subject, as list shows it")
            faults = lab.restore(args.kind, args.subject)
        else:
            value = str(getattr(args, "value", ""))
            if action == "counter":
                value = f"{args.counter}={args.value}"
            faults = [lab.inject(action, args.subject, value)]
    except ValueError as exc:
        raise CommandError(str(exc)) from exc
    except FaultError as exc:
        raise CommandError(f"the lab refused: {exc}", Exit.FAILED) from exc
    word = "restored" if action == "restore" else "injected"
    if args.json:
        emit_json({word: [f.model_dump() for f in faults]})
    elif action == "list":
        emit("\n".join(f.line() for f in faults) if faults else "no fault injected")
    else:
        emit("\n".join(f"{word}: {f.line()}" for f in faults) or "nothing to restore")
    return Exit.OK


def cmd_lab_fault_list(args: argparse.Namespace) -> int:
    """``lab fault list``: the faults injected now."""
    return _fault(args, "list")


def cmd_lab_fault_restore(args: argparse.Namespace) -> int:
    """``lab fault restore KIND SUBJECT | --all``."""
    return _fault(args, "restore")


def cmd_lab_fault_pull(args: argparse.Namespace) -> int:
    """``lab fault pull NODE[:HCA[:PORT]]``."""
    return _fault(args, "pull")


def cmd_lab_fault_speed(args: argparse.Namespace) -> int:
    """``lab fault speed NODE[:HCA[:PORT]] SPEED``."""
    return _fault(args, "speed")


def cmd_lab_fault_width(args: argparse.Namespace) -> int:
    """``lab fault width NODE[:HCA[:PORT]] WIDTH``."""
    return _fault(args, "width")


def cmd_lab_fault_counter(args: argparse.Namespace) -> int:
    """``lab fault counter NODE[:HCA[:PORT]] [COUNTER] [--value N]``."""
    return _fault(args, "counter")


def cmd_lab_fault_sm(args: argparse.Namespace) -> int:
    """``lab fault sm NODE``."""
    return _fault(args, "sm")


def cmd_lab_fault_mtu(args: argparse.Namespace) -> int:
    """``lab fault mtu [SWITCH:]PORT MTU``."""
    return _fault(args, "mtu")


def _register_fault(sub: argparse._SubParsersAction) -> None:
    """``lab fault {list,pull,speed,width,counter,sm,mtu,restore}``."""
    fault = sub.add_parser(
        "fault",
        help="break the lab on purpose and put it back: pull, speed, width, counter, sm, mtu, "
        "restore, list",
        description="Each fault is recorded in state/<stack>/ until it is restored, so "
        "`lab fault list` shows it and `lab fault restore --all` puts every one back. "
        "Exit 0 done, 1 the lab refused (a tool failed; nothing recorded), 2 bad input.",
    )
    actions = fault.add_subparsers(dest="fault_action", metavar="ACTION", required=True)
    handlers = {name: obj for name, obj in globals().items() if name.startswith("cmd_lab_fault_")}

    def action(name: str, help: str) -> argparse.ArgumentParser:
        parser = actions.add_parser(name, help=help, description=help)
        add_stack(parser)
        add_json(parser, "print the faults as one JSON document")
        parser.set_defaults(func=handlers[f"cmd_lab_fault_{name}"])
        return parser

    action("list", "the faults injected now, one per line: KIND SUBJECT [VALUE]")
    for kind, (what, subject, value) in FAULTS.items():
        parser = action(kind, what)
        parser.add_argument("subject", metavar="SUBJECT", help=subject)
        if value:
            parser.add_argument("value", metavar=kind.upper(), help=value)
        if kind == "counter":
            parser.add_argument(
                "counter",
                nargs="?",
                default="SymbolErrorCounter",
                metavar="COUNTER",
                help="a PortCounters field (default SymbolErrorCounter; a wrong one is refused "
                "with the list)",
            )
            parser.add_argument(
                "--value", default="1000", help="the counter's value (default 1000)"
            )
    restore = action("restore", "put a fault back: KIND SUBJECT as list shows it, or --all")
    restore.add_argument("kind", nargs="?", choices=list(FAULTS), metavar="KIND")
    restore.add_argument("subject", nargs="?", metavar="SUBJECT")
    restore.add_argument("--all", action="store_true", help="every fault, newest first")


def register(subparsers: argparse._SubParsersAction) -> None:
    """Register ``lab image``, ``lab status`` and ``lab fault``."""
    lab = subparsers.add_parser("lab", help="the one-machine lab: node image, status, faults")
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
    _register_fault(sub)
