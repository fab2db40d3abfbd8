"""Day 2 on a RoCE lab: ``playbooks/qos-change.yml`` applies changed lossless-Ethernet settings.

The lab (``pulumi up`` through :mod:`labkit`, with the hand-off): two compute nodes on the lab's
RoCE fabric network at MTU 9000 and a Slurm controller. The spec's ``fabric.roce`` then changes
(lossless priority 3 -> 4, RDMA DSCP 26 -> 24, ToS 106 -> 98) and
``python -m fabric run playbooks/qos-change.yml`` rewrites and applies the settings on the fabric
hosts; a second run changes nothing. A ToS that does not carry the DSCP is refused first, naming
the field and the value to use, with nothing changed. The lab's netdevs are veth, not ConnectX:
the role applies MTU and the settings file, and reports the ConnectX-only knobs as skipped.

Its own stack name, subnets (198.19.16-25, 32-41 and 48-57) and ports.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from tests.integration.labkit import REPO, OwnLab, own_lab

pytestmark = pytest.mark.integration

SETTINGS = "/etc/railyard/roce-qos.env"


def _spec(tag: int, pfc: int = 3, dscp: int = 26, tos: int | None = None) -> dict[str, Any]:
    hca = {"device": "mlx5_0", "link_layer": "Ethernet", "netdev": "eth0", "rate_gbps": 100}
    return {
        "name": "ryqos",
        "target": "lab",
        "nodes": [
            {"names": "q[1-2]", "role": "compute", "hcas": [hca]},
            {"names": "qctl", "role": "controller"},
        ],
        "fabric": {
            "kind": "roce",
            "mtu": 9000,
            "roce": {
                "pfc_priority": pfc,
                "rdma_dscp": dscp,
                "roce_tos": dscp << 2 | 2 if tos is None else tos,
            },
        },
        "management": {"subnet": f"198.19.{16 + tag}.0/24"},
        "bmc": {"subnet": f"198.19.{32 + tag}.0/24"},
        "slurm": {
            "cluster_name": "ryqos",
            "controller": "qctl",
            "partitions": [{"name": "p", "nodes": "q[1-2]", "default": True}],
        },
        "lab": {
            "bmc_port": 19500 + 2 * tag,
            "ibsim_port": 18700 + 16 * tag,
            "roce_subnet": f"198.19.{48 + tag}.0/24",
        },
    }


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OwnLab]:
    with own_lab(tmp_path_factory, "ryqos", _spec, tags=10, handoff=True) as lab:
        yield lab
    assert lab.leftovers == {}, lab.leftovers


def _qos_change(lab: OwnLab) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "fabric",
            "run",
            "playbooks/qos-change.yml",
            "--stack",
            lab.name,
            "--spec",
            str(lab.stack_file),
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=900,
        env={**os.environ, **lab.env},
        check=False,
    )


def _changed(stdout: str) -> dict[str, int]:
    table = stdout.split("succeeded\n", 1)[1].splitlines()
    assert table[0].split() == ["host", "ok", "changed", "failed", "unreachable", "skipped"], stdout
    return {
        row.split()[0]: int(row.split()[2]) for row in table[1:] if row.split()[0] in ("q1", "q2")
    }


def _settings(lab: OwnLab, node: str) -> dict[str, str]:
    text = lab.ssh(node, f"cat {SETTINGS}")
    return dict(
        line.split("=", 1) for line in text.splitlines() if "=" in line and not line.startswith("#")
    )


def test_handoff_applied_the_declared_settings(lab: OwnLab) -> None:
    rows = {
        line.split()[0]: line.split()[1:] for line in lab.outputs["handoff"].value.splitlines()[1:]
    }
    rows.pop("localhost", None)  # the hand-off's play on the controller (metrics service)
    assert set(rows) == {"q1", "q2", "qctl"} and all(
        r[2] == "0" and r[3] == "0" for r in rows.values()
    )
    for node in ("q1", "q2"):
        settings = _settings(lab, node)
        assert (
            settings["ROCE_QOS_PFC_PRIORITY"],
            settings["ROCE_QOS_RDMA_DSCP"],
            settings["ROCE_QOS_TOS"],
        ) == ("3", "26", "106")
        assert lab.ssh(node, "cat /sys/class/net/eth0/mtu").strip() == "9000"


def test_inconsistent_tos_is_refused_before_anything_changes(lab: OwnLab) -> None:
    lab.set_spec(_spec(lab.tag, pfc=4, dscp=24, tos=106))
    proc = _qos_change(lab)
    assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "fabric.roce.roce_tos" in proc.stderr and "use 98" in proc.stderr, proc.stderr
    assert _settings(lab, "q1")["ROCE_QOS_PFC_PRIORITY"] == "3"


def test_changed_settings_are_applied_then_idempotent(lab: OwnLab) -> None:
    lab.set_spec(_spec(lab.tag, pfc=4, dscp=24))
    first = _qos_change(lab)
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    assert all(n > 0 for n in _changed(first.stdout).values()), first.stdout
    assert "Apply the RoCE QoS settings through the systemd unit.: changed q[1-2]" in first.stderr
    for node in ("q1", "q2"):
        settings = _settings(lab, node)
        assert (
            settings["ROCE_QOS_PFC_PRIORITY"],
            settings["ROCE_QOS_RDMA_DSCP"],
            settings["ROCE_QOS_TOS"],
        ) == ("4", "24", "98")
    second = _qos_change(lab)
    assert second.returncode == 0, second.stdout[-3000:] + second.stderr[-3000:]
    assert _changed(second.stdout) == {"q1": 0, "q2": 0}, second.stdout
