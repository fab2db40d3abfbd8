"""Slurm topology on a cloud: the provider's placement of the compute nodes against what
slurmctld loaded (``fabric.verify.cloud_topology``).

Each compute node's instance metadata is read over its own connection (AWS: the instance id by
IMDSv2, then DescribeInstanceTopology through the AWS CLI here; GCP: the
``physical_host_topology`` key, else ``physical_host``), the placement becomes the tree the
InfiniBand writer writes (the hand-off wrote topology.conf from the same reading, site.yml),
and ``scontrol show topology`` on the controller must show exactly that tree.
"""

from __future__ import annotations

import shlex

import pytest

from fabric.verify.cloud_topology import placement_command, provider_graph, topology_problems
from fabric.verify.facts import Facts
from fabric.verify.plan import ProviderTopology


def _read(facts: Facts, node: str, command: str) -> tuple[str, int, str]:
    result = facts.connect(node).run(f"timeout 20 bash -c {shlex.quote(command)}")
    return result.stdout, result.rc, result.stderr


@pytest.mark.family("slurm_provider_topology")
def test_provider_topology(host, provider_topology: ProviderTopology, facts: Facts) -> None:
    """``scontrol show topology`` shows the provider's placement of every compute node."""
    topo = provider_topology
    command = placement_command(topo.provider)
    readings = {node: _read(facts, node, command) for node in topo.nodes}
    graph = provider_graph(topo.provider, readings, topo.region)
    if not graph.cas:
        pytest.skip(
            f"{topo.provider}: the provider places none of the compute nodes "
            f"({'; '.join(graph.warnings)}): instance topology covers GPU types on reserved "
            "or placed capacity only"
        )
    result = host.run("scontrol show topology")
    assert result.rc == 0, f"scontrol show topology failed: {result.stderr.strip()}"
    problems = topology_problems(graph, topo.nodes, result.stdout)
    assert not problems, "; ".join(problems)
