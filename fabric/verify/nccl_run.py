"""The one nccl-tests harness: build the exact command, run it, parse it, judge it.

:func:`build_command` writes the command line (the binary and its ``-b/-e/-f/-g/-c`` options)
and :func:`nccl_env` its environment: ``NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET,ENV`` always
(what :mod:`fabric.parsers.nccl` reads), then per network the HCAs (``NCCL_IB_HCA``), the RoCE
GID index read from ``show_gids``, ``NCCL_ALGO``, what a fabric kind needs from the target's
catalog that declares it (``NCCL_ENV``: EFA's libfabric settings). :func:`srun_wrap`
puts it under Slurm's ``srun`` for a cluster with Slurm. :func:`execute` runs it through a
*runner* with a timeout: :func:`local_runner` (a subprocess here), or the check suite's testinfra
host (``checks/test_nccl.py``); :func:`evaluate` parses the output and judges it
(:mod:`fabric.verify.nccl`). A run that cannot be judged (the binary missing, a timeout, no
table and no NCCL line) is a :class:`NcclHarnessError`, never a fabric failure.

Imports stay light (the parsers' pydantic, the targets' catalogs and the standard library) so that
``python -m fabric.verify.nccl_local`` runs on a GPU machine with nothing else installed.
"""

from __future__ import annotations

import os
import shlex
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from fabric.catalog import BusBwTarget
from fabric.parsers import ParseError
from fabric.parsers.nccl import NcclLog
from fabric.parsers.nccl import parse as parse_log
from fabric.parsers.nccl_tests import NcclTestsReport
from fabric.parsers.nccl_tests import parse as parse_table
from fabric.targets import hooks
from fabric.verify.nccl import NetworkExpectation, RunShape, Verdict, judge

#: nccl-tests binaries railyard runs (their ``-o``/``-d`` defaults: sum, float).
BINARIES = ("all_reduce_perf", "all_gather_perf", "reduce_scatter_perf", "alltoall_perf")


