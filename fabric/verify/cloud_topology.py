"""Slurm topology on a cloud: the provider's placement of the compute instances, read when the
check runs, turned into the tree Slurm should show by the InfiniBand writer
(``fabric.topology.cloud`` -> ``fabric.topology.render.slurm_switch_view``), and compared with
``scontrol show topology`` on the controller.

- AWS: each instance's id from its instance metadata (IMDSv2), then ``DescribeInstanceTopology``
  for those ids through the AWS CLI on the machine running the checks (it holds the account's
  credentials; the nodes need none). At most 100 ids a call, as the API takes them.
- GCP: each VM's ``instance/attributes/physical_host_topology`` metadata key (no API call, no
  credentials); a VM without the key (not on reserved blocks) has no placement.

Reading placement is the harness's part: a metadata server or CLI that does not answer is a
:class:`HarnessError`, never a fabric failure. An instance the provider gives no placement for
is named in the check's failure (Slurm would place it nowhere).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from fabric.graph import FabricGraph, GraphError
from fabric.redact import redact
from fabric.topology.cloud import (
    CURL_HTTP_ERROR,
    PLACEMENT_COMMANDS,
    aws_topology_graph,
    gce_instances_from_metadata,
    gce_topology_graph,
)
from fabric.topology.render import slurm_switch_view
from fabric.verify.harness import HarnessError
from fabric.verify.slurm import parse_show_topology

__all__ = [
    "CURL_HTTP_ERROR",
    "PLACEMENT_COMMANDS",
    "describe_instance_topology",
    "provider_graph",
    "topology_problems",
]

#: DescribeInstanceTopology takes at most 100 instance ids a call.
AWS_IDS_PER_CALL = 100

#: How long one AWS CLI call may take.
AWS_CLI_TIMEOUT_S = 60

Runner = Callable[[Sequence[str], int], "subprocess.CompletedProcess[str]"]


def _run(argv: Sequence[str], timeout: int) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout, check=False)


def describe_instance_topology(
    instance_ids: Sequence[str], region: str, aws: str = "aws", run: Runner = _run
) -> dict[str, Any]:
    """``aws ec2 describe-instance-topology`` for ``instance_ids`` in ``region``, the calls'
    ``Instances`` joined into one response (the CLI follows ``NextToken`` itself)."""
    instances: list[Any] = []
    ids = list(instance_ids)
    for start in range(0, len(ids), AWS_IDS_PER_CALL):
        argv = [aws, "ec2", "describe-instance-topology", "--region", region, "--output", "json"]
        argv += ["--instance-ids", *ids[start : start + AWS_IDS_PER_CALL]]
        try:
            done = run(argv, AWS_CLI_TIMEOUT_S)
        except FileNotFoundError as error:
            raise HarnessError(
                f"{aws} not found: the AWS CLI reads DescribeInstanceTopology on the machine "
                "running the checks (with the account's credentials)"
            ) from error
        except subprocess.TimeoutExpired as error:
            raise HarnessError(
                f"aws ec2 describe-instance-topology gave no answer within {AWS_CLI_TIMEOUT_S} s"
            ) from error
        if done.returncode != 0:
            said = (done.stderr.strip().splitlines() or ["no error text"])[-1]
            raise HarnessError(
                f"aws ec2 describe-instance-topology failed (exit {done.returncode}): "
                f"{redact(said)[:300]}"
            )
        try:
            response = json.loads(done.stdout)
        except ValueError as error:
            raise HarnessError(
                f"aws ec2 describe-instance-topology printed no JSON: {done.stdout.strip()[:80]!r}"
            ) from error
        if not isinstance(response, dict) or not isinstance(response.get("Instances"), list):
            raise HarnessError("aws ec2 describe-instance-topology: no Instances list")
        instances += response["Instances"]
    return {"Instances": instances}


def instance_id(host: str, stdout: str, rc: int, stderr: str) -> str:
    """The instance id IMDSv2 printed for ``host``; anything else is a harness error."""
    got = stdout.strip()
    if rc != 0 or not got.startswith("i-") or any(c.isspace() for c in got):
        said = stderr.strip()[:200] or got[:80] or "nothing"
        raise HarnessError(f"{host}: instance metadata gave no instance id (exit {rc}): {said}")
    return got


def gce_reading(host: str, stdout: str, rc: int, stderr: str) -> str:
    """The ``physical_host_topology`` text of ``host``; ``""`` where the key is absent."""
    if rc == CURL_HTTP_ERROR:
        return ""
    if rc != 0:
        raise HarnessError(
            f"{host}: the metadata server did not answer (exit {rc}): {stderr.strip()[:200]}"
        )
    return stdout


def _one_name_per_instance(ids: Mapping[str, str]) -> None:
    """Two hosts answering as one instance is the inventory's mistake, named before any call."""
    seen: dict[str, str] = {}
    for host, iid in ids.items():
        if iid in seen:
            raise HarnessError(
                f"{seen[iid]} and {host} both answer as instance {iid}: the inventory reaches "
                "one instance under two names"
            )
        seen[iid] = host


