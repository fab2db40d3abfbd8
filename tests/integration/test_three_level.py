"""A three-level fat tree as a lab of its own: ``pulumi up`` (Automation API, file backend in
tmp) builds 4 nodes on 4 leaves in 2 pods (2 leaves and 1 spine each) joined by a super-spine,
served by ibsim, and runs the hand-off (``playbooks/site.yml``). Then the whole check suite, as
``make check`` runs it, passes; ibnetdiscover finds the declared fabric (super-spine included);
and Slurm's topology has the super-spine on top, every compute node under it.

Its own stack name (``ry3l-<hex>``), subnets (198.19.160-169.0/24 and 198.19.180-189.0/24) and
ports (BMC 19600-19618, ibsim 20000-20144), so it runs beside the ``lab`` stack and the other
integration tests.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from fabric.hostlist import expand
from tests.integration.labkit import OwnLab, own_lab

pytestmark = pytest.mark.integration


def _spec(tag: int) -> dict[str, Any]:
    hca = {"device": "mlx5_0", "link_layer": "InfiniBand", "rate_gbps": 400, "width": "4x"}
    return {
        "name": "ry3level",
        "target": "lab",
        "nodes": [
            {"names": "tn[1-3]", "role": "compute", "hcas": [hca]},
            {"names": "tsm1", "role": "sm", "hcas": [hca]},
        ],
        "fabric": {
            "kind": "infiniband",
            "mtu": 4096,
            "topology": {
                "kind": "fat-tree",
                "leaves": 4,
                "spines": 2,
                "pods": 2,
                "super_spines": 1,
                "ports_per_switch": 8,
                "nodes_per_leaf": 1,
                "uplinks_per_leaf": 2,
                "uplinks_per_spine": 2,
                "link_rate_gbps": 400,
                "link_width": "4x",
            },
            "infiniband": {
                "routing_engine": "updn",
                "subnet_managers": [{"host": "tsm1", "priority": 14}],
            },
        },
        "management": {"subnet": f"198.19.{160 + tag}.0/24"},
        "bmc": {"subnet": f"198.19.{180 + tag}.0/24"},
        "slurm": {
            "cluster_name": "ry3level",
            "controller": "tsm1",
            "partitions": [{"name": "gpu", "nodes": "tn[1-3]", "default": True}],
        },
        "lab": {"bmc_port": 19600 + 2 * tag, "ibsim_port": 20000 + 16 * tag},
    }


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OwnLab]:
    with own_lab(tmp_path_factory, "ry3l", _spec, tags=10, handoff=True) as lab:
        yield lab
    assert lab.leftovers == {}, lab.leftovers


def test_the_check_suite_passes(lab: OwnLab) -> None:
    """Every check ``python -m fabric check`` runs (``make check``), none failed."""
    results = lab.checks("")
    failed = {key: r.message for key, r in results.items() if r.failed}
    assert failed == {}, failed
    passed = [key for key, r in results.items() if r.outcome == "passed"]
    assert len(passed) >= 10, sorted(results)


def test_ibnetdiscover_finds_the_super_spine(lab: OwnLab) -> None:
    from fabric.parsers.ibnetdiscover import parse

    discovered = parse((lab.state / "ibnetdiscover.txt").read_text())
    names = {sw.name for sw in discovered.switches.values()}
    assert names == {"leaf01", "leaf02", "leaf03", "leaf04", "spine01", "spine02", "superspine01"}
    assert len(discovered.links) == 4 + 4 * 2 + 2 * 2  # hosts, leaf uplinks, spine uplinks


def test_slurm_has_the_super_spine_on_top(lab: OwnLab) -> None:
    shown = lab.ssh("tsm1", "scontrol show topology")
    levels = {
        m[0]: (int(m[1]), set(expand(m[2])))
        for m in re.findall(r"SwitchName=(\S+) Level=(\d) LinkSpeed=\S+ Nodes=(\S+)", shown)
    }
    assert levels["superspine01"] == (2, {"tn1", "tn2", "tn3"}), shown
    assert levels["spine01"] == (1, {"tn1", "tn2"}), shown
    assert {sw: lv for sw, (lv, _) in levels.items() if lv == 0} == {
        "leaf01": 0,
        "leaf02": 0,
        "leaf03": 0,
    }, shown
