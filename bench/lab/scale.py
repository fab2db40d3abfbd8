"""Scale benchmark of the lab: bring up an N-node lab under its own stack and file backend (in a
temporary directory), measure it, grow it by one node and back, destroy it, check nothing is left.

Run (takes minutes; run it once, not in a loop):
    CONTAINERS_CONF=scripts/containers.conf PYTHONPATH=. .venv/bin/python -m bench.lab.scale [-n 32]

Measured: wall time of ``pulumi up`` (first, second = no changes, N+1, back to N, destroy), memory
of each node container (cgroup ``memory.usage_in_bytes``, the figure ``podman stats`` shows), the
host's used-memory delta (MemTotal - MemAvailable), the RSS of ibsim, the Redfish emulator and its
notifier, and Pulumi's resource-change summary of each step. Results go to bench/lab/RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import secrets
import shutil
import statistics
import subprocess
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
PULUMI_BIN = Path.home() / ".cache" / "railyard" / "pulumi" / "v3.259.0" / "bin"
RESULTS = Path(__file__).with_name("RESULTS.md")
#: The bench's own addresses and ports: distinct from the default lab (198.18.0-1.x, 8000, 7070)
#: and from the integration tests (198.18.160-235.x, 17200-17740, 18200-18330).
MGMT_SUBNET, BMC_SUBNET, BMC_PORT, IBSIM_PORT = "198.18.40.0/24", "198.18.41.0/24", 18400, 17400
PINNED = {"sm1": "198.18.40.200", "sm2": "198.18.40.201", "ctl1": "198.18.40.202"}


def spec(n: int, room: int = 1) -> dict[str, Any]:
    """An N-compute-node fat tree (2+ leaves, 1 spine), 2 SMs, 1 controller.

    Leaves are sized for ``n + room`` compute nodes so growing by ``room`` keeps the topology.
    """
    hca = {"device": "mlx5_0", "rate_gbps": 400, "width": "4x"}
    fabric_nodes = n + room + 2
    leaves = max(2, math.ceil(fabric_nodes / 32))
    width = max(2, len(str(n)))
    return {
        "name": "bench",
        "target": "lab",
        "nodes": [
            {
                "names": f"gpu[{1:0{width}d}-{n:0{width}d}]",
                "role": "compute",
                "gpus": 8,
                "gpu_type": "h100",
                "hcas": [hca],
            },
            {"names": "sm[1-2]", "role": "sm", "hcas": [hca]},
            {"names": "ctl1", "role": "controller"},
        ],
        "fabric": {
            "kind": "infiniband",
            "mtu": 4096,
            "topology": {
                "kind": "fat-tree",
                "leaves": leaves,
                "spines": 1,
                "ports_per_switch": 64,
                "nodes_per_leaf": math.ceil(fabric_nodes / leaves),
                "uplinks_per_leaf": 4,
                "link_rate_gbps": 400,
                "link_width": "4x",
            },
            "infiniband": {
                "routing_engine": "ftree",
                "subnet_managers": [
                    {"host": "sm1", "priority": 14},
                    {"host": "sm2", "priority": 10},
                ],
            },
        },
        # Pinned: plan.py hands out addresses in spec order, so without pins a new gpuNN shifts
        # sm1, sm2 and ctl1 to new addresses and Pulumi replaces them (measured; see RESULTS.md).
        "management": {"subnet": MGMT_SUBNET, "addresses": PINNED},
        "bmc": {"subnet": BMC_SUBNET, "username": "admin", "verify_tls": False},
        "slurm": {"controller": "ctl1"},
        "lab": {"bmc_port": BMC_PORT, "ibsim_port": IBSIM_PORT},
    }


def used_memory() -> int:
    """Host memory in use (bytes): MemTotal - MemAvailable."""
    info = {
        line.split(":")[0]: int(line.split()[1]) * 1024
        for line in Path("/proc/meminfo").read_text().splitlines()
    }
    return info["MemTotal"] - info["MemAvailable"]


def rss(pid: int) -> int:
    """Resident set size of ``pid`` in bytes (0 when gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def container_memory(prefix: str) -> dict[str, int]:
    """Container name -> cgroup memory usage in bytes, for every running container of ``prefix``."""
    from fabric.lab.podman import podman

    out = podman(
        ["ps", "--filter", f"name=^{prefix}-", "--format", "{{.Names}} {{.ID}}", "--no-trunc"]
    ).stdout
    usage: dict[str, int] = {}
    for line in out.splitlines():
        name, cid = line.split()
        cgroup = podman(["inspect", "--format", "{{.State.CgroupPath}}", cid]).stdout.strip()
        for path in (
            Path("/sys/fs/cgroup/memory") / cgroup.lstrip("/") / "memory.usage_in_bytes",
            Path("/sys/fs/cgroup") / cgroup.lstrip("/") / "memory.current",
        ):
            if path.is_file():
                usage[name] = int(path.read_text())
                break
    return usage


def helper_pids(stack: Any) -> dict[str, int]:
    """ibsim / emulator / notifier pids from the stack's state."""
    pids: dict[str, int] = {}
    for res in stack.export_stack().deployment["resources"]:
        outs = res.get("outputs", {})
        if res["urn"].endswith("-ibsim") and outs.get("out_helper"):
            pids["ibsim"] = outs["out_helper"]["pid"]
        if res["urn"].endswith("-bmc-emulator") and outs.get("out_helpers"):
            pids["sushy-emulator"] = outs["out_helpers"]["emulator"]["pid"]
            pids["notifier"] = outs["out_helpers"]["notifier"]["pid"]
    return pids


def leftovers(prefix: str, state: Path) -> dict[str, list[str]]:
    """Containers, networks, processes and files of ``prefix`` still present."""
    from fabric.lab.podman import podman

    found = {
        "containers": podman(
            ["ps", "-a", "--filter", f"name=^{prefix}-", "--format", "{{.Names}}"]
        ).stdout.split(),
        "networks": [
            n
            for n in podman(["network", "ls", "--format", "{{.Name}}"]).stdout.split()
            if n.startswith(prefix)
        ],
        "processes": [
            p
            for p in subprocess.run(
                ["pgrep", "-af", str(state)],
                capture_output=True,
                text=True,
                check=False,
                timeout=30,
            ).stdout.splitlines()
            if p
        ],
        "files": [str(p) for p in state.rglob("*")] if state.exists() else [],
    }
    return {k: v for k, v in found.items() if v}


def changes(result: Any) -> dict[str, int]:
    """Pulumi's resource-change summary of an up/destroy result."""
    return dict(result.summary.resource_changes or {})


class Bench:
    """One bench stack: its own program copy, file backend, state dir and passphrase."""

    def __init__(self, tmp: Path, n: int) -> None:
        from pulumi import automation as auto

        self.n, self.tmp = n, tmp
        self.name = f"rybench-{secrets.token_hex(3)}"
        work = tmp / "program"
        work.mkdir()
        for f in ("Pulumi.yaml", "__main__.py"):
            shutil.copy(REPO / f, work / f)
        (tmp / "backend").mkdir()
        self.state = tmp / "state" / self.name
        env = {
            "PATH": f"{PULUMI_BIN}:{REPO / '.venv' / 'bin'}:{os.environ['PATH']}",
            "PULUMI_BACKEND_URL": f"file://{tmp / 'backend'}",
            "PULUMI_CONFIG_PASSPHRASE": secrets.token_hex(12),
            "PULUMI_SKIP_UPDATE_CHECK": "true",
            "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
            "PYTHONPATH": str(REPO),
            "RAILYARD_STATE_DIR": str(tmp / "state"),
        }
        os.environ.update(env)
        self.stack_file = work / f"Pulumi.{self.name}.yaml"
        self.stack_file.write_text(yaml.safe_dump({"config": {"railyard:prefix": self.name}}))
        ws = auto.LocalWorkspace(
            work_dir=str(work),
            env_vars=env,
            pulumi_command=auto.PulumiCommand(str(PULUMI_BIN.parent)),
        )
        self.stack = auto.Stack.create(self.name, ws)

    def set_nodes(self, n: int) -> None:
        """Point the stack's spec at ``n`` compute nodes (topology sized for ``self.n + 1``)."""
        data = yaml.safe_load(self.stack_file.read_text())
        data["config"]["railyard:cluster"] = spec(n, room=self.n + 1 - n)
        self.stack_file.write_text(yaml.safe_dump(data))

    def up(self) -> tuple[float, dict[str, int]]:
        """Run ``pulumi up``; return its wall time and change summary (``failed`` on an error)."""
        from pulumi.automation import CommandError

        start = time.monotonic()
        try:
            result = self.stack.up(on_output=lambda _: None, color="never")
        except CommandError as exc:
            errors = [ln.strip() for ln in str(exc).splitlines() if "error:" in ln]
            print(f"pulumi up failed: {errors[-1] if errors else exc}", flush=True)
            return time.monotonic() - start, {"failed": 1}
        return time.monotonic() - start, changes(result)


#: inotify instances a lab node's systemd (PID 1, journald, logind, ...) holds; measured: 6.
INOTIFY_PER_NODE = 8


def check_inotify(nodes: int) -> None:
    """Fail fast when ``nodes`` more systemd containers would exhaust root's inotify instances.

    Past the limit, a node's systemd fails to start its services and the node never answers
    SSH (``LabNode`` then reports "did not accept SSH within 90s").
    """
    limit = int(Path("/proc/sys/fs/inotify/max_user_instances").read_text())
    used = sum(1 for fd in Path("/proc").glob("[0-9]*/fd/*") if _is_inotify(fd))
    if used + nodes * INOTIFY_PER_NODE > limit:
        raise SystemExit(
            f"fs.inotify.max_user_instances is {limit}, {used} in use, and {nodes} more nodes need "
            f"~{nodes * INOTIFY_PER_NODE}: raise it, e.g. sysctl -w fs.inotify.max_user_instances=1024"
        )


def _is_inotify(fd: Path) -> bool:
    try:
        return os.readlink(fd) == "anon_inode:inotify"
    except OSError:
        return False


def run(n: int) -> dict[str, Any]:
    """Run the whole benchmark for ``n`` compute nodes and return the measurements."""
    check_inotify(n + 4)
    out: dict[str, Any] = {"n": n, "nodes": n + 3}
    tmp = Path(tempfile.mkdtemp(prefix="rybench-"))
    bench = Bench(tmp, n)
    try:
        bench.set_nodes(n)
        mem_before = used_memory()
        out["up_s"], out["up_changes"] = bench.up()
        time.sleep(10)  # let systemd in every node settle before reading memory
        per_node = container_memory(bench.name)
        out["containers"] = len(per_node)
        out["node_mem_mean"] = statistics.mean(per_node.values())
        out["node_mem_max"] = max(per_node.values())
        out["node_mem_total"] = sum(per_node.values())
        out["host_mem_delta"] = used_memory() - mem_before
        out["helpers_rss"] = {k: rss(p) for k, p in helper_pids(bench.stack).items()}
        out["up2_s"], out["up2_changes"] = bench.up()
        bench.set_nodes(n + 1)
        out["grow_s"], out["grow_changes"] = bench.up()
        out["grow_containers"] = len(container_memory(bench.name))
        bench.set_nodes(n)
        out["shrink_s"], out["shrink_changes"] = bench.up()
        out["shrink_containers"] = len(container_memory(bench.name))
    finally:
        start = time.monotonic()
        destroyed = bench.stack.destroy(on_output=lambda _: None, color="never")
        out["destroy_s"], out["destroy_changes"] = time.monotonic() - start, changes(destroyed)
        out["leftovers"] = leftovers(bench.name, bench.state)
        bench.stack.workspace.remove_stack(bench.name)
        shutil.rmtree(tmp, ignore_errors=True)
    return out


def _mib(b: float) -> str:
    return f"{b / 2**20:.1f} MiB"


def _summary(c: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(c.items()))


def report(r: dict[str, Any]) -> str:
    """Markdown for one run."""
    n = r["n"]
    cpu = os.cpu_count()
    mem = int(Path("/proc/meminfo").read_text().split()[1]) / 2**20
    rows = [
        ("`pulumi up` (create)", f"{r['up_s']:.1f} s", _summary(r["up_changes"])),
        ("second `pulumi up`", f"{r['up2_s']:.1f} s", _summary(r["up2_changes"])),
        (f"grow {n} → {n + 1} compute nodes", f"{r['grow_s']:.1f} s", _summary(r["grow_changes"])),
        (f"shrink {n + 1} → {n}", f"{r['shrink_s']:.1f} s", _summary(r["shrink_changes"])),
        ("`pulumi destroy`", f"{r['destroy_s']:.1f} s", _summary(r["destroy_changes"])),
    ]
    lines = [
        f"## {n} compute nodes + 2 SMs + 1 controller ({r['nodes']} containers)",
        "",
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC; {platform.node()}: {cpu} cores, {mem:.0f} GiB, "
        f"Linux {platform.release()}; the default `lab` stack (11 nodes) was running alongside.",
        "",
        "| step | wall time | Pulumi summary |",
        "| --- | --- | --- |",
        *[f"| {a} | {b} | {c} |" for a, b, c in rows],
        "",
        "| memory | value |",
        "| --- | --- |",
        f"| per node container (cgroup), mean | {_mib(r['node_mem_mean'])} |",
        f"| per node container (cgroup), max | {_mib(r['node_mem_max'])} |",
        f"| all {r['containers']} node containers | {_mib(r['node_mem_total'])} |",
        f"| host used-memory delta (MemTotal − MemAvailable) | {_mib(r['host_mem_delta'])} |",
        *[f"| {k} RSS | {_mib(v)} |" for k, v in r["helpers_rss"].items()],
        "",
        f"Containers after grow / shrink: {r['grow_containers']} / {r['shrink_containers']}. "
        f"Left after destroy: {r['leftovers'] or 'nothing'}.",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    """Parse ``-n``, run, print and record the results."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("-n", type=int, default=32, help="compute nodes (default 32)")
    parser.add_argument("--json", type=Path, help="also write the raw measurements here")
    args = parser.parse_args()
    result = run(args.n)
    text = report(result)
    print(text)
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))
    header = "# Lab scale benchmark (bench/lab/scale.py)\n\n"
    old = RESULTS.read_text().removeprefix(header) if RESULTS.is_file() else ""
    RESULTS.write_text(header + text + ("\n" + old if old else ""))
    if result["leftovers"]:
        raise SystemExit(f"destroy left things behind: {result['leftovers']}")


if __name__ == "__main__":
    main()