#: Environment every run gets: the INFO lines the parser reads, and no more subsystems (ENV:
#: NCCL's ``X set by environment to Y.`` lines, printed as ``INFO(NCCL_ENV, ...)``).
DEBUG_ENV = {"NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "INIT,NET,ENV"}


def fabric_env(kind: str | None) -> dict[str, str]:
    """What a run on a fabric of ``kind`` adds: the ``NCCL_ENV`` entry of the target's catalog
    that declares the kind (EFA: its jobs' own libfabric environment, device RDMA on)."""
    for _, envs in hooks("catalog", "NCCL_ENV"):
        if kind in envs:
            return dict(envs[kind])
    return {}


#: EFA through aws-ofi-nccl: the jobs' own environment, from the target's catalog.
EFA_ENV = fabric_env("efa")


class NcclHarnessError(RuntimeError):
    """The run could not be judged (no binary, a timeout, nothing readable): the harness's
    problem, reported as an error and never as the fabric's."""


@dataclass(frozen=True)
class NcclTest:
    """One nccl-tests invocation: the binary and its sweep.

    ``gpus`` is ``-g`` (GPUs per process); ``begin``/``end``/``factor`` are ``-b/-e/-f``;
    ``check`` adds ``-c 1`` (validate results: ``#wrong``); ``iters``/``warmup`` are
    ``-n``/``-w`` when set.
    """

    binary: str = "all_reduce_perf"
    gpus: int = 1
    begin: str = "8M"
    end: str = "1G"
    factor: int = 2
    check: bool = True
    iters: int | None = None
    warmup: int | None = None

    def argv(self) -> list[str]:
        """The binary's own arguments."""
        args = [self.binary, "-b", self.begin, "-e", self.end, "-f", str(self.factor)]
        args += ["-g", str(self.gpus), "-c", "1" if self.check else "0"]
        if self.iters is not None:
            args += ["-n", str(self.iters)]
        if self.warmup is not None:
            args += ["-w", str(self.warmup)]
        return args


def nccl_env(
    kind: str | None = None,
    *,
    hcas: Sequence[str] = (),
    gid_index: int | None = None,
    algorithm: str | None = None,
    socket_ifname: str | None = None,
    extra: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The run's environment for a fabric of ``kind`` (None: a single node, NVLink only).

    InfiniBand and RoCE name their HCAs exactly (``NCCL_IB_HCA==mlx5_0:1,...``: the ``=``
    prefix matches whole names, so ``mlx5_1`` does not also pick ``mlx5_10``); RoCE adds the
    GID index (``show_gids``: the RoCE v2 IPv4 entry); EFA sets libfabric's provider.
    ``algorithm`` pins ``NCCL_ALGO`` (multi-node runs use Ring: Tree inflates two-node busbw).
    """
    env = dict(DEBUG_ENV)
    if kind in ("infiniband", "roce") and hcas:
        env["NCCL_IB_HCA"] = "=" + ",".join(f"{h}:1" for h in hcas)
    if kind == "roce" and gid_index is not None:
        env["NCCL_IB_GID_INDEX"] = str(gid_index)
    env |= fabric_env(kind)
    if algorithm:
        env["NCCL_ALGO"] = algorithm
    if socket_ifname:
        env["NCCL_SOCKET_IFNAME"] = socket_ifname
    return env | dict(extra or {})


def build_command(
    test: NcclTest, env: Mapping[str, str], binary_path: str | None = None
) -> list[str]:
    """``env K=V ... BINARY ARGS``: the exact command, its environment on the line (so the
    same argv runs locally, over SSH and under srun)."""
    argv = test.argv()
    if binary_path:
        argv[0] = binary_path
    return ["env", *(f"{k}={v}" for k, v in env.items()), *argv]


def srun_wrap(
    command: Sequence[str],
    nodes: Sequence[str],
    tasks_per_node: int,
    gpus_per_node: int,
    time_limit_s: int,
    mpi: str = "pmix",
    container: str | None = None,
) -> list[str]:
    """The command under ``srun``: one task per GPU on each of ``nodes`` (nccl-tests built
    with MPI=1), exclusive nodes, Slurm's own time limit a little under the harness's.

    ``--cpu-bind=none``: Slurm's task binding (``task/affinity``) would pin each rank to its
    share of cores, wherever they lie; NCCL sets each rank's affinity to its GPU's NUMA node
    itself (``Setting affinity for GPU N``), within the mask it is given. ``container`` runs it
    in that image through pyxis/enroot (``--container-image``), the nodes' own drivers and
    devices mapped in by enroot's hooks."""
    minutes = max(1, time_limit_s // 60)
    argv = [
        "srun",
        f"--nodes={len(nodes)}",
        f"--nodelist={','.join(nodes)}",
        f"--ntasks-per-node={tasks_per_node}",
        f"--gpus-per-node={gpus_per_node}",
        "--exclusive",
        f"--time={minutes}",
        f"--mpi={mpi}",
        "--cpu-bind=none",
    ]
    if container:
        argv.append(f"--container-image={container}")
    return [*argv, *command]


#: A runner runs an argv with a timeout (s) and returns (exit status, stdout+stderr).
Runner = Callable[[Sequence[str], float], tuple[int, str]]


def local_runner(argv: Sequence[str], timeout: float) -> tuple[int, str]:
    """Run ``argv`` here, stdout and stderr together; a timeout or a missing program is a
    harness error."""
    try:
        done = subprocess.run(
            list(argv),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            timeout=timeout,
            check=False,
            env=os.environ.copy(),
        )
    except subprocess.TimeoutExpired as err:
        raise NcclHarnessError(f"{shlex.join(argv)} ran past its {timeout:g} s timeout") from err
    except OSError as err:
        raise NcclHarnessError(f"cannot run {argv[0]}: {err.strerror}") from err
    return done.returncode, done.stdout.decode("utf-8", "replace")


@dataclass
class Outcome:
    """A judged run: the command, its exit status and output, what the parsers read."""

    command: list[str]
    rc: int
    output: str
    log: NcclLog | None
    table: NcclTestsReport | None
    verdict: Verdict
    parse_errors: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, object]:
        """JSON-ready, without the raw output (written beside it)."""
        return {
            "command": shlex.join(self.command),
            "rc": self.rc,
            "verdict": self.verdict.as_dict(),
            "summary": self.verdict.summary(),
            "nccl_log": self.log.model_dump(mode="json") if self.log else None,
            "table": self.table.model_dump(mode="json") if self.table else None,
            "parse_errors": self.parse_errors,
        }


def evaluate(
    command: Sequence[str],
    rc: int,
    output: str,
    expect: NetworkExpectation | None,
    target: BusBwTarget | None,
    shape: RunShape | None = None,
) -> Outcome:
    """Parse ``output`` (NCCL's INFO lines and the nccl-tests table, interleaved) and judge it
    (``shape``: the nodes and ranks the job asked for). Output with neither is the harness's
    problem (the binary did not start, say)."""
    errors: list[str] = []
    log = table = None
    try:
        log = parse_log(output)
    except ParseError as err:
        errors.append(str(err))
    try:
        table = parse_table(output)
    except ParseError as err:
        errors.append(str(err))
    tail = " | ".join(output.strip().splitlines()[-3:]) or "no output"
    name = next((Path(c).name for c in command if c.endswith("_perf")), "nccl-tests")
    if log is None and table is None:
        raise NcclHarnessError(
            f"{name} exited {rc} with no NCCL log and no nccl-tests table: {tail}"
        )
    verdict = judge(log, table, expect, target, shape)
    if table is None:
        warn = log.warnings[-1] if log and log.warnings else tail
        verdict.problems.append(f"{name} printed no result table: {warn}")
        verdict.ok = False
    if rc != 0:
        verdict.problems.append(f"nccl-tests exited {rc}")
        verdict.ok = False
    return Outcome(list(command), rc, output, log, table, verdict, errors)


def execute(
    command: Sequence[str],
    expect: NetworkExpectation | None,
    target: BusBwTarget | None,
    timeout: float,
    runner: Runner = local_runner,
    shape: RunShape | None = None,
) -> Outcome:
    """Run ``command`` through ``runner`` within ``timeout`` seconds, then :func:`evaluate`."""
    rc, output = runner(command, timeout)
    return evaluate(command, rc, output, expect, target, shape)
