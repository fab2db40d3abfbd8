"""The Redfish emulator's power hook: make each lab node's container follow its BMC.

sushy-tools' fake driver PUTs a system's JSON to this listener on every change: first with
``pending_power`` (the state and the time it takes effect, as on real BMCs), later with the
applied ``power_state``. The container is started or stopped at the apply time.

Run: ``python -m fabric.lab.notifier --listen 127.0.0.1:PORT --map MAP.json`` where MAP.json
maps system names (node names) to container names.
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from fabric.lab.node import NodeError, power


def target_power(system: dict[str, Any]) -> tuple[bool, float] | None:
    """Return (on, apply time) a notification asks for, or None if it changes no power."""
    pending = system.get("pending_power")
    if pending:
        state = str(pending.get("power_state", ""))
        return ("Off" not in state, float(pending.get("apply_time", 0)))
    state = str(system.get("power_state", ""))
    if state in ("On", "Off"):
        return (state == "On", 0.0)
    return None


def _apply(container: str, on: bool, at: float) -> None:
    time.sleep(max(0.0, at - time.time()))
    try:
        power(container, on)
        print(f"{container}: power {'on' if on else 'off'}", flush=True)
    except (NodeError, RuntimeError) as exc:
        print(f"{container}: power {'on' if on else 'off'} failed: {exc}", flush=True)


def make_handler(containers: dict[str, str]) -> type[BaseHTTPRequestHandler]:
    """Return a request handler that powers the container of the notified system."""

    class Handler(BaseHTTPRequestHandler):
        def do_PUT(self) -> None:  # noqa: N802 - http.server naming
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            try:
                system = json.loads(body)
                container = containers[system["name"]]
            except (ValueError, KeyError):
                self.send_response(400)
                self.end_headers()
                return
            wanted = target_power(system)
            if wanted is not None:
                threading.Thread(target=_apply, args=(container, *wanted), daemon=True).start()
            self.send_response(204)
            self.end_headers()

        do_POST = do_PUT

        def log_message(self, fmt: str, *args: object) -> None:
            print(fmt % args, flush=True)

    return Handler


def main() -> None:
    """Serve notifications until terminated."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--listen", required=True, help="HOST:PORT (loopback)")
    parser.add_argument("--map", required=True, type=Path, help="JSON: system name -> container")
    args = parser.parse_args()
    host, port = args.listen.rsplit(":", 1)
    server = ThreadingHTTPServer((host, int(port)), make_handler(json.loads(args.map.read_text())))
    print(f"notifier listening on {args.listen}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
