"""Slurm's topology.conf (topology/tree) straight from ibnetdiscover text.

:func:`compiled_tree_conf` runs the compiled writer (``_ibnetdiscover_tree.c``, built with the
scanner by ``pip install -e .``): one pass over the text in C, no graph built in Python. It
covers the usual case and declines the rest (see the C file's header); then, and without a C
compiler, the caller runs ``fabric.topology.slurm.tree_conf(parse(text))``, which is the
reference (``python -m fabric topology`` does): both give the same text
(tests/unit/test_ibnetdiscover_tree.py), and only the reference raises errors, so a bad, empty
or cut-off capture is refused with the same message either way. To force the reference, set
``tree._tree_compiled = None``.

This module imports nothing else of the project (a parser imports nothing above it).
``python -m fabric topology --from-ibnetdiscover FILE`` calls :func:`compiled_tree_conf`
straight from ``fabric/__main__.py``, before argparse and the CLI are loaded (the CLI runs when
it declines).
"""

from __future__ import annotations

try:  # built by the install when a C compiler is present (setup.py)
    from fabric.parsers.ibnetdiscover._ibnetdiscover_scan import tree_conf as _tree_compiled
except ImportError:  # pragma: no cover - depends on the install
    _tree_compiled = None

#: The link widths and speeds the grammar knows: ``fabric.graph``'s ``WIDTH_LANES`` and
#: ``LANE_GBPS`` (a test keeps them equal), spelled out so that this path does not import the
#: graph module (its dataclasses cost more than the compiled writer takes for 2,048 hosts).
WIDTHS = frozenset(("1x", "2x", "4x", "8x", "12x"))
SPEEDS = frozenset(("SDR", "DDR", "QDR", "FDR10", "FDR", "EDR", "HDR", "NDR", "XDR"))


def compiled_tree_conf(text: str) -> str | None:
    """The compiled writer's topology.conf of ``text``, or None when it declines the text (or
    was not built): then only the reference gives the text or the error."""
    if _tree_compiled is None or not text.isascii():
        return None
    return _tree_compiled(text, WIDTHS, SPEEDS)
