"""``railyard watch --stack STACK``: the declared fabric as Prometheus metrics.

Every ``--interval`` seconds one scrape (``fabric.watch.collect``) reads the fabric from the
stack's hosts; the last snapshot is served on ``--listen``:``--port`` (``/metrics``) or, with
``--textfile PATH``, written atomically for node_exporter's textfile collector. SIGTERM stops
it with exit 0 (a service being stopped), Ctrl-C with 130; a tool call in flight is ended.
``--json`` reads once and prints that reading as one JSON document instead of serving it;
``--once`` reads once and prints the metrics (or writes them to ``--textfile``), serving nothing.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path
from types import FrameType

from fabric.cli.errors import CommandError, Exit, emit_json, port_number
from fabric.cli.options import add_json, add_spec, add_stack, spec_path

#: The default port of the metrics endpoint.
DEFAULT_PORT = 9477


class _Stopped(BaseException):
    """Raised in the main thread by SIGINT/SIGTERM (ends a tool call in flight)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


class _Signals:
    """SIGINT/SIGTERM: stop at once, but never inside a textfile write (that waits for it)."""

    def __init__(self) -> None:
        self.stop = threading.Event()
        self.signum: int | None = None
        self.critical = False

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        del frame
        self.signum = self.signum or signum
        self.stop.set()
        if not self.critical:
            raise _Stopped(signum)

    def exit_code(self) -> Exit:
        return Exit.INTERRUPTED if self.signum == signal.SIGINT else Exit.OK


def _interval(text: str) -> float:
    value = float(text)
    if not 1 <= value <= 86400:
        raise argparse.ArgumentTypeError(f"{text}: give seconds between 1 and 86400")
    return value


def register(subparsers: argparse._SubParsersAction) -> None:
    """Register ``watch``."""
    parser = subparsers.add_parser(
        "watch",
        help="serve Prometheus metrics of a stack's fabric (cables, SM, check families)",
        description="Read the stack's fabric every --interval seconds (ibnetdiscover, sminfo and "
        "perfquery on its hosts, Slurm's node states, the last fabric check report) and serve it as Prometheus metrics, or "
        "write them for node_exporter's textfile collector. Runs until SIGTERM (exit 0) or "
        "Ctrl-C (130); exit 2 when the stack has no inventory or its spec has problems.",
    )
    add_stack(parser)
    add_spec(parser)
    parser.add_argument(
        "--listen", default="127.0.0.1", help="address of the metrics endpoint (default 127.0.0.1)"
    )
    parser.add_argument(
        "--port",
        type=port_number,
        default=DEFAULT_PORT,
        help=f"its port, 1 to 65535 (default {DEFAULT_PORT})",
    )
    parser.add_argument(
        "--textfile",
        type=Path,
        metavar="PATH",
        help="write the metrics to PATH (a .prom file in node_exporter's textfile directory) "
        "after each scrape instead of serving them",
    )
    parser.add_argument(
        "--interval",
        type=_interval,
        default=30.0,
        help="seconds between scrapes (default 30)",
    )
    parser.add_argument(
        "--once",
        action="store_true",
        help="scrape once, print the metrics on stdout (Prometheus text format; with "
        "--textfile: write them there instead), then exit; serves nothing",
    )
    parser.add_argument(
        "--no-slurm",
        action="store_true",
        help="do not read Slurm's node states (scontrol show node on the Slurm controller): "
        "for a fabric whose Slurm is not running",
    )
    parser.add_argument(
        "--junit",
        type=Path,
        help="the check report whose results are exported (default: "
        "state/<stack>/reports/checks.xml)",
    )
    add_json(
        parser,
        "read once and print the reading (cables, SM, check families, scrape errors) as one "
        "JSON document instead of serving it (--textfile is still written); an error too",
    )
    parser.set_defaults(func=cmd_watch)


def cmd_watch(args: argparse.Namespace) -> int:
    """Scrape and serve until stopped; bad input (no inventory, a bad spec, a port in use,
    an unwritable textfile directory) exits 2 before anything is served."""
    from fabric.state import StateLayout
    from fabric.verify import context
    from fabric.verify.plan import CheckPlan
    from fabric.watch.collect import collect
    from fabric.watch.counters import CounterWatch
    from fabric.watch.metrics import SnapshotCollector, registry_for, write_textfile
    from fabric.watch.remote import Remote

    spec_file = spec_path(args)
    inventory_path = context.inventory_path(args.stack)
    inventory = context.load_inventory(inventory_path)
    spec = context.load_cluster_spec(spec_file)
    plan = CheckPlan(
        spec=spec,
        hosts=context.inventory_hosts(inventory),
        groups=context.inventory_groups(inventory),
    )
    remote = Remote(inventory)
    junit = args.junit or StateLayout(args.stack).reports / "checks.xml"
    counter_watch = CounterWatch(plan)
    collector = SnapshotCollector(args.stack)
    registry = registry_for(collector)
    if args.textfile is not None:
        folder = args.textfile.parent
        if not folder.is_dir():
            raise CommandError(f"--textfile {args.textfile}: directory {folder} does not exist")
    signals = _Signals()
    old = {s: signal.signal(s, signals) for s in (signal.SIGINT, signal.SIGTERM)}
    server = None
    try:
        if args.textfile is None and not args.json and not args.once:
            server = _serve(registry, args.listen, args.port)
        while not signals.stop.is_set():
            snapshot = collect(plan, remote.run, junit, counter_watch, slurm=not args.no_slurm)
            collector.update(snapshot)
            if args.textfile is not None:
                signals.critical = True
                write_textfile(args.textfile, registry)
                signals.critical = False
                if signals.stop.is_set():
                    break
            if args.json:
                emit_json(snapshot.model_dump(mode="json"))
                return Exit.OK
            if args.once:
                if args.textfile is None:
                    _print_metrics(registry)
                return Exit.OK
            signals.stop.wait(args.interval)
    except _Stopped:
        pass
    finally:
        for signum, handler in old.items():
            signal.signal(signum, handler)
        if server is not None:
            server.shutdown()
            server.server_close()
    return signals.exit_code()


def _print_metrics(registry: object) -> None:
    """Print the registry's metrics in Prometheus' text format, as the endpoint serves them."""
    from prometheus_client import generate_latest

    sys.stdout.write(generate_latest(registry).decode())  # type: ignore[arg-type]


def _serve(registry: object, listen: str, port: int):  # type: ignore[no-untyped-def]
    """Start the HTTP endpoint in a thread; a port in use is bad input (exit 2)."""
    from prometheus_client import start_http_server

    try:
        server, _thread = start_http_server(port, addr=listen, registry=registry)
    except OSError as exc:
        raise CommandError(
            f"--listen {listen} --port {port}: cannot serve there ({exc.strerror}); "
            "choose a free port"
        ) from exc
    return server
