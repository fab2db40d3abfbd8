"""Slurm: every partition node is idle or allocated; the loaded tree topology matches the fabric."""

from __future__ import annotations

import shlex

import pytest

from fabric.hostlist import expand
from fabric.verify.plan import CheckPlan
from fabric.verify.slurm import parse_show_topology, parse_sinfo_states

GOOD_STATES = {"idle", "allocated", "mixed", "completing"}


@pytest.mark.family("slurm")
def test_node_idle_or_allocated(host, slurm_node: str) -> None:
    """sinfo on the controller reports the node idle or allocated (not down/drained)."""
    result = host.run("sinfo -h -N -o '%N %T'")
    assert result.rc == 0, f"sinfo on the controller failed: {result.stderr.strip()}"
    state = parse_sinfo_states(result.stdout).get(slurm_node)
    assert state is not None, f"Slurm node {slurm_node}: state absent, expected idle or allocated"
    if state.rstrip("*~#!%$@^-") in GOOD_STATES:
        return
    # Slurm's reason for a down or drained node (railyard's health program sets one: "railyard:
    # mlx5_0/1 Down (leaf02 p1)"); one line per partition, "none" when it gave none.
    said = host.run(f"sinfo -h -n {shlex.quote(slurm_node)} -o %E").stdout.split("\n")
    reason = next((line.strip() for line in said if line.strip()), "none")
    pytest.fail(
        f"Slurm node {slurm_node}: state {state}, expected idle or allocated; reason: {reason}"
    )


@pytest.mark.family("slurm_topology")
def test_topology_switch(host, slurm_switch: str, plan: CheckPlan) -> None:
    """``scontrol show topology`` has the switch with the declared nodes and child switches."""
    result = host.run("scontrol show topology")
    assert result.rc == 0, f"scontrol show topology failed: {result.stderr.strip()}"
    loaded = parse_show_topology(result.stdout).get(slurm_switch)
    nodes, switches = plan.slurm_switches[slurm_switch]
    assert loaded is not None, (
        f"Slurm topology has no switch {slurm_switch} (declared nodes {nodes}, switches {switches})"
    )
    got_nodes = sorted(expand(loaded["Nodes"])) if loaded.get("Nodes") else []
    got_switches = sorted(expand(loaded["Switches"])) if loaded.get("Switches") else []
    assert (got_nodes, got_switches) == (nodes, switches), (
        f"Slurm switch {slurm_switch}: nodes {got_nodes} switches {got_switches}; "
        f"the fabric has nodes {nodes} switches {switches}"
    )
