"""Adopting a running cluster (``target: existing``), for real, over a lab's nodes.

A lab comes up with its hand-off and checks switched off (``railyard:handoff: false``,
``railyard:verify: false``): its nodes are just a running cluster with sshd, on the ibsim
fabric. ``python -m fabric import`` of ``ibnetdiscover`` run on one of them gives a spec that,
its PLACEHOLDER addresses set, is adoptable. A second stack, ``target: existing``, lists those nodes' SSH addresses (one node's key
given as a known_hosts line; one node presenting a host certificate, trusted through an
``@cert-authority`` line; one pinned at first contact) and a ``lab`` block naming the lab stack (its nodes are the lab's simulated hardware, ``lab.datacenter_stack``). Its
``pulumi up`` pins every key, hands off (``playbooks/site.yml``) and passes its checks; a second
``up`` changes nothing; a node whose host key is regenerated makes the next ``up`` fail naming
that node.

Own stacks ``ryex-<hex>`` and ``ryex-<hex>-adopt``, own subnets 198.18.96-103.0/24
(management) and 198.18.112-119.0/24 (BMC), ports 19800-19815 (Redfish emulator, notifier)
and 20600-20727 (ibsim). Run it only under the heavy lock.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import yaml

from fabric.parsers.ibnetdiscover import parse
from fabric.spec import spec_from_mapping
from fabric.state import REPO_ROOT
from fabric.targets.existing.rules import existing_placeholder_problems
from fabric.verify.causes import ALL_PASSED
from tests.integration.labkit import PULUMI_BIN, OwnLab, own_lab

pytestmark = pytest.mark.integration

HCA = {"device": "mlx5_0", "link_layer": "InfiniBand", "rate_gbps": 400, "width": "4x"}


def _cluster(tag: int) -> dict[str, Any]:
    """What both stacks declare: nodes, fabric, Slurm (the lab builds it, the adoption takes
    it over)."""
    return {
        "name": "ryexisting",
        "nodes": [
            {"names": "xn[1-2]", "role": "compute", "gpus": 2, "gpu_type": "h100", "hcas": [HCA]},
            {"names": "xsm1", "role": "sm", "hcas": [HCA]},
        ],
        "fabric": {
            "kind": "infiniband",
            "mtu": 4096,
            "topology": {
                "kind": "fat-tree",
                "leaves": 3,
                "spines": 1,
                "ports_per_switch": 8,
                "nodes_per_leaf": 1,
                "uplinks_per_leaf": 2,
                "link_rate_gbps": 400,
                "link_width": "4x",
            },
            "infiniband": {
                "routing_engine": "ftree",
                "sweep_interval": 10,
                "subnet_managers": [{"host": "xsm1", "priority": 14}],
            },
        },
        "management": {"subnet": f"198.18.{96 + tag}.0/24"},
        "slurm": {
            "cluster_name": "ryexisting",
            "controller": "xsm1",
            "topology_plugin": "tree",
            "partitions": [{"name": "gpu", "nodes": "xn[1-2]", "default": True}],
        },
    }


def _lab_block(tag: int) -> dict[str, Any]:
    return {"bmc_port": 19800 + 2 * tag, "ibsim_port": 20600 + 16 * tag}


def _lab_spec(tag: int) -> dict[str, Any]:
    return {
        **_cluster(tag),
        "target": "lab",
        "bmc": {"subnet": f"198.18.{112 + tag}.0/24"},
        "lab": _lab_block(tag),
    }


@dataclass
class Adoption:
    """The ``target: existing`` stack over the lab's nodes."""

    lab: OwnLab
    stack: Any
    name: str
    addresses: dict[str, str]
    up_seconds: float = 0.0
    outputs: dict[str, Any] | None = None


def _run(*argv: str) -> str:
    """stdout of ``argv``, which must succeed within a minute."""
    done = subprocess.run(argv, check=True, timeout=60, capture_output=True, text=True)
    return done.stdout


def _sign_host_key(lab: OwnLab, node: str, address: str) -> str:
    """Sign ``node``'s host key with a CA made here and have its sshd present the certificate;
    return the ``@cert-authority`` line that trusts it."""
    ca = lab.root / "host-ca"
    _run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "", "-f", str(ca))
    container = lab.hosts()[node]["container"]
    key = "/etc/ssh/ssh_host_ed25519_key"
    pub = lab.root / f"{node}_host.pub"
    pub.write_text(_run("podman", "exec", container, "cat", f"{key}.pub"))
    _run("ssh-keygen", "-q", "-s", str(ca), "-I", node, "-h", "-n", address, str(pub))
    _run("podman", "cp", str(lab.root / f"{node}_host-cert.pub"), f"{container}:{key}-cert.pub")
    enable = (
        f"echo 'HostCertificate {key}-cert.pub' >> /etc/ssh/sshd_config.d/railyard.conf && "
        "systemctl restart ssh"
    )
    _run("podman", "exec", container, "sh", "-c", enable)
    return f"@cert-authority {address} {(lab.root / 'host-ca.pub').read_text().strip()}"


def _existing_spec(lab: OwnLab, addresses: dict[str, str], given: list[str]) -> dict[str, Any]:
    return {
        **_cluster(lab.tag),
        "target": "existing",
        "existing": {"ssh": addresses, "known_hosts": given},
        "lab": {**_lab_block(lab.tag), "datacenter_stack": lab.name},
    }


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OwnLab]:
    with own_lab(tmp_path_factory, "ryex", _lab_spec, tags=8) as lab:
        yield lab
    assert lab.leftovers == {}


