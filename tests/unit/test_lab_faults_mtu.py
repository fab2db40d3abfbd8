"""The host-side MTU fault's parsing: which PID's namespace to enter, and the MTU ``ip`` reports
(iproute2 is a bootstrap package, so the real ``ip -j`` runs here)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from fabric.lab.faults import FaultError, parse_container_pid, parse_link_mtu
from fabric.state import REPO_ROOT

INSPECT = REPO_ROOT / "tests" / "fixtures" / "podman_inspect__lab_node__1.json"


def _inspect(change: dict[str, dict[str, object]] | None = None) -> str:
    """The captured ``podman container inspect`` of a running lab node, with ``change`` applied."""
    data = json.loads(INSPECT.read_text())
    for section, values in (change or {}).items():
        data[0][section].update(values)
    return json.dumps(data)


def test_running_lab_node_gives_its_init_pid() -> None:
    assert parse_container_pid(INSPECT.read_text(), "rytest-a87425-n2") == 19961


def test_container_without_the_lab_label_is_refused() -> None:
    with pytest.raises(FaultError, match=r"other1 has no railyard.stack label: not a lab node"):
        parse_container_pid(_inspect({"Config": {"Labels": {"app": "other"}}}), "other1")


def test_stopped_container_is_refused() -> None:
    stopped = _inspect({"State": {"Running": False, "Pid": 0, "Status": "exited"}})
    with pytest.raises(FaultError, match=r"n2 is not running \(state exited\)"):
        parse_container_pid(stopped, "n2")


def test_unreadable_inspect_output_is_a_fault_error() -> None:
    with pytest.raises(FaultError, match="unreadable output"):
        parse_container_pid("", "n2")


def test_link_mtu_from_real_ip_json_matches_sysfs() -> None:
    out = subprocess.run(
        ["ip", "-j", "link", "show", "dev", "lo"], capture_output=True, text=True, check=True
    ).stdout
    assert parse_link_mtu(out, "lo") == int(Path("/sys/class/net/lo/mtu").read_text())


def test_link_mtu_names_a_netdev_missing_from_the_output() -> None:
    out = subprocess.run(
        ["ip", "-j", "link", "show", "dev", "lo"], capture_output=True, text=True, check=True
    ).stdout
    with pytest.raises(FaultError, match="no MTU for eth1"):
        parse_link_mtu(out, "eth1")
