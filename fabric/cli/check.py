"""Placeholder: this subcommand module is being written (see the issue tracker)."""

from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:
    """Register nothing yet."""
