"""``python -m fabric.verify.nccl_local``: one nccl-tests run here, through the check's harness.

For a single GPU machine with no SSH and no Slurm: the same :mod:`fabric.verify.nccl_run`
command building, parsing and judging as the ``nccl`` check family, run as a local
subprocess. Writes the raw output (``nccl_tests.log``) and the verdict (``verdict.json``) into
``--out`` and prints one line. Exit 0: passed; 1: the run was judged a failure; 2: bad usage
or a harness error (no binary, a timeout, nothing readable); 130: interrupted.

Example (one GPU, NCCL from pip's nvidia-nccl-cu13)::

    python -m fabric.verify.nccl_local --binary nccl-tests/build/all_reduce_perf \\
        --gpus 1 --out /tmp/nccl --nccl-lib auto

``--fabric infiniband`` (or ``roce``) judges the network as a multi-node check would: on a
machine without an RDMA device that is the Socket fallback, a failure naming its cause.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from fabric.catalog import single_node_allreduce
from fabric.verify.nccl import expectation
from fabric.verify.nccl_run import (
    NcclHarnessError,
    NcclTest,
    build_command,
    execute,
    nccl_env,
)

PROG = "python -m fabric.verify.nccl_local"


def _args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[1])
    parser.add_argument("--binary", required=True, help="path to an nccl-tests binary")
    parser.add_argument("--out", required=True, help="folder for nccl_tests.log and verdict.json")
    parser.add_argument("--gpus", type=int, default=1, help="GPUs (-g), default 1")
    parser.add_argument("--begin", default="8M", help="smallest message (-b), default 8M")
    parser.add_argument("--end", default="1G", help="largest message (-e), default 1G")
    parser.add_argument("--iters", type=int, default=None, help="iterations per size (-n)")
    parser.add_argument(
        "--fabric",
        choices=["none", "infiniband", "roce", "efa"],
        default="none",
        help="network NCCL must use (none: one node, NVLink, the network not judged)",
    )
    parser.add_argument("--hcas", default="", help="comma-separated RDMA devices (NCCL_IB_HCA)")
    parser.add_argument("--gid-index", type=int, default=None, help="RoCE GID index")
    parser.add_argument("--gpu-type", default=None, help="e.g. h100: judge the catalog floor")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds, default 600")
    parser.add_argument(
        "--nccl-lib",
        default=None,
        help="folder with libnccl.so.2 to put first on LD_LIBRARY_PATH ('auto': pip's "
        "nvidia-nccl wheel)",
    )
    parser.add_argument("--env", action="append", default=[], metavar="K=V", help="extra env")
    return parser.parse_args(argv)


def _nccl_lib(value: str) -> str:
    """``auto`` -> the folder holding pip's ``libnccl.so.2`` (the ``nvidia`` namespace package:
    ``nvidia/nccl/lib``, or wherever the wheel put it); else the folder given."""
    if value != "auto":
        return value
    import importlib.util

    spec = importlib.util.find_spec("nvidia")
    for root in (spec.submodule_search_locations or []) if spec else []:
        for found in sorted(Path(root).glob("**/libnccl.so.2")):
            return str(found.parent)
    raise NcclHarnessError("--nccl-lib auto: no libnccl.so.2 under a pip 'nvidia' package")


def main(argv: list[str] | None = None) -> int:
    """Run, write, print; the exit code as the module docstring says."""
    args = _args(argv)
    try:
        binary = Path(args.binary)
        if not binary.is_file() or not os.access(binary, os.X_OK):
            raise NcclHarnessError(f"--binary {args.binary}: not an executable file")
        extra = dict(item.split("=", 1) for item in args.env if "=" in item)
        if args.nccl_lib:
            path = os.environ.get("LD_LIBRARY_PATH", "")
            extra["LD_LIBRARY_PATH"] = _nccl_lib(args.nccl_lib) + (f":{path}" if path else "")
        hcas = [h for h in args.hcas.split(",") if h]
        kind = None if args.fabric == "none" else args.fabric
        env = nccl_env(kind, hcas=hcas, gid_index=args.gid_index, extra=extra)
        test = NcclTest(
            binary=binary.name, gpus=args.gpus, begin=args.begin, end=args.end, iters=args.iters
        )
        command = build_command(test, env, str(binary))
        expect = expectation(kind, hcas=hcas) if kind else None
        target = single_node_allreduce(args.gpu_type, args.gpus) if kind is None else None
        outcome = execute(command, expect, target, args.timeout)
    except NcclHarnessError as err:
        print(f"{PROG}: harness error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "nccl_tests.log").write_text(outcome.output)
    (out / "verdict.json").write_text(json.dumps(outcome.as_dict(), indent=2) + "\n")
    line = outcome.verdict.summary()
    if outcome.verdict.ok and outcome.verdict.notes:
        line += f"; note: {outcome.verdict.notes[0]}"
    print(f"nccl_local: {line}")
    return 0 if outcome.verdict.ok else 1


if __name__ == "__main__":
    sys.exit(main())
