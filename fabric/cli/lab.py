"""``python -m fabric lab ...``: the one-machine lab (node image, status)."""

from __future__ import annotations

import argparse


def _image(args: argparse.Namespace) -> int:
    from fabric.lab.image import ImageError, ensure_image

    try:
        print(ensure_image())
    except ImageError as exc:
        print(f"error: {exc}")
        return 1
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    """Register ``lab image`` and ``lab status``."""
    lab = subparsers.add_parser("lab", help="the one-machine lab: node image, status")
    sub = lab.add_subparsers(dest="lab_command", metavar="LAB_COMMAND")
    image = sub.add_parser("image", help="build the node image when missing and print its tag")
    image.set_defaults(func=_image)
