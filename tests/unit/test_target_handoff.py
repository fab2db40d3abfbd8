"""Every target hands off: bare metal, AWS, GCP and existing (under Pulumi mocks) export the
same outputs, and the inventory they produce is written by the hand-off through the state
layout, found by the runner, and parsed by ``ansible-inventory``."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import Mocks

from fabric.components.target import TARGET_OUTPUTS
from fabric.handoff import runner
from fabric.handoff.resource import AnsibleHandoffProvider
from fabric.inventory import inventory_text
from fabric.spec import ClusterSpec
from fabric.state import REPO_ROOT, StateLayout

SPECS = Path(__file__).parent / "specs" / "valid"
ANSIBLE_INVENTORY = Path(sys.executable).parent / "ansible-inventory"
BMC_PASSWORD = {"railyard:bmcPassword": "bmc-pw-123"}


def _cluster(path: Path) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text())
    return data["config"]["railyard:cluster"] if "config" in data else data


def _aws(spec: ClusterSpec) -> Any:
    from fabric.targets.aws.component import AwsCluster

    return AwsCluster("c", spec)


def _gcp(spec: ClusterSpec) -> Any:
    from fabric.targets.gcp.component import GcpCluster

    return GcpCluster("c", spec)


def _baremetal(spec: ClusterSpec) -> Any:
    from fabric.targets.baremetal.component import BaremetalCluster

    return BaremetalCluster("c", spec)


def _existing(spec: ClusterSpec) -> Any:
    from fabric.targets.existing.component import ExistingCluster

    return ExistingCluster("c", spec)


#: id -> (spec file, component factory, stack config)
TARGETS: dict[str, tuple[Path, Callable[[ClusterSpec], Any], dict[str, str]]] = {
    "baremetal-roce": (SPECS / "roce.yaml", _baremetal, BMC_PASSWORD),
    "baremetal-ib": (
        REPO_ROOT / "Pulumi.baremetal-ib.example.yaml",
        _baremetal,
        {
            **BMC_PASSWORD,
            "railyard:sshPrivateKeyFile": "~/.ssh/railyard",
            "railyard:knownHostsFile": "~/.ssh/railyard_known_hosts",
        },
    ),
    "aws": (SPECS / "aws.yaml", _aws, {}),
    "existing": (
        REPO_ROOT / "Pulumi.existing.example.yaml",
        _existing,
        {"railyard:sshPrivateKeyFile": "~/.ssh/railyard"},
    ),
    "gcp": (SPECS / "gcp.yaml", _gcp, {}),
}


@pytest.fixture(params=sorted(TARGETS))
def provisioned(
    request: pytest.FixtureRequest,
    mock_pulumi: Callable[..., Mocks],
    build_component: Callable[..., tuple[Mocks, dict[str, Any]]],
    state_root: Path,
) -> tuple[str, ClusterSpec, dict[str, Any], dict[str, str]]:
    """(stack, spec, the target's resolved outputs, its stack config) for each target."""
    path, factory, config = TARGETS[request.param]
    stack = f"t-{request.param}"
    spec = ClusterSpec.model_validate(_cluster(path))
    mock_pulumi(stack, config, [k for k in config if k.endswith("Password")])
    _, outputs = build_component(lambda: factory(spec), stack)
    return stack, spec, outputs, config


def _fake_fabric_run(seen: dict[str, Any]) -> Callable[..., subprocess.CompletedProcess[str]]:
    """Stands in for the hand-off's ``python -m fabric run`` child: looks the inventory up the way
    the runner does, then reports success."""

    def fake(argv: list[str], **_: Any) -> subprocess.CompletedProcess[str]:
        stack = argv[argv.index("--stack") + 1]
        seen["inventory"] = runner.inventory_path(stack)  # raises HandoffError when absent
        seen["text"] = seen["inventory"].read_text()
        Path(argv[argv.index("--result-json") + 1]).write_text(
            json.dumps(
                {
                    "ok": True,
                    "status": "successful",
                    "rc": 0,
                    "recap": "ok",
                    "summary": "ok",
                    "artifacts": "",
                    "hosts": {},
                }
            )
        )
        return subprocess.CompletedProcess(argv, 0, stdout="")

    return fake


def test_every_target_exports_every_output(
    provisioned: tuple[str, ClusterSpec, dict[str, Any], dict[str, str]], state_root: Path
) -> None:
    stack, spec, out, _ = provisioned
    assert all(out[key] is not None for key in TARGET_OUTPUTS), {k: out[k] for k in TARGET_OUTPUTS}
    assert out["state_dir"] == str(state_root.resolve() / stack)
    assert out["fabric"]["kind"] == spec.fabric.kind
    assert sorted(out["inventory"]["all"]["hosts"]) == sorted(spec.hosts)
    if spec.target == "baremetal":
        assert sorted(out["bmc_endpoints"]) == sorted(spec.hosts)
        assert {e["url"] for e in out["bmc_endpoints"].values()} == {
            e.url for e in spec.bmc.endpoints.values()
        }  # type: ignore[union-attr]
    else:
        assert out["bmc_endpoints"] == {} and out["switches"] == {}


def test_key_files_come_from_config_or_the_layout(
    provisioned: tuple[str, ClusterSpec, dict[str, Any], dict[str, str]], state_root: Path
) -> None:
    stack, _, out, config = provisioned
    inventory_vars = out["inventory"]["all"]["vars"]
    layout = StateLayout(stack)
    key = config.get("railyard:sshPrivateKeyFile")
    known = config.get("railyard:knownHostsFile")
    assert inventory_vars["ansible_ssh_private_key_file"] == (
        str(Path(key).expanduser()) if key else str(layout.provided_ssh_key)
    )
    assert inventory_vars["ansible_ssh_common_args"] == (
        f"-o UserKnownHostsFile={Path(known).expanduser() if known else layout.known_hosts} "
        "-o StrictHostKeyChecking=yes"
    )
    if not key:
        assert layout.provided_ssh_key.is_relative_to(state_root.resolve())


def test_handoff_writes_the_inventory_the_runner_and_ansible_read(
    provisioned: tuple[str, ClusterSpec, dict[str, Any], dict[str, str]],
    state_root: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    stack, spec, out, _ = provisioned
    text = inventory_text(out["inventory"])
    with pytest.raises(runner.HandoffError, match=rf"pulumi up --stack {stack}\)"):
        runner.inventory_path(stack)  # nothing provisioned it yet

    seen: dict[str, Any] = {}
    props = {
        "stack": stack,
        "spec_json": spec.model_dump_json(),
        "inventory": text,
        "playbook": "playbooks/site.yml",
        "limit": None,
        "munge_key": None,
        "content_hash": "h",
    }
    with monkeypatch.context() as patch:
        patch.setattr(subprocess, "run", _fake_fabric_run(seen))
        created = AnsibleHandoffProvider().create(props)

    path = StateLayout(stack).inventory
    assert created.id == f"handoff-{stack}" and created.outs["status"] == "successful"
    assert seen == {"inventory": path, "text": text}
    assert path == state_root.resolve() / stack / "inventory.yml"
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    assert [p.name for p in path.parent.iterdir()] == ["inventory.yml"]  # no temporary file left

    env = {
        **os.environ,
        "ANSIBLE_HOME": str(tmp_path / "ansible"),
        "ANSIBLE_LOCAL_TEMP": str(tmp_path / "tmp"),
    }
    listed = subprocess.run(
        [str(ANSIBLE_INVENTORY), "-i", str(path), "--list"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )
    assert listed.returncode == 0, listed.stderr
    parsed = json.loads(listed.stdout)
    switches = [sw.name for sw in spec.fabric.switches if sw.manage]  # the switches group
    assert sorted(parsed["_meta"]["hostvars"]) == sorted([*spec.hosts, *switches])
    for host, address in (
        (h, v["ansible_host"]) for h, v in out["inventory"]["all"]["hosts"].items()
    ):
        assert parsed["_meta"]["hostvars"][host]["ansible_host"] == address
    compute = spec.hosts_with_role("compute")
    assert sorted(parsed.get("compute", {}).get("hosts", [])) == sorted(compute)

    AnsibleHandoffProvider().delete(created.id, created.outs)
    assert not path.exists() and not path.parent.exists()  # only the hand-off wrote it


def test_lab_inventory_outlives_the_handoff(state_root: Path) -> None:
    """The lab's own state file keeps its inventory; deleting the hand-off leaves it."""
    layout = StateLayout("lab")
    runner.write_inventory("lab", "all: {}\n")
    layout.group_vars_all.parent.mkdir(parents=True)
    layout.group_vars_all.write_text("x: 1\n")
    AnsibleHandoffProvider().delete(
        "handoff-lab", {"stack": "lab", "spec_json": json.dumps({"target": "lab"})}
    )
    assert layout.inventory.read_text() == "all: {}\n" and not layout.group_vars.exists()


def test_write_inventory_replaces_the_file_atomically(state_root: Path) -> None:
    first = runner.write_inventory("s", "all: {hosts: {a: {}}}\n")
    inode = first.stat().st_ino
    assert (
        runner.write_inventory("s", "all: {hosts: {a: {}}}\n").stat().st_ino == inode
    )  # unchanged: left alone
    second = runner.write_inventory("s", "all: {hosts: {b: {}}}\n")
    assert second == first and second.read_text() == "all: {hosts: {b: {}}}\n"
    assert second.stat().st_ino != inode and stat.S_IMODE(second.stat().st_mode) == 0o644
