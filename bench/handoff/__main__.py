"""Hand-off and checks at scale: railyard's Ansible settings against Ansible's stock defaults.

Profiles: ``stock`` (Ansible's defaults), ``plain`` (railyard's settings without Mitogen: what
the hand-off ran before it) and ``railyard`` (exactly the hand-off's). For each size, a lab of N
compute nodes + 2 SMs + 1 controller is provisioned under its own stack (without the hand-off
and checks), then for each profile (in the order given) on fresh
nodes: a fresh hand-off (``playbooks/site.yml``), a no-op converge (the same again), and
``fabric check``. Between the profiles the lab is destroyed and provisioned again, so both
hand-offs start from the same fresh nodes. Run it under the shared lock (minutes per size)::

    .venv/bin/python -m bench.handoff --sizes 4,16   # CONTAINERS_CONF: scripts/containers.conf

Results: a Markdown table on stdout (copy it into bench/handoff/README.md), raw measurements
and each run's slowest tasks (from ansible-runner's events) with ``--json FILE``.
Addresses and ports of its own: 198.18.44.0/24 (management), 198.18.45.0/24 (BMC), BMC port
18440 (+1 the notifier), ibsim port 17440 (ibsim binds it and the 10 above); ``--slot 1``
198.18.46-47.0/24, 18460, 17460; distinct
from the default lab, bench/lab and the integration tests (tests/integration/labkit.py).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import resource
import secrets
import shutil
import signal
import sys
import tempfile
import time
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from bench.lab.scale import PULUMI_BIN, REPO, changes, check_inotify, leftovers

#: ``--slot 1`` (a second bench beside the first) takes 198.18.46-47.0/24 and ports 18450/17450.
SLOTS = 2


def addresses(slot: int = 0) -> tuple[str, str, int, int]:
    """Management subnet, BMC subnet, BMC port and ibsim port of bench ``slot``."""
    return (
        f"198.18.{44 + 2 * slot}.0/24",
        f"198.18.{45 + 2 * slot}.0/24",
        18440 + 20 * slot,
        17440 + 20 * slot,
    )


PROFILES = ("stock", "plain", "railyard")
STEPS = ("fresh", "noop", "check")
#: Events that close one task on one host (they carry its start, end and duration).
RESULT_EVENTS = ("runner_on_ok", "runner_on_failed", "runner_on_skipped", "runner_on_unreachable")


def spec(n: int, slot: int = 0) -> dict[str, Any]:
    """The default lab (Pulumi.lab.yaml) with ``n`` compute nodes: n=8 is the 11-node lab."""
    mgmt_subnet, bmc_subnet, bmc_port, ibsim_port = addresses(slot)
    hca = {"device": "mlx5_0", "link_layer": "InfiniBand", "rate_gbps": 400, "width": "4x"}
    fabric_nodes = n + 2
    leaves = max(2, math.ceil(fabric_nodes / 32))
    width = max(2, len(str(n)))
    computes = f"gpu[{1:0{width}d}-{n:0{width}d}]"
    return {
        "name": "hbench",
        "target": "lab",
        "nodes": [
            {"names": computes, "role": "compute", "gpus": 8, "gpu_type": "h100", "hcas": [hca]},
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
                "sweep_interval": 10,
                "subnet_managers": [
                    {"host": "sm1", "priority": 14},
                    {"host": "sm2", "priority": 10},
                ],
                "partitions": [{"name": "Default", "pkey": "0x7fff", "members": "ALL"}],
            },
        },
        "management": {"subnet": mgmt_subnet},
        "bmc": {"subnet": bmc_subnet, "username": "admin", "verify_tls": False},
        "slurm": {
            "cluster_name": "hbench",
            "controller": "ctl1",
            "topology_plugin": "tree",
            "partitions": [{"name": "gpu", "nodes": computes, "default": True}],
        },
        "lab": {"bmc_port": bmc_port, "ibsim_port": ibsim_port},
    }


def task_profile(run_dir: Path, top: int = 12) -> list[dict[str, Any]]:
    """The ``top`` tasks of one run (an ansible-runner private data dir) by summed host time,
    from its events: each closes one task on one host with its duration."""
    tasks: dict[str, dict[str, Any]] = defaultdict(lambda: {"hosts": 0, "host_s": 0.0})
    for path in (run_dir / "artifacts").glob("*/job_events/*.json"):
        event = json.loads(path.read_text())
        if event.get("event") not in RESULT_EVENTS:
            continue
        data = event.get("event_data") or {}
        row = tasks[f"{data.get('role') or '-'}: {data.get('task') or '?'}"]
        row["hosts"] += 1
        row["host_s"] += float(data.get("duration") or 0.0)
    ranked = sorted(tasks.items(), key=lambda kv: -kv[1]["host_s"])
    rows = [{"task": k, "hosts": v["hosts"], "host_s": round(v["host_s"], 2)} for k, v in ranked]
    return rows[:top]


class HandoffBench:
    """One bench stack (program copy, file backend, state dir, passphrase) for one lab size."""

    def __init__(self, tmp: Path, n: int, slot: int = 0) -> None:
        from pulumi import automation as auto

        from fabric.spec import spec_from_mapping

        self.n, self.tmp = n, tmp
        self.name = f"ryhb-{secrets.token_hex(3)}"
        work = tmp / "program"
        work.mkdir()
        for f in ("Pulumi.yaml", "__main__.py"):
            shutil.copy(REPO / f, work / f)
        (tmp / "backend").mkdir()
        self.state = tmp / "state" / self.name
        self.artifacts = tmp / "artifacts"
        self.env = {
            "PATH": f"{PULUMI_BIN}:{REPO / '.venv' / 'bin'}:{os.environ['PATH']}",
            "PULUMI_BACKEND_URL": f"file://{tmp / 'backend'}",
            "PULUMI_CONFIG_PASSPHRASE": secrets.token_hex(12),
            "PULUMI_SKIP_UPDATE_CHECK": "true",
            "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
            "PYTHONPATH": str(REPO),
            "RAILYARD_STATE_DIR": str(tmp / "state"),
            # Absolute: pulumi runs the program from its own folder.
            "CONTAINERS_CONF": str(
                Path(
                    os.environ.get("CONTAINERS_CONF") or REPO / "scripts/containers.conf"
                ).resolve()
            ),
        }
        os.environ.update(self.env)
        self.spec_data = spec(n, slot)
        self.spec = spec_from_mapping(self.spec_data)
        self.spec_file = tmp / "spec.yaml"
        self.spec_file.write_text(yaml.safe_dump(self.spec_data))
        config = {
            "railyard:prefix": self.name,
            "railyard:cluster": self.spec_data,
            # Provision only: the bench runs the hand-off and the checks itself.
            "railyard:handoff": False,
            "railyard:verify": False,
        }
        (work / f"Pulumi.{self.name}.yaml").write_text(yaml.safe_dump({"config": config}))
        ws = auto.LocalWorkspace(
            work_dir=str(work),
            env_vars=self.env,
            pulumi_command=auto.PulumiCommand(str(PULUMI_BIN.parent)),
        )
        self.stack = auto.Stack.create(self.name, ws)
        # As pulumi up's hand-off gets it from the MungeKey resource (never printed).
        self.munge_key = secrets.token_urlsafe(96)

    def up(self) -> float:
        """Provision the lab; its wall time."""
        start = time.monotonic()
        result = self.stack.up(on_output=lambda _: None, color="never")
        if result.summary.result != "succeeded":
            raise SystemExit(f"pulumi up of {self.name}: {result.summary.result}")
        return time.monotonic() - start

    def destroy(self) -> tuple[float, dict[str, int]]:
        """Destroy the lab and the hand-off's files; wall time and Pulumi's summary."""
        from fabric.handoff.runner import remove_handoff_files
        from fabric.state import StateLayout

        start = time.monotonic()
        result = self.stack.destroy(on_output=lambda _: None, color="never")
        remove_handoff_files(self.name)
        shutil.rmtree(StateLayout(self.name).reports, ignore_errors=True)  # the checks' reports
        return time.monotonic() - start, changes(result)

    def settings(self, profile: str) -> Any:
        """The profile's Ansible settings (railyard's: exactly what the hand-off uses)."""
        from fabric.handoff.runner import AnsibleSettings, handoff_settings

        if profile == "stock":
            return AnsibleSettings.stock()
        if profile == "plain":
            return handoff_settings(self.name).model_copy(update={"mitogen": False})
        return handoff_settings(self.name)

    def converge(self, profile: str) -> dict[str, Any]:
        """One ``playbooks/site.yml`` run with the profile's settings."""
        from fabric.handoff.runner import run_playbook

        start = time.monotonic()
        result = run_playbook(
            "playbooks/site.yml",
            stack=self.name,
            spec=self.spec,
            emit=lambda _: None,
            artifacts_root=self.artifacts,
            secret_vars={"slurm_munge_key": self.munge_key},
            settings=self.settings(profile),
        )
        seconds = time.monotonic() - start
        changed = sum(h.changed for h in result.hosts.values())
        out = {"s": seconds, "ok": result.ok, "changed": changed, "rc": result.rc}
        out["profile"] = task_profile(Path(result.artifacts))
        if not result.ok:
            out["summary"] = result.summary()[-1500:]
        return out

    def check(self, profile: str) -> dict[str, Any]:
        """``fabric check``: railyard's runner as it is, stock = testinfra without workers."""
        from fabric.verify.runner import run_checks

        workers = 1 if profile == "stock" else None
        kwargs = {"workers": workers} if workers else {}
        start = time.monotonic()
        outcome = run_checks(self.name, spec=self.spec_file, quiet=True, **kwargs)
        seconds = time.monotonic() - start
        failed = [
            f"{r.name}[{r.param}] ({r.outcome}): {r.message.strip()[:200]}"
            for r in outcome.results
            if r.failed
        ]
        by_check: dict[str, list[float]] = defaultdict(list)
        for r in outcome.results:
            by_check[r.name].append(r.seconds)
        slowest = sorted(by_check.items(), key=lambda kv: -sum(kv[1]))[:10]
        return {
            "profile": [
                {"check": k, "items": len(v), "sum_s": round(sum(v), 2), "max_s": round(max(v), 2)}
                for k, v in slowest
            ],
            "s": seconds,
            "ok": outcome.ok,
            "checks": len(outcome.results),
            "failed": failed[:20],
            "rc": outcome.rc,
        }


