"""Reading tool output from a file or stdin: the one decoder every command uses.

:func:`read_text` refuses, before any parser sees it, input that cannot be a text tool's output
(not UTF-8, or holding a NUL byte: a binary file) and input over a size cap (read no further
than the cap, in chunks, so memory stays bounded and Ctrl-C interrupts it). It says whether the last line ends in a newline: a
captured tool's output always does, so one that does not was cut short. Free of pydantic, so
the ibnetdiscover path loads none.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import BinaryIO, NamedTuple

MIB = 1024 * 1024

#: The default input cap: far above any single host's tool output, and a few hundred MiB of
#: memory at most while the result is built.
DEFAULT_LIMIT_MIB = 64

#: The largest cap ``--max-mb`` may raise it to: a parse holds several times its input, and no
#: command may take more than about 1 GiB. A 16,384-host fabric's ibnetdiscover output is 55 MB
#: and parses in 236 MiB (bench/topology), so 256 MiB holds a fabric of ~64k hosts; input at
#: the cap is refused in ~270 MiB (/dev/zero: issue 44).
MAX_LIMIT_MIB = 256

#: How much is read at a time: memory grows with what arrives, never with the cap.
CHUNK = MIB


class InputError(ValueError):
    """Input no parser should see (binary, not UTF-8, over the cap): names it and the fix."""


class Source(NamedTuple):
    """Decoded tool output: ``complete`` is False when the last line has no newline. A typed
    tuple, not a dataclass: ``dataclasses`` costs about 5 ms of every command's start-up."""

    name: str
    text: str
    complete: bool

    @property
    def last_line(self) -> int:
        """The number of the last line (1-based; 0 for empty input)."""
        return self.text.count("\n") + (0 if self.complete else 1)


def _line_of(data: bytes | bytearray, offset: int) -> int:
    return data.count(b"\n", 0, offset) + 1


def decode(name: str, data: bytes | bytearray) -> Source:
    """``data`` as text; an InputError naming the line and byte when it is not UTF-8 text."""
    if (nul := data.find(b"\0")) >= 0:
        raise InputError(
            f"{name}: line {_line_of(data, nul)}: byte {nul} is NUL: binary data, not a tool's "
            "text output; pass the file the tool printed (e.g. ibstat > ibstat.txt)"
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise InputError(
            f"{name}: line {_line_of(data, err.start)}: byte {err.start} "
            f"(0x{data[err.start]:02x}) is not UTF-8: binary data, not a tool's text output; "
            "pass the file the tool printed (e.g. ibstat > ibstat.txt)"
        ) from None
    return Source(name, text, complete=not text or text.endswith("\n"))


def _over(name: str, limit_mib: int | None, raise_with: str) -> str:
    return (
        f"{name}: larger than the input cap of {limit_mib} MiB; if it really is one tool "
        f"run's output, raise the cap with {raise_with}"
    )


def limit_problem(limit_mib: object, raise_with: str = "--max-mb N") -> str | None:
    """Why ``limit_mib`` cannot be an input cap (a whole number of MiB, 1 to
    :data:`MAX_LIMIT_MIB`), or None when it can. ``raise_with`` names the option."""
    option = raise_with.split()[0]
    if isinstance(limit_mib, bool) or not isinstance(limit_mib, int) or limit_mib < 1:
        return f"{option} {limit_mib!r}: not a whole number of MiB above 0"
    if limit_mib > MAX_LIMIT_MIB:
        return (
            f"{option} {limit_mib}: more than {MAX_LIMIT_MIB} MiB, the largest input cap (the "
            "parsed result takes several times the input's memory); pass at most "
            f"{MAX_LIMIT_MIB}"
        )
    return None


def _size(handle: object) -> int:
    """The size of the regular file open as ``handle``; -1 for anything else (a pipe, a FIFO,
    a device), which is read up to the cap instead."""
    import os
    import stat

    info = os.fstat(handle.fileno())  # type: ignore[attr-defined]
    return info.st_size if stat.S_ISREG(info.st_mode) else -1


def read_capped(stream: BinaryIO, limit: int | None) -> bytearray:
    """At most ``limit + 1`` bytes of ``stream`` (None: all of it), read in chunks of
    :data:`CHUNK`: nothing is allocated ahead of what arrives, and Ctrl-C stops the read
    between chunks (one read of an endless device, e.g. /dev/zero, cannot be interrupted)."""
    data = bytearray()
    while True:
        want = CHUNK if limit is None else min(CHUNK, limit + 1 - len(data))
        if want <= 0:
            return data
        chunk = stream.read(want)
        if not chunk:
            return data
        data += chunk


def _read_stdin(limit: int | None) -> bytearray:
    stream = getattr(sys.stdin, "buffer", None)
    if stream is not None:
        return read_capped(stream, limit)
    data = bytearray()  # a text stream (tests): characters, encoded as they come
    while limit is None or len(data) <= limit:
        text = sys.stdin.read(CHUNK)
        if not text:
            break
        data += text.encode()
    return data


def read_text(
    path: str | Path, limit_mib: int | None = DEFAULT_LIMIT_MIB, raise_with: str = "--max-mb N"
) -> Source:
    """Read ``path`` (``-``: stdin) as tool output of at most ``limit_mib`` MiB (None: no cap,
    for callers that bound it otherwise; every command passes one).

    Raises InputError (a cap that is not 1 to MAX_LIMIT_MIB, binary, not UTF-8, over the cap;
    ``raise_with`` says how to raise it) and OSError (unreadable) before anything is parsed.
    """
    if limit_mib is not None and (problem := limit_problem(limit_mib, raise_with)):
        raise InputError(problem)
    limit = None if limit_mib is None else limit_mib * MIB
    name = "stdin" if str(path) == "-" else str(path)
    if str(path) == "-":
        data = _read_stdin(limit)
    else:
        with open(path, "rb") as handle:
            if limit is not None and _size(handle) > limit:  # refused from its size, unread
                raise InputError(_over(name, limit_mib, raise_with))
            data = read_capped(handle, limit)
    if limit is not None and len(data) > limit:
        raise InputError(_over(name, limit_mib, raise_with))
    return decode(name, data)
