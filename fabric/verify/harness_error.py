"""The error a check raises when it could not look (``fabric.verify.harness`` reports it as an
error of the harness, never as a fabric failure). Its own module: the targets' check families
and the cloud placement readers raise it, and importing them (``check --plan``) should not
import pytest with the harness."""

from __future__ import annotations


class HarnessError(RuntimeError):
    """The check could not look (a tool failed or printed something unreadable): the harness's
    problem, never reported as the fabric's."""
