"""Subnet managers railyard does not run, for real: an external SM, a switch's SM, and the
hazard of adopting a fabric whose master SM is not railyard's.

A lab stack (``target: lab``, hand-off and checks off) is the datacenter: nodes xn1, xn2
(HCAs) and xctl1 on one ibsim switch leaf01, whose port 3 holds a CA known only by its GUID
(``fabric.cabling``), a machine that is no cluster node. An OpenSM this module starts on the
test machine, attached to that CA through ibsim (``SIM_HOST`` = the CA), stands in for UFM:
no lab node runs it and no inventory lists it.

* The hazard: ``python -m fabric import --ssh`` (sminfo + smpquery on the master's LID) writes
  the SM as ``external`` (its node description and port GUID); a ``target: existing`` stack
  adopting xn1, xn2 and xctl1 with that spec hands off and passes every check, and no OpenSM
  runs on any node: railyard started none.
* An undeclared SM: an OpenSM started by hand on xn2 is named by ``test_no_undeclared_sm``
  and ``test_no_unmanaged_opensm``.
* ``switch``: the stand-in stopped, an OpenSM attached to leaf01's port 0 (ibsim's
  ``SIM_HOST`` naming a switch: ``sim_ctl_connect_client`` takes ``node_get_port(node, 0)``)
  becomes master; import writes ``mode: switch``, and the adoption's checks pass again.

Own stacks ``rysm-<hex>`` and ``rysm-<hex>-adopt``, subnets 198.18.24-31.0/24 (management)
and 198.18.48-55.0/24 (BMC), ports 25000-25015 (Redfish, notifier) and 25200-25327 (ibsim).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from fabric.state import REPO_ROOT
from fabric.verify.causes import ALL_PASSED
from tests.integration.labkit import PULUMI_BIN, OwnLab, own_lab

pytestmark = pytest.mark.integration

HCA = {"device": "mlx5_0", "link_layer": "InfiniBand", "rate_gbps": 200, "width": "4x"}
#: The node GUID of the CA standing in for UFM (its port GUID is this + 1).
UFM = "0x0002c903000000f0"
UFM_PORT = "0x0002c903000000f1"
SLURM = {
    "cluster_name": "rysm",
    "controller": "xctl1",
    "topology_plugin": "tree",
    "partitions": [{"name": "gpu", "nodes": "xn[1-2]", "default": True}],
}
NODES = [
    {"names": "xn[1-2]", "role": "compute", "gpus": 2, "gpu_type": "h100", "hcas": [HCA]},
    {"names": "xctl1", "role": "controller"},
]


def _cable(port: int, end: dict[str, Any]) -> dict[str, Any]:
    return {"a": {"switch": "leaf01", "port": port}, "b": end, "width": "4x", "speed": "HDR"}


def _lab_block(tag: int) -> dict[str, Any]:
    return {"bmc_port": 25000 + 2 * tag, "ibsim_port": 25200 + 16 * tag}


def _lab_spec(tag: int) -> dict[str, Any]:
    return {
        "name": "rysm",
        "target": "lab",
        "nodes": NODES,
        "fabric": {
            "kind": "infiniband",
            "mtu": 4096,
            "switches": [{"name": "leaf01"}],
            "infiniband": {"subnet_managers": [{"mode": "external", "guid": UFM, "priority": 15}]},
            "cabling": [
                _cable(1, {"host": "xn1", "hca": "mlx5_0", "port": 1}),
                _cable(2, {"host": "xn2", "hca": "mlx5_0", "port": 1}),
                _cable(3, {"guid": UFM, "port": 1}),
            ],
        },
        "management": {"subnet": f"198.18.{24 + tag}.0/24"},
        "bmc": {"subnet": f"198.18.{48 + tag}.0/24"},
        "slurm": SLURM,
        "lab": _lab_block(tag),
    }


@dataclass
class StandIn:
    """OpenSM processes this module starts on the test machine, attached to the lab's ibsim."""

    lab: OwnLab
    env: dict[str, str]
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    started: int = 0  #: how many were started (each its own work directory)

    def start(self, sim_host: str, priority: int) -> None:
        """OpenSM as ``sim_host`` (a node of the ibsim net: a CA's GUID, a switch's name)."""
        work = self.lab.root / f"opensm-{self.started}"
        work.mkdir()
        self.started += 1
        env = dict(self.env, SIM_HOST=sim_host, OSM_CACHE_DIR=str(work))
        self.procs[sim_host] = subprocess.Popen(  # noqa: S603 - fixed argv
            ["opensm", "-p", str(priority), "-s", "5", "-f", str(work / "opensm.log")],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            cwd=work,  # umad2sim keeps its simulated sysfs tree in ./sys-<pid>
        )

    def stop(self, sim_host: str) -> None:
        proc = self.procs.pop(sim_host)
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)


