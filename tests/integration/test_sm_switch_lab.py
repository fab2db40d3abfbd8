"""A switch's subnet manager, enabled by railyard, through ``pulumi up``: ``mode: switch`` with
``configure: true`` on leaf01 and no managed SM. The lab stands in for the switch's interface:
OpenSM on this machine attached to the ibsim switch's port 0 (``fabric.lab.switch_sm``). The
hand-off starts no OpenSM anywhere, and every check passes, the SM family's included: the
master is leaf01's SM (node type Switch), no port nobody declared has the IsSM bit, no node
runs OpenSM.

Own stack ``rysw-<hex>``, subnets 198.18.32-39.0/24 (management) and 198.18.56-63.0/24
(BMC), ports 25100-25115 (Redfish, notifier) and 25400-25527 (ibsim).
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from typing import Any

import pytest

from fabric.verify.causes import ALL_PASSED
from tests.integration.labkit import OwnLab, own_lab

pytestmark = pytest.mark.integration

HCA = {"device": "mlx5_0", "link_layer": "InfiniBand", "rate_gbps": 400, "width": "4x"}


def _spec(tag: int) -> dict[str, Any]:
    return {
        "name": "rysw",
        "target": "lab",
        "nodes": [
            {"names": "wn[1-2]", "role": "compute", "gpus": 2, "gpu_type": "h100", "hcas": [HCA]},
            {"names": "wctl1", "role": "controller"},
        ],
        "fabric": {
            "kind": "infiniband",
            "mtu": 4096,
            "topology": {
                "kind": "fat-tree",
                "leaves": 2,
                "spines": 1,
                "ports_per_switch": 8,
                "nodes_per_leaf": 1,
                "uplinks_per_leaf": 1,
                "link_rate_gbps": 400,
                "link_width": "4x",
            },
            "infiniband": {
                "routing_engine": "ftree",
                "sweep_interval": 10,
                "subnet_managers": [
                    {"mode": "switch", "switch": "leaf01", "configure": True, "priority": 15}
                ],
            },
        },
        "management": {"subnet": f"198.18.{32 + tag}.0/24"},
        "bmc": {"subnet": f"198.18.{56 + tag}.0/24"},
        "slurm": {
            "cluster_name": "rysw",
            "controller": "wctl1",
            "topology_plugin": "tree",
            "partitions": [{"name": "gpu", "nodes": "wn[1-2]", "default": True}],
        },
        "lab": {"bmc_port": 25100 + 2 * tag, "ibsim_port": 25400 + 16 * tag},
    }


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OwnLab]:
    with own_lab(tmp_path_factory, "rysw", _spec, tags=8, handoff=True, verify=True) as lab:
        yield lab
    assert lab.leftovers == {}


def test_up_enables_the_switch_sm_and_every_check_passes(lab: OwnLab) -> None:
    print(f"\nlab pulumi up with a switch SM: {lab.up_seconds:.1f} s")
    summary = lab.outputs["verification"].value
    assert ALL_PASSED.fullmatch(summary), summary
    sm = lab.checks("test_master_is_declared or test_no_undeclared_sm or test_sm_answers")
    assert {k: r.outcome for k, r in sm.items()} == {
        "test_master_is_declared[wn1]": "passed",
        "test_no_undeclared_sm[wn1]": "passed",
        "test_sm_answers[switch:leaf01]": "passed",
    }, {k: r.message for k, r in sm.items()}
    info = lab.ssh("wn1", "sminfo")
    assert "SMINFO_MASTER" in info and "priority 15" in info, info
    desc = lab.ssh("wn1", f"smpquery nodedesc {info.split()[3]}")
    assert desc.strip().endswith(".leaf01"), desc


def test_railyard_started_no_opensm_on_a_node(lab: OwnLab) -> None:
    for node in ("wn1", "wn2", "wctl1"):
        found = subprocess.run(
            ["podman", "exec", lab.hosts()[node]["container"], "pgrep", "-a", "-x", "opensm"],
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        assert found.returncode == 1, f"{node}: opensm runs: {found.stdout}"