@pytest.fixture(scope="module")
def adoption(lab: OwnLab) -> Iterator[Adoption]:
    from pulumi import automation as auto

    work = lab.root / "adopt"
    work.mkdir()
    for file in ("Pulumi.yaml", "__main__.py"):
        shutil.copy(REPO_ROOT / file, work / file)
    addresses = {name: host["address"] for name, host in lab.hosts().items()}
    # xn1's key as the operator would give it (ssh-keyscan's line), the others first contact
    lab_known = (lab.state / "known_hosts").read_text().splitlines()
    given = [line for line in lab_known if addresses["xn1"] in line.split()[0].split(",")]
    assert given, f"no known_hosts line for xn1 at {addresses['xn1']} in the lab's state"
    given.append(_sign_host_key(lab, "xsm1", addresses["xsm1"]))
    name = f"{lab.name}-adopt"
    config = {
        "railyard:cluster": _existing_spec(lab, addresses, given),
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
    adopted = Adoption(lab=lab, stack=stack, name=name, addresses=addresses)
    try:
        yield adopted
    finally:
        stack.destroy(on_output=lambda _: None)
        ws.remove_stack(name)


def test_import_of_the_running_fabric_becomes_an_adoptable_spec(lab: OwnLab) -> None:
    """``python -m fabric import`` on ibnetdiscover as it runs on the lab's SM node: every node
    with its HCA, every cable, the addresses PLACEHOLDER until set, then adoptable."""
    capture = lab.root / "ibnetdiscover.txt"
    capture.write_text(lab.ssh("xsm1", "ibnetdiscover", timeout=120))
    out = lab.root / "imported.yaml"
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "fabric", "import", str(capture), "--name", "ryexisting",
         "--output", str(out)],
        capture_output=True, text=True, timeout=120, cwd=REPO_ROOT, check=False,
    )  # fmt: skip
    print(f"\nimport of the lab's capture: {time.monotonic() - started:.2f} s")
    assert done.returncode == 0, done.stderr
    assert "PLACEHOLDER existing.ssh" in done.stderr
    data = yaml.safe_load(out.read_text())
    spec = spec_from_mapping(data)
    assert set(spec.hosts) == {"xn1", "xn2", "xsm1"}
    assert len(spec.fabric.cabling) == len(parse(capture.read_text()).links)
    # A capture alone does not say where the SM runs: an external PLACEHOLDER, never a managed one.
    sm_field = "fabric.infiniband.subnet_managers[0].node_description"
    assert [p.path for p in existing_placeholder_problems(spec)] == ["existing.ssh", sm_field]
    assert data["fabric"]["infiniband"]["subnet_managers"][0]["mode"] == "external"
    data["existing"]["ssh"] = {name: host["address"] for name, host in lab.hosts().items()}
    data["fabric"]["infiniband"]["subnet_managers"][0]["node_description"] = "xsm1 mlx5_0"
    assert existing_placeholder_problems(spec_from_mapping(data)) == []


def test_adoption_pins_keys_hands_off_and_passes_its_checks(adoption: Adoption) -> None:
    log: list[str] = []
    started = time.monotonic()
    result = adoption.stack.up(on_output=log.append)
    adoption.up_seconds = time.monotonic() - started
    print(f"\nadoption pulumi up: {adoption.up_seconds:.1f} s")  # the note reports it
    outputs = {k: v.value for k, v in result.outputs.items()}
    adoption.outputs = outputs
    hosts = outputs["hosts"]
    assert {h: hosts[h]["pinned_from"] for h in hosts} == {
        "xn1": "spec",
        "xn2": "first contact",
        "xsm1": "ssh ca",
    }
    assert {h: hosts[h]["address"] for h in hosts} == adoption.addresses
    assert outputs["bmc_endpoints"] == {}
    recap = outputs["handoff"]
    rows = {line.split()[0]: line.split()[1:] for line in recap.splitlines()[1:]}
    assert set(rows) == {"xn1", "xn2", "xsm1"}
    assert all(r[2] == "0" and r[3] == "0" for r in rows.values()), recap
    summary = outputs["verification"]
    assert ALL_PASSED.fullmatch(summary), summary


def test_second_up_changes_nothing(adoption: Adoption) -> None:
    result = adoption.stack.up(on_output=lambda _: None)
    changes = {k: v for k, v in (result.summary.resource_changes or {}).items() if k != "same"}
    assert changes == {}, result.summary.resource_changes


def test_a_changed_host_key_fails_the_next_up_naming_the_node(adoption: Adoption) -> None:
    from pulumi.automation.errors import CommandError

    container = adoption.lab.hosts()["xn2"]["container"]
    regenerate = (
        "rm -f /etc/ssh/ssh_host_ed25519_key /etc/ssh/ssh_host_ed25519_key.pub && "
        "ssh-keygen -q -t ed25519 -N '' -f /etc/ssh/ssh_host_ed25519_key && systemctl restart ssh"
    )
    _run("podman", "exec", container, "sh", "-c", regenerate)
    log: list[str] = []
    with pytest.raises(CommandError) as failed:
        adoption.stack.up(on_output=log.append)
    text = str(failed.value) + "".join(log)
    assert f"xn2 ({adoption.addresses['xn2']}): host key changed" in text, text[-3000:]
    for other in ("xn1", "xsm1"):  # logged in to as well, and not named
        assert f"{other} ({adoption.addresses[other]})" not in text, text[-3000:]


def test_the_adoption_keeps_its_own_state(adoption: Adoption) -> None:
    """The adoption's pins and inventory are in its own state, the lab's known_hosts as it
    was (no CA line there)."""
    own = adoption.lab.state.parent / adoption.name
    assert "@cert-authority " in (own / "known_hosts").read_text()
    assert (own / "inventory.yml").is_file()
    assert "@cert-authority" not in (adoption.lab.state / "known_hosts").read_text()