def _master(lab: OwnLab, guid: str, seconds: float = 120.0) -> str:
    """``sminfo`` on xn1 once it names the SM port ``guid`` as MASTER."""
    deadline = time.monotonic() + seconds
    out = ""
    while time.monotonic() < deadline:
        from fabric.lab.ssh import run

        with lab.connect("xn1") as client:
            rc, out, err = run(client, "sminfo", timeout=30)
        if rc == 0 and "SMINFO_MASTER" in out and f"sm guid 0x{int(guid, 16):x}" in out:
            return out
        time.sleep(3)
    raise AssertionError(f"no MASTER at {guid} within {seconds} s: {out}")


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OwnLab]:
    with own_lab(tmp_path_factory, "rysm", _lab_spec, tags=8) as lab:
        yield lab
    assert lab.leftovers == {}


@pytest.fixture(scope="module")
def stand_in(lab: OwnLab) -> Iterator[StandIn]:
    from fabric.lab import umadshim
    from fabric.topology.ibsim import UMAD2SIM

    node_env = dict(
        line.split("=", 1) for line in lab.ssh("xn1", "cat /etc/environment").splitlines() if line
    )
    env = dict(
        os.environ,
        LD_PRELOAD=f"{umadshim.build()}:{UMAD2SIM}",
        IBSIM_SERVER_NAME=node_env["IBSIM_SERVER_NAME"],
        IBSIM_SERVER_PORT=node_env["IBSIM_SERVER_PORT"],
    )
    sms = StandIn(lab=lab, env=env)
    sms.start(UFM, 15)
    try:
        _master(lab, UFM_PORT)
        yield sms
    finally:
        for sim_host in list(sms.procs):
            sms.stop(sim_host)


