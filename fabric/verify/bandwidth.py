"""Minimum ``ib_write_bw`` bandwidth per link rate (real hardware only), and the per-host
lock that keeps two bandwidth tests off one host at once (:func:`host_locks`)."""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

#: Link rate (Gb/s, as ibstat reports it) -> minimum ib_write_bw average (Gb/s) between two
#: hosts on an idle fabric: ~90% of the signalling rate after 64b/66b encoding (EDR and up;
#: 8b/10b costs 20% for SDR-QDR) and headers.
MIN_WRITE_BW_GBPS: dict[int, float] = {
    10: 7.0,  # 4xSDR
    20: 14.0,  # 4xDDR
    40: 28.0,  # 4xQDR
    56: 45.0,  # 4xFDR
    100: 88.0,  # 4xEDR / 100GbE
    200: 180.0,  # 4xHDR / 200GbE
    400: 360.0,  # 4xNDR / 400GbE
    800: 720.0,  # 4xXDR / 800GbE
}


def min_write_bw(rate_gbps: float) -> float:
    """Return the minimum ib_write_bw Gb/s for a link of ``rate_gbps`` (next lower table row)."""
    rows = [r for r in sorted(MIN_WRITE_BW_GBPS) if r <= rate_gbps]
    if not rows:
        raise ValueError(
            f"no bandwidth floor for a {rate_gbps} Gb/s link; lowest row is {min(MIN_WRITE_BW_GBPS)}"
        )
    return MIN_WRITE_BW_GBPS[rows[-1]]


#: Seconds a bandwidth test waits for its hosts' locks: a leaf NCCL run with its bisection
#: (up to 13 runs of at most 600 s) may hold a host that long; past it the wait is the
#: harness's error, never the fabric's.
LOCK_TIMEOUT = 3000.0
#: Seconds between two tries of a held lock.
LOCK_POLL = 0.2


#: What a bandwidth test holds while it runs (the suite's ``exclusive`` fixture):
#: ``with exclusive(hosts): ...``.
Exclusive = Callable[[Iterable[str]], AbstractContextManager[None]]


class HostsBusy(TimeoutError):
    """A bandwidth test's hosts stayed held by another test past the lock's timeout."""


def _lock_name(host: str) -> str:
    """A host's lock file name: the host name with anything but ``[A-Za-z0-9._-]`` as ``_``."""
    return "bw-" + "".join(c if c.isalnum() or c in "._-" else "_" for c in host) + ".lock"


@contextmanager
def host_locks(
    folder: Path, hosts: Iterable[str], timeout: float = LOCK_TIMEOUT, poll: float = LOCK_POLL
) -> Iterator[None]:
    """Hold the bandwidth lock of every host in ``hosts`` (one file each in ``folder``, shared
    by every xdist worker of a run) for the ``with`` block, so two bandwidth tests touching one
    host (ib_write_bw servers per rail, a GPUDirect pair, an NCCL run) never run at once.

    Locks are taken in sorted host order, so two tests waiting on each other's hosts cannot
    deadlock; each is an ``flock`` on its own open file, released when the block ends or the
    process dies. :class:`HostsBusy` when they are not all held within ``timeout`` seconds."""
    folder.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + timeout
    held: list[int] = []
    try:
        for host in sorted(set(hosts)):
            fd = os.open(folder / _lock_name(host), os.O_RDWR | os.O_CREAT, 0o600)
            held.append(fd)
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        raise HostsBusy(
                            f"{host} stayed busy with another bandwidth test for {timeout:g} s"
                        ) from None
                    time.sleep(poll)
        yield
    finally:
        for fd in reversed(held):
            os.close(fd)  # closing the descriptor drops its flock