def aws_graph(ids: Mapping[str, str], response: Mapping[str, Any]) -> FabricGraph:
    """The provider's graph of the hosts, from host -> instance id and the API's response."""
    _one_name_per_instance(ids)
    try:
        return aws_topology_graph(response, {iid: host for host, iid in ids.items()})
    except GraphError as error:
        raise HarnessError(f"DescribeInstanceTopology: {error}") from error


def gce_graph(readings: Mapping[str, str]) -> FabricGraph:
    """The provider's graph of the hosts, from host -> ``physical_host_topology`` text."""
    try:
        return gce_topology_graph(gce_instances_from_metadata(readings))
    except GraphError as error:
        raise HarnessError(str(error)) from error


def provider_graph(
    provider: str,
    readings: Mapping[str, tuple[str, int, str]],
    region: str,
    run: Runner = _run,
) -> FabricGraph:
    """The provider's placement of the hosts from what ``PLACEMENT_COMMANDS[provider]`` gave on
    each (host -> stdout, exit status, stderr): AWS instance ids looked up with
    DescribeInstanceTopology in ``region``, GCE metadata read as it is."""
    if provider == "aws":
        ids = {h: instance_id(h, *reading) for h, reading in readings.items()}
        _one_name_per_instance(ids)
        return aws_graph(ids, describe_instance_topology(list(ids.values()), region, run=run))
    if provider == "gcp":
        return gce_graph({h: gce_reading(h, *reading) for h, reading in readings.items()})
    raise HarnessError(f"no placement source for provider {provider!r} (aws, gcp)")


def topology_problems(graph: FabricGraph, nodes: Sequence[str], scontrol: str) -> list[str]:
    """What ``scontrol show topology`` (its text) shows against the tree the provider's
    placement of ``nodes`` gives: a switch missing, different or extra; an instance the
    provider gives no placement for."""
    expected = slurm_switch_view(graph, nodes)
    loaded = parse_show_topology(scontrol)
    problems = [f"no placement from the provider: {w}" for w in graph.warnings]
    if not expected:
        return problems
    if not loaded:
        problems.append(
            "Slurm shows no topology (TopologyPlugin none, or no topology.conf loaded); the "
            f"provider places the nodes under {len(expected)} network nodes"
        )
        return problems
    from fabric.hostlist import expand

    for name, (nodes_below, kids) in sorted(expected.items()):
        fields = loaded.get(name)
        if fields is None:
            problems.append(
                f"Slurm has no switch {name} (the provider's network node above {nodes_below})"
            )
            continue
        got = (
            sorted(expand(fields["Nodes"])) if fields.get("Nodes") else [],
            sorted(expand(fields["Switches"])) if fields.get("Switches") else [],
        )
        if got != (nodes_below, kids):
            problems.append(
                f"Slurm switch {name}: nodes {got[0]} switches {got[1]}; the provider places "
                f"nodes {nodes_below} switches {kids} there"
            )
    extra = sorted(set(loaded) - set(expected))
    if extra:
        problems.append(f"Slurm has switches the provider does not place the nodes under: {extra}")
    return problems
