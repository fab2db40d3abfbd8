"""``Parsed``: what every registered parser returns. A module of its own because
``typing.Protocol`` (``typing`` with ``re`` and ``enum``: about 4 ms) would otherwise load with
``fabric.parsers``, the package of ``python -m fabric topology``'s compiled writer;
``fabric.parsers.Parsed`` imports it on first use."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class Parsed(Protocol):
    """What every registered parser returns: a pydantic model, or ibnetdiscover's FabricGraph."""

    def model_dump(self, *, mode: str = ...) -> dict[str, Any]:
        """A plain dict; ``mode="json"`` makes it JSON-ready."""
        ...
