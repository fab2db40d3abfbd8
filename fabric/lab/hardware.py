"""Simulated hardware swapped in the lab's datacenter: a node's HCA with another GUID.

``lab.hca_guids`` gives, per node, the node GUID its simulated HCA (the first InfiniBand one,
as ``fabric.lab.plan`` simulates it) reports instead of the topology's. The ibsim net file is
written from the rewritten graph, so ibsim restarts with the new card, as a replaced HCA
comes up on real hardware: same host, same cable, another GUID.
"""

from __future__ import annotations

from fabric.graph import FabricGraph, GraphError
from fabric.spec import ClusterSpec
from fabric.topology.ibsim import simulated_device


def with_hca_guids(graph: FabricGraph, spec: ClusterSpec) -> FabricGraph:
    """``graph`` with each ``lab.hca_guids`` node's simulated HCA under its given GUID."""
    wanted = spec.lab.hca_guids if spec.lab is not None else {}
    if not wanted:
        return graph
    renames: dict[str, str] = {}
    for guid, ca in graph.cas.items():
        if ca.host in wanted and ca.device == simulated_device(spec, ca.host):
            renames[guid] = wanted[ca.host]
    taken = set(graph.switches) | (set(graph.cas) - set(renames))
    clash = sorted(set(renames.values()) & taken)
    if clash:
        raise GraphError(f"lab.hca_guids: {clash[0]} is already another node's GUID; pick another")
    cas = {renames.get(g, g): ca._replace(guid=renames.get(g, g)) for g, ca in graph.cas.items()}
    links = [
        k._replace(a_guid=renames.get(k.a_guid, k.a_guid), b_guid=renames.get(k.b_guid, k.b_guid))
        for k in graph.links
    ]
    return FabricGraph(switches=dict(graph.switches), cas=cas, links=links)
