"""A lab package mirror: the "internet" a cloud-shaped lab's nodes reach only through NAT.

A flat apt repository (``deb [trusted=yes] http://ADDRESS:PORT ./``) with one package railyard
builds itself (``railyard-egress-probe``, a README and nothing else), served over HTTP on an
address of the lab's public network. The server records the address every request came from,
so a test sees whose address the node's traffic left with (a NAT masquerades it as its own).
"""

from __future__ import annotations

import hashlib
import subprocess
import threading
from dataclasses import dataclass, field
from email.utils import formatdate
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

__all__ = ["PROBE_PACKAGE", "Mirror", "build_repository", "probe_package"]

PROBE_PACKAGE = "railyard-egress-probe"
CONTROL = f"""\
Package: {PROBE_PACKAGE}
Version: 1.0
Architecture: all
Maintainer: railyard <railyard@localhost>
Description: railyard lab egress probe
 Installed from the cloud-shaped lab's mirror, through its NAT node.
"""


def probe_package(workdir: Path) -> Path:
    """Build ``railyard-egress-probe_1.0_all.deb`` in ``workdir`` with ``dpkg-deb``."""
    tree = workdir / "probe"
    (tree / "DEBIAN").mkdir(parents=True, exist_ok=True)
    (tree / "DEBIAN" / "control").write_text(CONTROL)
    doc = tree / "usr" / "share" / "doc" / PROBE_PACKAGE
    doc.mkdir(parents=True, exist_ok=True)
    (doc / "README").write_text("Fetched through the lab's NAT node.\n")
    deb = workdir / f"{PROBE_PACKAGE}_1.0_all.deb"
    subprocess.run(
        ["dpkg-deb", "--root-owner-group", "--build", str(tree), str(deb)],
        check=True,
        capture_output=True,
        timeout=60,
    )
    return deb


def _control(deb: Path) -> str:
    proc = subprocess.run(
        ["dpkg-deb", "--field", str(deb)], check=True, capture_output=True, text=True, timeout=60
    )
    return proc.stdout.strip()


def build_repository(root: Path, debs: list[Path]) -> None:
    """Write ``root`` as a flat repository of ``debs``: the packages, ``Packages`` and an
    unsigned ``Release`` (the source line says ``trusted=yes``)."""
    root.mkdir(parents=True, exist_ok=True)
    stanzas = []
    for deb in debs:
        data = deb.read_bytes()
        (root / deb.name).write_bytes(data)
        stanzas.append(
            f"{_control(deb)}\nFilename: ./{deb.name}\nSize: {len(data)}\n"
            f"SHA256: {hashlib.sha256(data).hexdigest()}\n"
        )
    index = "\n".join(stanzas).encode()
    (root / "Packages").write_bytes(index)
    release = (
        f"Origin: railyard-lab\nLabel: railyard-lab\nDate: {formatdate(usegmt=True)}\n"
        f"SHA256:\n {hashlib.sha256(index).hexdigest()} {len(index)} Packages\n"
    )
    (root / "Release").write_text(release)


@dataclass
class Mirror:
    """The repository at ``root`` served on ``address:port`` while the context is open."""

    root: Path
    address: str
    port: int = 0
    clients: list[tuple[str, str]] = field(default_factory=list)  #: (client address, path)
    _server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        return f"http://{self.address}:{self.port}"

    @property
    def source_line(self) -> str:
        """The apt source line of this mirror."""
        return f"deb [trusted=yes] {self.url} ./"

    def start(self) -> Mirror:
        """Serve the repository in a background thread (port 0: a free one, then set)."""
        mirror = self

        class Handler(SimpleHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:  # noqa: A002
                mirror.clients.append((self.client_address[0], self.path))

        self._server = ThreadingHTTPServer(
            (self.address, self.port), partial(Handler, directory=str(self.root))
        )
        self._server.timeout = 10
        self.port = int(self._server.server_address[1])
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        """Stop serving (idempotent)."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> Mirror:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
