"""The cyclic garbage collector held off around work that builds millions of objects and no
reference cycles: a large capture's parse, the Slurm tree of a large fabric, a check plan. Each
collection would walk every young object and free nothing (40 % of a 16,384-host plan's time,
2-3x a large capture's parse: bench/plan, bench/parsers). Standard library only."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused() -> Iterator[None]:
    """The collector off inside the block, and back on after it if it was on before."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
