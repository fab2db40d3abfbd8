"""The filters of ``playbooks/remove-node.yml`` on topology.conf as railyard's writers render it."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest

from fabric.state import REPO_ROOT

_SPEC = importlib.util.spec_from_file_location(
    "remove_nodes", REPO_ROOT / "playbooks" / "filter_plugins" / "remove_nodes.py"
)
assert _SPEC is not None and _SPEC.loader is not None
remove_nodes = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(remove_nodes)


def rendered(nodes: str) -> str:
    """topology.conf of the lab stack's fabric for ``nodes`` (``python -m fabric topology``)."""
    proc = subprocess.run(
        [sys.executable, "-m", "fabric", "topology", "--spec", "Pulumi.lab.yaml"]
        + ["--nodes", nodes],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        timeout=60,
        check=True,
    )
    return proc.stdout


@pytest.mark.parametrize(
    ("expr", "names", "left"),
    [
        ("gpu[01-04]", ["gpu02"], "gpu[01,03-04]"),
        ("gpu[01-04]", "gpu[01-02]", "gpu[03-04]"),
        ("gpu01", ["gpu01"], ""),
        ("ALL", ["gpu01"], "ALL"),
    ],
)
def test_hostlist_without(expr: str, names: list[str] | str, left: str) -> None:
    assert remove_nodes.hostlist_without(expr, names) == left


def test_topology_without_a_node_is_the_one_rendered_without_it() -> None:
    full = rendered("gpu[01-08]")
    assert remove_nodes.topology_conf_without(full, ["gpu03"]) == rendered("gpu[01-02,04-08]")


def test_a_leaf_left_without_nodes_leaves_the_spine_too() -> None:
    full = rendered("gpu[01-08]")
    out = remove_nodes.topology_conf_without(full, "gpu[06-08]")
    assert out == rendered("gpu[01-05]")
    assert "leaf02" not in out


def test_partitions_without_drops_an_emptied_partition() -> None:
    parts = [
        {"name": "gpu", "nodes": "gpu[01-02]", "default": True},
        {"name": "one", "nodes": "gpu02", "default": False},
        {"name": "all", "nodes": "ALL", "default": False},
    ]
    assert remove_nodes.partitions_without(parts, ["gpu02"]) == [
        {"name": "gpu", "nodes": "gpu01", "default": True},
        {"name": "all", "nodes": "ALL", "default": False},
    ]
