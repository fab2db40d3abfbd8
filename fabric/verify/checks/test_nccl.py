"""What training sees: an NCCL all-reduce over the declared network at the expected bandwidth.

Each GPU node's all-reduce (NVLink), then the nodes below each leaf group and across the
spines, through Slurm's ``srun`` from the controller where the cluster has Slurm (in the image
``slurm.nccl_container`` names, through pyxis/enroot, where set). The harness
is :mod:`fabric.verify.nccl_run` (the same one ``python -m fabric.verify.nccl_local`` runs);
the judging, :mod:`fabric.verify.nccl`: NCCL must use the declared network (IB or RoCE with
GPUDirect RDMA, Libfabric/efa, the A3 plugin) and reach the catalog's bus bandwidth. A failing
multi-node run is bisected to the slow nodes, rerunning halves.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from typing import Any

import pytest

from fabric.catalog import multi_node_allreduce, single_node_allreduce
from fabric.model.gpus import NODE_BIN_DIR
from fabric.targets import hook
from fabric.verify.bandwidth import Exclusive
from fabric.verify.facts import Facts
from fabric.verify.gids import roce_gid_index
from fabric.verify.harness_error import HarnessError
from fabric.verify.nccl import NetworkExpectation, RunShape, bisect, expectation, judge_shape
from fabric.verify.nccl_run import (
    NcclHarnessError,
    NcclTest,
    Outcome,
    build_command,
    execute,
    nccl_env,
    srun_wrap,
)
from fabric.verify.plan import CheckPlan, NcclRun

#: Seconds one nccl-tests run may take (a 16 GiB single-node sweep takes about a minute).
RUN_SECONDS = 600
#: Multi-node runs a bisection may add.
BISECT_RUNS = 12


def _runner(host: Any):
    """A runner over a testinfra host: the command under ``timeout``; 124 is the harness's."""

    def run(argv: Sequence[str], timeout: float) -> tuple[int, str]:
        result = host.run(f"timeout {int(timeout)} {shlex.join(argv)}")
        if result.rc == 124:
            raise NcclHarnessError(f"{argv[0]} ran past its {timeout:g} s timeout")
        if result.rc == 127 and not result.stdout.strip():
            raise NcclHarnessError(f"{argv[0]}: not found: {result.stderr.strip()[:200]}")
        return result.rc, result.stdout + result.stderr

    return run


def _expect(
    plan: CheckPlan, facts: Facts, run: NcclRun
) -> tuple[NetworkExpectation, dict[str, str]]:
    """The network NCCL must use on this spec's fabric, and the run's environment for it; what
    the target adds (GCP's transport, AWS's GPUDirect RDMA and aws-ofi-nccl release) is its
    ``checks`` part's ``nccl_expectation``."""
    kind = plan.spec.fabric.kind
    target = hook(plan.spec.target, "checks", "nccl_expectation")
    given = target(plan.spec, run.hosts[0]) if target else {}
    gid = None
    if kind == "roce" and run.hcas:
        gid = roce_gid_index(facts.parsed(run.hosts[0], "show_gids", "show_gids"), run.hcas[0])
        if gid is None:
            raise HarnessError(
                f"{run.hosts[0]}: show_gids lists no RoCE v2 IPv4 GID on {run.hcas[0]}"
            )
    expect = expectation(
        kind,
        transport=given.get("transport"),
        gdr=given.get("gdr", True),
        hcas=run.hcas,
        plugin_version=given.get("plugin_version"),
    )
    return expect, nccl_env(kind, hcas=run.hcas, gid_index=gid, algorithm="Ring")


def _multi(plan: CheckPlan, facts: Facts, host: Any, run: NcclRun, hosts: Sequence[str]) -> Outcome:
    expect, env = _expect(plan, facts, run)
    inner = build_command(
        NcclTest(gpus=1, begin="1G", end="8G"), env, f"{NODE_BIN_DIR}/all_reduce_perf"
    )
    command = srun_wrap(
        inner,
        hosts,
        run.gpus_per_node,
        run.gpus_per_node,
        RUN_SECONDS,
        container=plan.spec.slurm.nccl_container,
    )
    target = multi_node_allreduce(run.rate_gbps or 0, len(run.hcas)) if run.hcas else None
    shape = RunShape(len(hosts), len(hosts) * run.gpus_per_node)
    return execute(command, expect, target, RUN_SECONDS, _runner(host), shape)


@pytest.mark.family("nccl")
def test_nccl_allreduce(
    host, facts: Facts, plan: CheckPlan, nccl_run: NcclRun, exclusive: Exclusive
) -> None:
    """nccl-tests all_reduce_perf: NCCL's network as declared, bus bandwidth at its floor;
    every host of the run held meanwhile (no GPUDirect pair or other run on them)."""
    with exclusive(nccl_run.hosts):
        _allreduce(host, facts, plan, nccl_run)


def _allreduce(host: Any, facts: Facts, plan: CheckPlan, nccl_run: NcclRun) -> None:
    try:
        if nccl_run.scope == "node":
            test = NcclTest(gpus=nccl_run.gpus_per_node, begin="1G", end="16G")
            command = build_command(test, nccl_env(), f"{NODE_BIN_DIR}/all_reduce_perf")
            if plan.slurm_controller:
                command = srun_wrap(
                    command,
                    nccl_run.hosts,
                    1,
                    nccl_run.gpus_per_node,
                    RUN_SECONDS,
                    container=plan.spec.slurm.nccl_container,
                )
            target = single_node_allreduce(nccl_run.gpu_type, nccl_run.gpus_per_node)
            shape = RunShape(1, nccl_run.gpus_per_node)
            outcome = execute(command, None, target, RUN_SECONDS, _runner(host), shape)
        else:
            outcome = _multi(plan, facts, host, nccl_run, nccl_run.hosts)
    except NcclHarnessError as err:
        raise HarnessError(f"{nccl_run.id}: {err}") from err
    problems = list(outcome.verdict.problems)
    asked = RunShape(len(nccl_run.hosts), len(nccl_run.hosts) * nccl_run.gpus_per_node)
    launch = outcome.table is not None and judge_shape(outcome.table, asked)
    # a run that measured nothing fails the same way on every half: nothing to bisect
    if problems and not launch and nccl_run.scope != "node" and len(nccl_run.hosts) > 2:
        try:
            finding = bisect(
                nccl_run.hosts,
                lambda subset: _multi(plan, facts, host, nccl_run, subset).verdict.ok,
                max_runs=BISECT_RUNS,
            )
            problems.append(finding.describe())
        except (NcclHarnessError, RuntimeError) as err:
            problems.append(f"bisection stopped: {err}")
    assert not problems, f"{nccl_run.id}: {'; '.join(problems)}"
