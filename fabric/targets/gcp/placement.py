"""Where GCP places the compute VMs (verify layer): each VM's
``instance/attributes/physical_host_topology`` metadata key (no API call, no credentials; the
command ``PLACEMENT_COMMAND`` of this target's ``model.py``); a VM without the key (not on
reserved blocks) has no placement. ``fabric.verify.cloud_topology.provider_graph`` calls
:func:`graph`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fabric.graph import FabricGraph, GraphError
from fabric.topology.cloud import CURL_HTTP_ERROR, gce_instances_from_metadata, gce_topology_graph
from fabric.verify.harness_error import HarnessError

__all__ = ["gce_graph", "gce_reading", "graph"]


def gce_reading(host: str, stdout: str, rc: int, stderr: str) -> str:
    """The ``physical_host_topology`` text of ``host``; ``""`` where the key is absent."""
    if rc == CURL_HTTP_ERROR:
        return ""
    if rc != 0:
        raise HarnessError(
            f"{host}: the metadata server did not answer (exit {rc}): {stderr.strip()[:200]}"
        )
    return stdout


def gce_graph(readings: Mapping[str, str]) -> FabricGraph:
    """The provider's graph of the hosts, from host -> ``physical_host_topology`` text."""
    try:
        return gce_topology_graph(gce_instances_from_metadata(readings))
    except GraphError as error:
        raise HarnessError(str(error)) from error


def graph(
    readings: Mapping[str, tuple[str, int, str]], region: str, run: Any = None
) -> FabricGraph:
    """The placement of the hosts from what each printed for ``PLACEMENT_COMMAND`` (host ->
    stdout, exit status, stderr), read as it is (``region`` and ``run`` are not needed)."""
    del region, run
    return gce_graph({h: gce_reading(h, *reading) for h, reading in readings.items()})
