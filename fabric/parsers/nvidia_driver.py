"""The NVIDIA driver's version: ``/proc/driver/nvidia/version`` (``NVRM version: NVIDIA UNIX
Open Kernel Module for x86_64  580.159.04  Release Build ...``) or ``nvidia-smi --version``
(``DRIVER version : 580.159.04``), and the fabric manager package's version as railyard
queries it (``dpkg-query``/``rpm`` with the format ``NAME VERSION``, one package a line).

The fabric manager must run at the driver's exact version (NVIDIA's Fabric Manager User
Guide: the package is ``nvidia-fabricmanager-<branch>`` at the driver's version).

Standard library only: ``railyard-health`` reads the driver's version on the compute node.
"""

from __future__ import annotations

import re

from fabric.parsers.errors import ParseError

TOOL = "nvidia_driver"

_PROC = re.compile(r"^NVRM version:.*?\s(?P<version>\d+\.\d+(?:\.\d+)?)\s", re.M)
_SMI = re.compile(r"^DRIVER version\s*:\s*(?P<version>\d+\.\d+(?:\.\d+)?)\s*$", re.M)
_PACKAGE = re.compile(r"^(?P<name>nvidia-fabric-?manager(?:-\d+)?)\s+(?:\d+:)?(?P<version>\S+)$")


def driver_version(text: str) -> str:
    """The driver's version (``580.159.04``) from either source; ParseError otherwise."""
    match = _PROC.search(text) or _SMI.search(text)
    if match is None:
        raise ParseError(TOOL, 0, "an 'NVRM version:' or 'DRIVER version :' line")
    return match["version"]


def branch(version: str) -> str:
    """The driver branch of a version (``580.159.04`` -> ``580``): the package's suffix."""
    return version.split(".")[0]


def fabric_manager_packages(text: str) -> dict[str, str]:
    """``NAME VERSION`` lines of installed fabric manager packages -> their upstream version
    (``535.104.05-1`` -> ``535.104.05``: the packaging revision and epoch dropped)."""
    found = {}
    for line in text.splitlines():
        if match := _PACKAGE.match(line.strip()):
            found[match["name"]] = match["version"].split("-")[0]
    return found
