"""The linux switch script's DSCP classification against this kernel's real tc, in a network
namespace of the test's own (a veth pair, htb, u32): a changed DSCP moves to the handle's new
match (u32 keeps a rule's match on ``tc filter replace``), through a transition and back."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.unit.test_switch_qos_linux import ROLE, settings

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("ip") is None or shutil.which("tc") is None,
    reason="needs root, ip and tc (network namespaces)",
)

DRIVER = """
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("s", sys.argv[1])
mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
port = mod.Port(sys.argv[2], json.loads(sys.argv[3]))
port.classify(port.htb())
print(json.dumps({"report": port.report, "map": mod.dscp_map(sys.argv[2])}))
"""


def _ip(*argv: str) -> None:
    subprocess.run(["ip", *argv], check=True, timeout=30, capture_output=True)


@pytest.fixture
def netns() -> Iterator[str]:
    name = f"rysqt{secrets.token_hex(3)}"
    _ip("netns", "add", name)
    try:
        _ip("-n", name, "link", "add", "swp1", "type", "veth", "peer", "name", "peer1")
        _ip("-n", name, "link", "set", "swp1", "up")
        _ip("-n", name, "link", "set", "peer1", "up")
        yield name
    finally:
        _ip("netns", "del", name)


def classify(netns: str, wanted: dict[str, Any]) -> dict[str, Any]:
    proc = subprocess.run(
        ["ip", "netns", "exec", netns, "python3", "-c", DRIVER,
         str(Path(ROLE, "files", "switch_qos_linux.py")), "swp1", json.dumps(wanted)],
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    return json.loads(proc.stdout)


def test_a_changed_dscp_is_matched_after_widening_and_narrowing(netns: str) -> None:
    before = classify(netns, settings())
    assert before["map"] == {"26": "1:20", "48": "1:10"}, before
    widened = classify(netns, settings(rdma_dscp=24, transition_rdma_dscp=[26]))
    assert widened["map"] == {"24": "1:20", "26": "1:20", "48": "1:10"}, widened
    narrowed = classify(netns, settings(rdma_dscp=24))
    assert narrowed["map"] == {"24": "1:20", "48": "1:10"}, narrowed
    assert narrowed["report"]["classification"].startswith("applied:"), narrowed
