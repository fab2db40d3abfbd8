"""Where Azure places the compute VMs (verify layer): each VM's instance metadata (the command
``PLACEMENT_COMMAND`` of this target's ``model.py``; no API call, no credentials), read as the
placement group of its scale set, ``compute.placementGroupId``.

Azure's InfiniBand reaches only the VMs of one scale set, and there only inside one placement
group (rules.py cites "Set up InfiniBand"), so the placement group is the InfiniBand partition
the VM is on. Each placement group becomes one Slurm switch, ``pg-<placementGroupId>``, listing
its VMs; a VM without one (not a scale set VM) has no placement, and the check names it. That
is all Azure exposes of the placement: no switch, rack or block id (cyclecloud-slurm's
``azslurm topology`` gets the leaf switches from SHARP instead, docs/targets.md).
``fabric.verify.cloud_topology.provider_graph`` calls :func:`graph`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from fabric.graph import FabricGraph, GraphError
from fabric.topology.cloud import graph_from_paths
from fabric.verify.harness_error import HarnessError

__all__ = ["NEEDS_REGION", "azure_graph", "graph", "imds_compute"]

#: The placement is read on the VMs themselves: no region to look it up in.
NEEDS_REGION = False


def imds_compute(host: str, stdout: str, rc: int, stderr: str) -> Mapping[str, Any]:
    """The ``compute`` object of what IMDS printed for ``host`` (the whole instance, or its
    ``compute`` part); anything else is a harness error, never a fabric failure."""
    if rc != 0:
        said = stderr.strip()[:200] or stdout.strip()[:80] or "nothing"
        raise HarnessError(
            f"{host}: the instance metadata service did not answer (exit {rc}): {said}"
        )
    try:
        data = json.loads(stdout)
    except ValueError as error:
        raise HarnessError(
            f"{host}: instance metadata is not JSON: {stdout.strip()[:80]!r}"
        ) from error
    compute = data.get("compute", data) if isinstance(data, dict) else None
    if not isinstance(compute, dict) or "placementGroupId" not in compute:
        raise HarnessError(f"{host}: instance metadata has no compute.placementGroupId")
    return compute


def azure_graph(computes: Mapping[str, Mapping[str, Any]]) -> FabricGraph:
    """The provider's graph of the hosts, from host -> IMDS ``compute``: one switch per
    placement group; a host in none is left out and named in the warnings."""
    paths: dict[str, list[str]] = {}
    warnings: list[str] = []
    for host, compute in computes.items():
        group = str(compute.get("placementGroupId") or "")
        if not group:
            warnings.append(
                f"{host}: no placement group (not a scale set VM: off the scale set's InfiniBand)"
            )
            continue
        paths[host] = [f"pg-{group}"]
    try:
        return graph_from_paths(paths, warnings)
    except GraphError as error:
        raise HarnessError(str(error)) from error


def graph(
    readings: Mapping[str, tuple[str, int, str]], region: str, run: Any = None
) -> FabricGraph:
    """The placement of the hosts from what each printed for ``PLACEMENT_COMMAND`` (host ->
    stdout, exit status, stderr), read as it is (``region`` and ``run`` are not needed)."""
    del region, run
    return azure_graph({h: imds_compute(h, *reading) for h, reading in readings.items()})
