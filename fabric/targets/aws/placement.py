"""Where AWS places the compute instances (verify layer): each instance's id from its instance
metadata (IMDSv2, the command ``PLACEMENT_COMMAND`` of this target's ``model.py``), then
``DescribeInstanceTopology`` for those ids through the AWS CLI on the machine running the
checks (it holds the account's credentials; the nodes need none), at most 100 ids a call.
``fabric.verify.cloud_topology.provider_graph`` calls :func:`graph`."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from fabric.graph import FabricGraph, GraphError
from fabric.redact import redact
from fabric.topology.cloud import aws_topology_graph
from fabric.verify.harness_error import HarnessError

__all__ = ["AWS_IDS_PER_CALL", "aws_graph", "describe_instance_topology", "graph", "instance_id"]

#: The lookup needs the instances' region (``--region`` of ``topology --from-placement``).
NEEDS_REGION = True

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


def graph(
    readings: Mapping[str, tuple[str, int, str]], region: str, run: Runner = _run
) -> FabricGraph:
    """The placement of the hosts from what each printed for ``PLACEMENT_COMMAND`` (host ->
    stdout, exit status, stderr): instance ids looked up in ``region``."""
    ids = {h: instance_id(h, *reading) for h, reading in readings.items()}
    _one_name_per_instance(ids)
    return aws_graph(ids, describe_instance_topology(list(ids.values()), region, run=run))
