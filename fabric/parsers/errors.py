"""The parsers' one error type, in a module of its own: free of pydantic, so that the
ibnetdiscover path loads none, and below the registry (``fabric.parsers``) that imports every
parser, so that no parser imports the package that imports it."""

from __future__ import annotations

__all__ = ["ParseError"]


class ParseError(ValueError):
    """Text that is not the named tool's output: names the tool, line and expectation."""

    def __init__(self, tool: str, line: int, expected: str, got: str | None = None) -> None:
        self.tool = tool
        self.line = line
        self.expected = expected
        self.got = got
        where = f"line {line}" if line else "end of input"
        message = f"{tool}: {where}: expected {expected}"
        if got is not None:
            message += f", got {got.strip()[:80]!r}"
        super().__init__(message)
