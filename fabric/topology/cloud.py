"""Slurm topology of cloud instances from the provider's own placement data, as a ``FabricGraph``
that the InfiniBand writer (``fabric.topology.slurm``: tree, block, topology.yaml) turns into
Slurm's files unchanged.

- AWS: ``DescribeInstanceTopology`` gives every running instance its ``NetworkNodes``, the
  node set of three (p6-b200: four) network layers, top first; the last is the node the
  instance connects to (EC2 User Guide, "How instance topology works").
- GCE: ``resourceStatus.physicalHostTopology`` gives ``cluster``, ``block``, ``subBlock`` (and
  ``host``) of an A3/A4 VM on reserved blocks (AI Hypercomputer, "View topology of a compute
  instance"); inside the VM the metadata key ``instance/attributes/physical_host_topology``
  gives the same object (``gce_instances_from_metadata``); ``resourceStatus.physicalHost`` the
  same path as ``/cluster/block/subblock`` on older images of the API.

As NVIDIA topograph does, each network layer becomes a switch level: the bottom node (AWS) or
sub-block (GCE) is the leaf switch that lists the instances, the upper layers list the switches
below them; topology/block makes one block per leaf. Instances the provider gives no placement
for (not running, type not supported) are left out and named in ``warnings``: Slurm puts a
node missing from topology.conf nowhere, so the caller reports them.

Provider data carries no link speed: the links of the graph are structural and carry
``rate_gbps`` 0, which no topology output reads.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from typing import Any

from fabric.graph import Ca, FabricGraph, GraphError, Link, Switch

__all__ = [
    "CURL_HTTP_ERROR",
    "aws_topology_graph",
    "gce_instances_from_metadata",
    "gce_topology_graph",
    "graph_from_paths",
]

# What each compute node runs to give its placement (the hand-off and the check run the same).
#: IMDSv2: a session token, then the instance id (documented endpoint).
IMDS_INSTANCE_ID = (
    "t=$(curl -sS -m 5 -X PUT http://169.254.169.254/latest/api/token "
    "-H 'X-aws-ec2-metadata-token-ttl-seconds: 60') && "
    'curl -sS -f -m 5 -H "X-aws-ec2-metadata-token: $t" '
    "http://169.254.169.254/latest/meta-data/instance-id"
)

#: GCE metadata key of the VM's physical placement; curl -f exits 22 on its 404 (no key).
GCE_PHYSICAL_HOST_TOPOLOGY = (
    "curl -sS -f -m 5 -H 'Metadata-Flavor: Google' "
    "http://metadata.google.internal/computeMetadata/v1/instance/attributes/physical_host_topology"
)

#: The older metadata key: the VM's path ``/cluster/block/subblock/host``.
GCE_PHYSICAL_HOST = (
    "curl -sS -f -m 5 -H 'Metadata-Flavor: Google' "
    "http://metadata.google.internal/computeMetadata/v1/instance/attributes/physical_host"
)

#: curl's exit status for an HTTP error (``-f``): the key is absent.
CURL_HTTP_ERROR = 22

#: A VM's placement on GCE: the topology key, else the older path key; neither (HTTP error on
#: both) prints nothing and exits 0, a metadata server that does not answer keeps curl's status.
GCE_PLACEMENT = (
    f"out=$({GCE_PHYSICAL_HOST_TOPOLOGY}); rc=$?; "
    f"if [ $rc = {CURL_HTTP_ERROR} ]; then out=$({GCE_PHYSICAL_HOST}); rc=$?; fi; "
    f"if [ $rc = {CURL_HTTP_ERROR} ]; then exit 0; fi; printf '%s' \"$out\"; exit $rc"
)

#: What Slurm accepts as a switch or block name (no spaces, commas or brackets).
_SLURM_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]*$")


def _guid(kind: str, name: str) -> str:
    """A stable GUID-shaped key for a switch or host named by the provider."""
    return "0x" + hashlib.sha256(f"{kind}:{name}".encode()).hexdigest()[:16]


def graph_from_paths(paths: Mapping[str, Sequence[str]], warnings: list[str]) -> FabricGraph:
    """A graph from host -> switch path (top layer first): one switch per distinct path prefix,
    named by its last element; a host hangs off the last switch of its path."""
    switches: dict[str, Switch] = {}
    cas: dict[str, Ca] = {}
    links: list[Link] = []
    children: dict[str, set[str]] = {}
    owner: dict[str, tuple[str, ...]] = {}
    for host, path in paths.items():
        for depth, name in enumerate(path):
            if not _SLURM_NAME.match(name):
                raise GraphError(
                    f"{host}: topology layer {depth} is named {name!r}, which Slurm cannot use "
                    "as a switch name (letters, digits, _ . : - only)"
                )
            prefix = tuple(path[: depth + 1])
            if owner.setdefault(name, prefix) != prefix:
                raise GraphError(
                    f"{host}: network node {name} sits under {list(prefix[:-1])} here and under "
                    f"{list(owner[name][:-1])} for another instance; the provider's data "
                    "contradicts itself"
                )
            guid = _guid("switch", name)
            if guid not in switches:
                switches[guid] = Switch(guid, name, "provider network node", 0)
            if depth:
                parent = _guid("switch", path[depth - 1])
                if guid not in children.setdefault(parent, set()):
                    children[parent].add(guid)
                    links.append(Link(parent, len(children[parent]), guid, 0, "1x", "SDR", 0.0))
        if not path:
            continue
        ca = _guid("host", host)
        cas[ca] = Ca(ca, host, "nic0", f"{host} nic0", 1)
        leaf = _guid("switch", path[-1])
        children.setdefault(leaf, set()).add(ca)
        links.append(Link(leaf, len(children[leaf]), ca, 1, "1x", "SDR", 0.0))
    ports: dict[str, int] = {}
    for link in links:  # a switch's ports: its links down and up
        ports[link.a_guid] = ports.get(link.a_guid, 0) + 1
        ports[link.b_guid] = ports.get(link.b_guid, 0) + 1
    switches = {g: sw._replace(ports=ports.get(g, 0)) for g, sw in switches.items()}
    return FabricGraph(switches=switches, cas=cas, links=links, warnings=warnings)


def aws_topology_graph(response: Mapping[str, Any], names: Mapping[str, str]) -> FabricGraph:
    """The graph of a ``DescribeInstanceTopology`` response (``Instances``, as the AWS CLI and
    the API's JSON give it). ``names``: instance id -> host name; other instances of the account
    are ignored."""
    instances = response.get("Instances")
    if not isinstance(instances, list):
        raise GraphError("not a DescribeInstanceTopology response: no Instances list")
    paths: dict[str, list[str]] = {}
    warnings: list[str] = []
    for item in instances:
        host = names.get(str(item.get("InstanceId")))
        if host is None:
            continue
        nodes = [str(n) for n in item.get("NetworkNodes") or []]
        if not nodes:
            warnings.append(f"{host}: no NetworkNodes (not running, or a type without topology)")
            continue
        paths[host] = nodes
    missing = sorted(set(names.values()) - set(paths) - {w.split(":")[0] for w in warnings})
    warnings += [f"{host}: not in the response" for host in missing]
    return graph_from_paths(paths, warnings)


def gce_topology_graph(instances: Sequence[Mapping[str, Any]]) -> FabricGraph:
    """The graph of Compute Engine instances (``instances.get``/``list`` items, JSON): their
    ``resourceStatus.physicalHostTopology`` cluster / block / subBlock, else the levels of
    ``resourceStatus.physicalHost`` above the host. Instance names are the hosts; a switch is
    named by its whole path (block ids are unique per organization, not per cluster)."""
    paths: dict[str, list[str]] = {}
    warnings: list[str] = []
    for item in instances:
        host = str(item.get("name"))
        status = item.get("resourceStatus") or {}
        topo = status.get("physicalHostTopology") or {}
        levels = [str(topo.get(k) or "") for k in ("cluster", "block", "subBlock")]
        physical = str(status.get("physicalHost") or "")
        if all(levels):
            path = ["-".join(levels[: i + 1]) for i in range(3)]
        elif physical.startswith("/") and physical.count("/") >= 2:
            parts = physical.strip("/").split("/")[:-1]  # the levels above the host
            path = ["-".join(parts[: i + 1]) for i in range(len(parts))]
        else:
            warnings.append(f"{host}: no physical placement (not running, or no compact placement)")
            continue
        paths[host] = path
    return graph_from_paths(paths, warnings)


def gce_instances_from_metadata(readings: Mapping[str, str]) -> list[dict[str, Any]]:
    """``instances.list`` items from what each VM's metadata server says: host -> the text of
    ``instance/attributes/physical_host_topology`` (JSON), or ``""`` where the key is absent
    (a VM off reserved blocks), or of the older key ``physical_host`` (a path
    ``/cluster/block/subblock/host``). Other text raises ``GraphError``."""
    import json

    items: list[dict[str, Any]] = []
    for host, text in readings.items():
        topo: object = {}
        if text.strip().startswith("/"):
            items.append({"name": host, "resourceStatus": {"physicalHost": text.strip()}})
            continue
        if text.strip():
            try:
                topo = json.loads(text)
            except ValueError as error:
                raise GraphError(
                    f"{host}: physical_host_topology is not JSON ({error}): {text.strip()[:80]!r}"
                ) from error
        if not isinstance(topo, dict):
            raise GraphError(f"{host}: physical_host_topology is not a JSON object")
        items.append({"name": host, "resourceStatus": {"physicalHostTopology": topo}})
    return items