def cpu_seconds() -> tuple[float, float]:
    """CPU seconds used so far by the whole machine (``/proc/stat``, every core) and by this
    process with its waited-for descendants (Ansible's controller, the check workers)."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields
    machine = (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")
    own = sum(
        r.ru_utime + r.ru_stime
        for r in (
            resource.getrusage(resource.RUSAGE_SELF),
            resource.getrusage(resource.RUSAGE_CHILDREN),
        )
    )
    return machine, own


def loadavg() -> str:
    """The 1, 5 and 15 minute load averages."""
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def run_size(
    n: int, profiles: tuple[str, ...] = PROFILES, steps: tuple[str, ...] = STEPS, slot: int = 0
) -> dict[str, Any]:
    """Every measurement for a lab of ``n`` compute nodes."""
    check_inotify(n + 3)
    tmp = Path(tempfile.mkdtemp(prefix="ryhb-"))
    bench = HandoffBench(tmp, n, slot)
    out: dict[str, Any] = {"n": n, "nodes": n + 3, "load_before": loadavg(), "profiles": {}}
    try:
        for i, profile in enumerate(profiles):
            if i:
                bench.destroy()
            up_s = bench.up()
            print(f"[{n}] {profile}: lab up in {up_s:.0f} s; load {loadavg()}", flush=True)
            row: dict[str, Any] = {"up_s": up_s}
            for step in steps:  # in this order: a no-op needs the fresh hand-off before it
                machine, own = cpu_seconds()
                row[step] = bench.check(profile) if step == "check" else bench.converge(profile)
                machine_after, own_after = cpu_seconds()
                # the controller's share, and the rest: the nodes (sshd, modules, daemons)
                row[step]["cpu_s"] = {
                    "machine": round(machine_after - machine, 1),
                    "controller": round(own_after - own, 1),
                }
                print(
                    f"[{n}] {profile}: {step} {row[step]['s']:.1f} s, cpu {row[step]['cpu_s']}",
                    flush=True,
                )
            row["load"] = loadavg()
            out["profiles"][profile] = row
    finally:
        out["destroy_s"], out["destroy_changes"] = bench.destroy()
        out["leftovers"] = leftovers(bench.name, bench.state)
        bench.stack.workspace.remove_stack(bench.name)
        shutil.rmtree(tmp, ignore_errors=True)
    out["load_after"] = loadavg()
    return out


def _cell(step: dict[str, Any] | None, extra: str = "") -> str:
    if step is None:
        return "not run"
    mark = "" if step["ok"] else " **failed**"
    return f"{step['s']:.1f} s{extra}{mark}"


def table(results: list[dict[str, Any]]) -> str:
    """The README's Markdown table for these results."""
    lines = [
        "| compute nodes (hosts) | profile | fresh hand-off | no-op converge | `fabric check` | load (1/5/15 min) after |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for r in results:
        for name, p in r["profiles"].items():
            noop = _cell(p.get("noop"), ", {} changed".format(p.get("noop", {}).get("changed")))
            checks = _cell(p.get("check"), ", {} checks".format(p.get("check", {}).get("checks")))
            lines.append(
                f"| {r['n']} ({r['nodes']}) | {name} | {_cell(p.get('fresh'))} | {noop} | {checks} "
                f"| {p['load']} |"
            )
    return "\n".join(lines)


def main() -> None:
    """Parse the sizes, run them, print the table (and the raw JSON with ``--json``)."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="4", help="compute node counts, e.g. 4,16,32 (4)")
    parser.add_argument(
        "--profiles",
        default=",".join(PROFILES),
        help="some of stock, plain, railyard (comma-separated; default all three)",
    )
    parser.add_argument(
        "--steps",
        default=",".join(STEPS),
        help="fresh,noop,check (all), or fresh and any of the others in that order",
    )
    parser.add_argument(
        "--slot", type=int, choices=range(SLOTS), default=0, help="0, or 1 beside another bench"
    )
    parser.add_argument("--json", type=Path, help="write the raw measurements here")
    args = parser.parse_args()
    # The heavy wrapper's timeout sends SIGTERM: unwind, so each lab is still destroyed.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    profiles = tuple(p for p in args.profiles.split(",") if p)
    if unknown := set(profiles) - set(PROFILES):
        parser.error(f"--profiles: unknown {sorted(unknown)}; use stock, plain or railyard")
    steps = tuple(s for s in args.steps.split(",") if s)
    if not steps or steps[0] != "fresh" or list(steps) != [s for s in STEPS if s in steps]:
        parser.error("--steps: fresh first, then noop and/or check, in that order")
    results = []
    for n in (int(s) for s in args.sizes.split(",") if s):
        results.append(run_size(n, profiles, steps, args.slot))
        if args.json:
            args.json.write_text(json.dumps(results, indent=1))
    cpu = os.cpu_count()
    print(
        f"\n{datetime.now(UTC):%Y-%m-%d %H:%M} UTC; {platform.node()}: {cpu} cores; "
        f"load before {results[0]['load_before']}, after {results[-1]['load_after']}\n"
    )
    print(table(results))
    left = {r["n"]: r["leftovers"] for r in results if r["leftovers"]}
    if left:
        raise SystemExit(f"destroy left things behind: {left}")


if __name__ == "__main__":
    main()