def _import_ssh(lab: OwnLab) -> tuple[dict[str, Any], str]:
    """``python -m fabric import --ssh root@xn1`` (the real ssh, given the lab's key and
    known_hosts by a wrapper first on PATH); the spec as written and stderr."""
    wrapper = lab.root / "bin" / "ssh"
    if not wrapper.exists():
        wrapper.parent.mkdir()
        wrapper.write_text(
            f"#!/bin/sh\nexec {shutil.which('ssh')} -i {lab.state / 'ssh' / 'id_ed25519'} "
            f'-o UserKnownHostsFile={lab.state / "known_hosts"} -o IdentitiesOnly=yes "$@"\n'
        )
        wrapper.chmod(0o755)
    out = lab.root / "imported.yaml"
    env = dict(os.environ, PATH=f"{wrapper.parent}:{os.environ['PATH']}")
    address = lab.hosts()["xn1"]["address"]
    done = subprocess.run(
        [sys.executable, "-m", "fabric", "import", "--ssh", f"root@{address}", "--name", "rysm",
         "--output", str(out)],
        capture_output=True, text=True, timeout=300, cwd=REPO_ROOT, env=env, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return yaml.safe_load(out.read_text()), done.stderr


@dataclass
class Adoption:
    stack: Any
    name: str
    work: Path
    spec: dict[str, Any]

    @property
    def stack_file(self) -> Path:
        return self.work / f"Pulumi.{self.name}.yaml"

    def set_sms(self, sms: list[dict[str, Any]]) -> None:
        self.spec["fabric"]["infiniband"]["subnet_managers"] = sms
        doc = yaml.safe_load(self.stack_file.read_text())
        doc["config"]["railyard:cluster"] = self.spec
        self.stack_file.write_text(yaml.safe_dump(doc))


@pytest.fixture(scope="module")
def imported(lab: OwnLab, stand_in: StandIn) -> tuple[dict[str, Any], str]:
    return _import_ssh(lab)


@pytest.fixture(scope="module")
def adoption(lab: OwnLab, imported: tuple[dict[str, Any], str]) -> Iterator[Adoption]:
    from pulumi import automation as auto

    work = lab.root / "adopt"
    work.mkdir()
    for file in ("Pulumi.yaml", "__main__.py"):
        shutil.copy(REPO_ROOT / file, work / file)
    spec = dict(imported[0])
    spec |= {
        "nodes": NODES,
        "management": {"subnet": f"198.18.{24 + lab.tag}.0/24"},
        "slurm": SLURM,
        "existing": {"ssh": {n: h["address"] for n, h in lab.hosts().items()}},
        "lab": {**_lab_block(lab.tag), "datacenter_stack": lab.name},
    }
    name = f"{lab.name}-adopt"
    config = {
        "railyard:cluster": spec,
        "railyard:sshPrivateKeyFile": str(lab.state / "ssh" / "id_ed25519"),
        "railyard:hostKeyTimeout": "60",
    }
    (work / f"Pulumi.{name}.yaml").write_text(yaml.safe_dump({"config": config}))
    ws = auto.LocalWorkspace(
        work_dir=str(work),
        env_vars=lab.env,
        pulumi_command=auto.PulumiCommand(str(PULUMI_BIN.parent)),
    )
    stack = auto.Stack.create(name, ws)
    try:
        yield Adoption(stack=stack, name=name, work=work, spec=spec)
    finally:
        stack.destroy(on_output=lambda _: None)
        ws.remove_stack(name)


def _checks(adoption: Adoption, select: str) -> dict[str, Any]:
    from fabric.verify.runner import run_checks

    outcome = run_checks(
        adoption.name,
        spec=adoption.stack_file,
        select=select,
        quiet=True,
        workers=1,
        report_dir=adoption.work / "reports",
    )
    assert outcome.results, f"the check suite did not run: {outcome.summary()}"
    return {f"{r.name}[{r.param}]": r for r in outcome.results}


def _no_opensm_on_nodes(lab: OwnLab) -> None:
    for node in ("xn1", "xn2", "xctl1"):
        container = lab.hosts()[node]["container"]
        found = subprocess.run(
            ["podman", "exec", container, "pgrep", "-a", "-x", "opensm"],
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        assert found.returncode == 1, f"{node}: opensm runs: {found.stdout}"


def test_import_writes_the_external_sm(imported: tuple[dict[str, Any], str]) -> None:
    spec, stderr = imported
    assert spec["fabric"]["infiniband"]["subnet_managers"] == [
        {"mode": "external", "node_description": UFM, "guid": UFM_PORT, "priority": 15}
    ]
    assert "on no cluster host: written as external" in stderr
    assert set(spec["existing"]["ssh"]) == {"xn1", "xn2"}


def test_adoption_of_an_external_sm_starts_none_and_passes(lab: OwnLab, adoption: Adoption) -> None:
    started = time.monotonic()
    result = adoption.stack.up(on_output=lambda _: None)
    print(f"\nadoption pulumi up (external SM): {time.monotonic() - started:.1f} s")
    outputs = {k: v.value for k, v in result.outputs.items()}
    summary = outputs["verification"]
    assert ALL_PASSED.fullmatch(summary), summary
    _no_opensm_on_nodes(lab)
    seen = _checks(adoption, "test_master_is_declared or test_no_undeclared_sm")
    assert {k: r.outcome for k, r in seen.items()} == {
        "test_master_is_declared[xn1]": "passed",
        "test_no_undeclared_sm[xn1]": "passed",
    }, {k: r.message for k, r in seen.items()}


def test_an_undeclared_sm_is_named(lab: OwnLab, adoption: Adoption) -> None:
    """A second OpenSM, started by hand on xn2 (an adopted node): both checks name it."""
    lab.ssh("xn2", "opensm -B -p 1 -f /tmp/rogue-opensm.log >/dev/null 2>&1")
    try:
        deadline, failed = time.monotonic() + 120, {}
        while time.monotonic() < deadline:
            seen = _checks(adoption, "test_no_undeclared_sm or test_no_unmanaged_opensm")
            failed = {k: r.message for k, r in seen.items() if r.failed}
            if "test_no_undeclared_sm[xn1]" in failed:
                break
            time.sleep(5)
        assert "'xn2 mlx5_0'" in failed.get("test_no_undeclared_sm[xn1]", ""), failed
        assert "xn2: OpenSM runs" in failed.get("test_no_unmanaged_opensm[xn2]", ""), failed
        assert set(failed) == {"test_no_undeclared_sm[xn1]", "test_no_unmanaged_opensm[xn2]"}
    finally:
        pids = lab.ssh("xn2", "pgrep -x opensm || true").split()
        if pids:
            lab.ssh("xn2", f"kill {' '.join(pids)}")


def test_a_switch_sm_is_imported_and_checked(
    lab: OwnLab, stand_in: StandIn, adoption: Adoption
) -> None:
    stand_in.stop(UFM)
    stand_in.start("leaf01", 15)
    _master(lab, "0x0002c90381000000")
    spec, stderr = _import_ssh(lab)
    sms = spec["fabric"]["infiniband"]["subnet_managers"]
    assert sms == [{"mode": "switch", "switch": "leaf01", "priority": 15}], stderr
    adoption.set_sms(sms)
    started = time.monotonic()
    result = adoption.stack.up(on_output=lambda _: None)
    print(f"\nadoption pulumi up (switch SM): {time.monotonic() - started:.1f} s")
    summary = result.outputs["verification"].value
    assert ALL_PASSED.fullmatch(summary), summary
    _no_opensm_on_nodes(lab)
