"""railyard's umad shim (``railyard_umad.c``): MAD timeouts and a wait for an ibsim client slot.

umad2sim never times a MAD out, so a MAD that ibsim drops or forwards to a client that never
answers stays pending and OpenSM's sweep waits on it forever; and ibsim serves at most 10
clients at once (``IBSIM_MAX_CLIENTS``, compiled into ibsim 0.10), refusing the next, which then
exits with "connect failed". The shim, preloaded ahead of umad2sim, times sends out as the
kernel's ib_umad does and retries a refused connect until a slot frees up; and it keeps a
process that registers as its port's SM (``SIM_SET_ISSM``, the ping checks' ``ibping -S``) from
crashing on the SMPs ibsim hands such a client (see the C source).

It is built with the host's gcc into the cache (keyed by the source's hash) and copied into
every lab node, which runs the same Debian 12 userland.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

SOURCE = Path(__file__).with_name("railyard_umad.c")
LIBRARY = "librailyard_umad.so"
#: Where a lab node holds the shim; its LD_PRELOAD names it ahead of umad2sim.
NODE_PATH = "/usr/local/lib/railyard/" + LIBRARY
COMPILE = ["gcc", "-shared", "-fPIC", "-O2", "-Wall", "-Wextra"]
BUILD_TIMEOUT = 120


class ShimError(RuntimeError):
    """The shim could not be built."""


def cache_dir() -> Path:
    """``${XDG_CACHE_HOME:-~/.cache}/railyard/umadshim``."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "railyard" / "umadshim"


def build(cache: Path | None = None) -> Path:
    """Return the built shim, compiling it first when this source was not built yet."""
    source = SOURCE.read_bytes()
    digest = hashlib.sha256(source + " ".join(COMPILE).encode()).hexdigest()[:16]
    out = (cache or cache_dir()) / digest / LIBRARY
    if out.exists():
        return out
    gcc = shutil.which("gcc")
    if gcc is None:
        raise ShimError(
            "gcc not found: the lab builds its umad shim with it; install gcc "
            "(scripts/bootstrap.sh does)"
        )
    out.parent.mkdir(parents=True, exist_ok=True)
    # one name per call: Pulumi creates the nodes from threads of one provider process
    fd, name = tempfile.mkstemp(dir=out.parent, prefix=f".{LIBRARY}.", suffix=".tmp")
    os.close(fd)
    partial = Path(name)
    try:
        proc = subprocess.run(
            [*COMPILE, "-o", str(partial), str(SOURCE), "-ldl", "-lpthread"],
            capture_output=True,
            text=True,
            timeout=BUILD_TIMEOUT,
            check=False,
        )
    except subprocess.TimeoutExpired:
        partial.unlink(missing_ok=True)
        raise ShimError(f"gcc did not build {SOURCE.name} within {BUILD_TIMEOUT}s") from None
    if proc.returncode != 0:
        partial.unlink(missing_ok=True)
        raise ShimError(f"gcc could not build {SOURCE.name}: {proc.stderr.strip()[-400:]}")
    partial.replace(out)
    return out
