"""Target ``existing``: its spec rules, the import's placeholders refused by ``pulumi up``, the
component's resources and inventory, and the node resource's checks at every ``up``.

The real adoption (pins, hand-off, checks, a changed key) runs against lab nodes in
``tests/integration/test_existing.py``; no sshd runs on this machine, so the provider is
exercised here only where it needs none, or against a loopback port nobody listens on.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import socket
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import DYNAMIC, Mocks, build_component

from fabric.cli import main
from fabric.hostkeys import HostKeyError, pin, pinned_keys, trust_authorities
from fabric.spec import SpecError, spec_from_mapping
from fabric.state import REPO_ROOT
from fabric.targets.existing.component import ExistingCluster, ExistingNodeProvider
from fabric.targets.existing.rules import cert_authorities, known_hosts_keys, ssh_target

EXAMPLE = REPO_ROOT / "Pulumi.existing.example.yaml"
FIXTURES = REPO_ROOT / "tests" / "fixtures"
#: A real ed25519 public key (ssh-keygen), the one the example stack pins for gpu01.
KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIG7b8VmZRB1Cmz1rOJEKIl3XkAIyVcR7AcRW5oGv/+vZ"


def example() -> dict[str, Any]:
    return yaml.safe_load(EXAMPLE.read_text())["config"]["railyard:cluster"]


def with_existing(**existing: Any) -> dict[str, Any]:
    spec = example()
    spec["existing"] = {**spec["existing"], **existing}
    return spec


def problems(spec: dict[str, Any]) -> dict[str, str]:
    with pytest.raises(SpecError) as err:
        spec_from_mapping(spec)
    return {p.path: p.message for p in err.value.problems}


# --- spec rules ----------------------------------------------------------------------------


def test_example_validates(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", "--spec", str(EXAMPLE)]) == 0
    assert "ib-running: valid" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("value", "parsed"),
    [
        ("10.0.0.11", ("root", "10.0.0.11", 22)),
        ("admin@10.0.0.11", ("admin", "10.0.0.11", 22)),
        ("admin@gpu01.example.org:2222", ("admin", "gpu01.example.org", 2222)),
        ("gpu01:22", ("root", "gpu01", 22)),
        ("admin@@x", None),
        ("10.0.0.11:0", None),
        ("10.0.0.11:70000", None),
        ("-oProxyCommand=x", None),
        ("root@", None),
    ],
)
def test_ssh_target(value: str, parsed: tuple[str, str, int] | None) -> None:
    assert ssh_target(value, "root") == parsed


def test_every_problem_names_its_field() -> None:
    spec = with_existing(
        ssh={
            "gpu01": "10.20.0.11",
            "gpu02": "10.20.0.11",  # gpu01's address
            "gpu03": "admin@@10.20.0.13",
            "head1": "10.20.0.2",
            "gpu09": "10.20.0.19",  # not a node
        },  # gpu04 has none
        known_hosts=[
            "garbage",
            f"@revoked 10.20.0.11 {KEY}",
            f"10.99.0.1 {KEY}",  # names no node
        ],
    )
    found = problems(spec)
    assert found == {
        "existing.ssh.gpu02": "10.20.0.11 is already the address of 'gpu01'",
        "existing.ssh.gpu03": "'admin@@10.20.0.13' is not [user@]address[:port]; write e.g. "
        "10.0.0.11 or admin@gpu01.example.org:2222",
        "existing.ssh.gpu09": "'gpu09' is not a declared host; declared hosts: gpu[01-04],head1",
        "existing.ssh.gpu04": "every node needs its SSH address: [user@]address[:port], e.g. "
        "10.0.0.11",
        "existing.known_hosts[0]": "'garbage' is not a known_hosts line; write 'ADDRESS "
        "ssh-ed25519 AAAA...' as ssh-keyscan ADDRESS prints it, or '@cert-authority PATTERN "
        "KEY'",
        "existing.known_hosts[1]": "'@revoked' lines are not supported for target existing; "
        "give the nodes' keys (ssh-keyscan ADDRESS) or their CA (@cert-authority PATTERN KEY)",
        "existing.known_hosts[2]": "names none of the nodes (10.20.0.11, 10.20.0.19, 10.20.0.2); "
        "write a node's address as existing.ssh has it, or its name",
    }


def test_block_missing_misplaced_and_what_existing_does_not_take() -> None:
    spec = example()
    del spec["existing"]
    assert problems(spec) == {
        "existing": "target existing needs the existing block: existing: {ssh: {NODE: "
        "[user@]address[:port], ...}}"
    }
    spec = with_existing()
    spec["access"] = {"bastion": {"host": "bastion.example.org"}}
    spec["management"]["addresses"] = {"gpu01": "10.20.0.11"}
    assert problems(spec) == {
        "access.bastion": "target existing reaches its nodes directly; remove the bastion",
        "management.addresses": "target existing reads each node's address from existing.ssh;"
        " move them there",
    }
    lab = yaml.safe_load((EXAMPLE.parent / "Pulumi.lab.yaml").read_text())["config"]
    spec = {**lab["railyard:cluster"], "existing": {"ssh": {}}}
    assert problems(spec)["existing"] == (
        "the existing block applies only to target existing; target is 'lab'"
    )


def test_a_lab_block_marks_adopted_lab_nodes_as_simulated() -> None:
    spec = spec_from_mapping(example())
    assert not spec.simulated
    spec = spec_from_mapping({**example(), "lab": {"datacenter_stack": "rylab"}})
    assert spec.simulated and spec.lab is not None and spec.lab.datacenter_stack == "rylab"


def _hashed(name: str, salt: bytes = b"0123456789abcdefghij") -> str:
    digest = hmac.new(salt, name.encode(), hashlib.sha1).digest()
    return f"|1|{base64.b64encode(salt).decode()}|{base64.b64encode(digest).decode()}"


def test_known_hosts_lines_per_node() -> None:
    rsa = "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQC7"
    lines = [
        f"10.20.0.11,gpu01 {KEY} root@gpu01",
        f"[10.20.0.2]:2222 {rsa}",
        f"10.20.0.* {KEY}",
        f"{_hashed('10.20.0.14')} {rsa}",
        f"*,!10.20.0.13 {rsa}",
    ]
    assert known_hosts_keys(lines, ["10.20.0.11", "gpu01"]) == [KEY, rsa]
    assert known_hosts_keys(lines, ["[10.20.0.2]:2222", "head1"]) == [rsa]
    assert known_hosts_keys(lines, ["10.20.0.13", "gpu03"]) == [KEY]
    assert known_hosts_keys(lines, ["10.20.0.14", "gpu04"]) == [KEY, rsa]
    assert known_hosts_keys(lines, ["192.0.2.1", "other"]) == [rsa]


def test_an_ssh_ca_line_names_the_nodes_it_signs_for() -> None:
    ca = f"@cert-authority 10.20.0.* {KEY}"
    spec = spec_from_mapping(with_existing(known_hosts=[ca]))
    assert spec.existing is not None
    assert cert_authorities(spec.existing.known_hosts, ["10.20.0.11", "gpu01"]) == [ca]
    assert cert_authorities(spec.existing.known_hosts, ["[10.20.0.2]:2222", "head1"]) == []
    assert known_hosts_keys(spec.existing.known_hosts, ["10.20.0.11", "gpu01"]) == []
    found = problems(with_existing(known_hosts=[f"@cert-authority *.example.org {KEY}"]))
    assert list(found) == ["existing.known_hosts[0]"]
    assert found["existing.known_hosts[0]"].startswith("names none of the nodes")


def test_ca_lines_are_added_once_and_do_not_hide_pinned_keys(tmp_path: Path) -> None:
    """OpenSSH reads @cert-authority lines; paramiko cannot, so pinned_keys skips them."""
    known = tmp_path / "known_hosts"
    pin(known, "gpu01", "10.20.0.11", [KEY])
    ca = f"@cert-authority 10.20.0.* {KEY}"
    assert trust_authorities(known, [ca, ca]) is True
    assert trust_authorities(known, [ca]) is False
    assert known.read_text().count("@cert-authority") == 1
    assert pinned_keys(known, "10.20.0.11") == {"ssh-ed25519": KEY.split()[1]}
    with pytest.raises(HostKeyError):
        trust_authorities(known, [KEY])


# --- the import's placeholders -----------------------------------------------------------


def test_imported_spec_validates_but_pulumi_up_refuses_its_placeholders(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], mock_pulumi: Any, state_root: Path
) -> None:
    out = tmp_path / "spec.yaml"
    capture = FIXTURES / "ibnetdiscover__ibsim_lab__1.txt"
    assert main(["import", str(capture), "--output", str(out), "--name", "lab"]) == 0
    err = capsys.readouterr().err
    assert (
        "PLACEHOLDER existing.ssh: the capture has no SSH addresses; set each node's "
        "[user@]address[:port] (gpu[01-08],sm[1-2]) before pulumi up" in err
    )
    assert main(["validate", "--spec", str(out)]) == 0  # the issue: it validates as written
    spec = spec_from_mapping(yaml.safe_load(out.read_text()))
    assert set(spec.existing.ssh) == set(spec.hosts) if spec.existing else False
    mocks: Mocks = mock_pulumi("adopt")
    with pytest.raises(SpecError) as refused:
        ExistingCluster("c", spec)
    assert [(p.path, p.message) for p in refused.value.problems] == [
        (
            "existing.ssh",
            "gpu[01-08],sm[1-2]: still PLACEHOLDER (written by railyard import); set "
            "each node's [user@]address[:port] before pulumi up",
        ),
        (  # a capture alone does not say where the SM runs: never a railyard OpenSM
            "fabric.infiniband.subnet_managers[0].node_description",
            "still PLACEHOLDER (railyard import could not tell where the SM runs); set "
            "the master SM's node description (sminfo names its lid; smpquery nodedesc <lid>) "
            "or its port GUID (guid: sminfo's sm guid), or import with --ssh or --sminfo",
        ),
    ]
    assert not mocks.resources


# --- the component -------------------------------------------------------------------------


def test_one_node_resource_per_host_and_the_inventory(state_root: Path) -> None:
    spec = spec_from_mapping(
        {
            **example(),
            "fabric": {
                **example()["fabric"],
                "switches": [{"name": "mgmt1", "os": "sonic", "address": "10.20.0.3"}],
            },
        }
    )
    mocks, out = build_component(lambda: ExistingCluster("c", spec), "adopt")
    nodes = {r.inputs["host"]: r.inputs for r in mocks.of(DYNAMIC)}
    assert sorted(nodes) == ["gpu01", "gpu02", "gpu03", "gpu04", "head1"]
    assert nodes["gpu01"]["source"] == {"declared": True, "keys": [KEY]}
    assert "source" not in nodes["gpu02"]  # None: pinned at first contact
    assert (nodes["head1"]["user"], nodes["head1"]["address"], nodes["head1"]["port"]) == (
        "admin",
        "10.20.0.2",
        2222,
    )
    assert nodes["gpu01"]["known_hosts"] == str(state_root / "adopt" / "known_hosts")
    assert nodes["gpu01"]["private_key"] == str(state_root / "adopt" / "id_ed25519")
    hosts = out["inventory"]["all"]["hosts"]
    assert hosts["gpu01"] == {"ansible_host": "10.20.0.11"}
    assert hosts["head1"] == {"ansible_host": "10.20.0.2", "ansible_user": "admin",
                              "ansible_port": 2222}  # fmt: skip
    assert out["inventory"]["all"]["vars"]["railyard_target"] == "existing"
    assert out["hosts"]["head1"]["address"] == "10.20.0.2"
    assert out["bmc_endpoints"] == {}
    assert out["switches"]["mgmt1"]["ansible_host"] == "10.20.0.3"
    assert any(u.endswith("railyard:existing:Cluster::c") for u in out["urns"])


# --- the node resource at every up -------------------------------------------------------


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _props(tmp_path: Path, port: int) -> dict[str, Any]:
    key = tmp_path / "id_ed25519"
    key.write_text("")
    return {
        "host": "gpu07",
        "user": "root",
        "address": "127.0.0.1",
        "port": float(port),  # numbers reach a dynamic provider as floats
        "known_hosts": str(tmp_path / "known_hosts"),
        "private_key": str(key),
        "source": None,
        "timeout": 5.0,
        "keys": [KEY],
        "pinned_from": "first contact",
    }


def test_changed_inputs_pin_again_without_contact(tmp_path: Path) -> None:
    olds = _props(tmp_path, _closed_port())
    moved = {**olds, "address": "127.0.0.2"}
    assert ExistingNodeProvider().diff("x", olds, moved).changes is True
    # no key pinned for it any more (ssh-keygen -R, as HostKeyChanged advises): pin afresh
    assert ExistingNodeProvider().diff("x", olds, dict(olds)).changes is True


def test_a_node_pinned_by_its_ca_trusts_the_ca_then_logs_in_strictly(tmp_path: Path) -> None:
    """No key of its own: no first contact (it would accept an unsigned key); the CA line is
    written and the strict login (here to a port nobody listens on) fails by name."""
    props = {**_props(tmp_path, _closed_port()), "ca": [f"@cert-authority 127.0.0.1 {KEY}"]}
    with pytest.raises(ConnectionError, match=r"^gpu07 \(127\.0\.0\.1\): SSH login failed: "):
        ExistingNodeProvider().create(props)
    assert f"@cert-authority 127.0.0.1 {KEY}" in Path(props["known_hosts"]).read_text()
    assert pinned_keys(Path(props["known_hosts"]), "127.0.0.1") == {}


def test_a_node_that_does_not_answer_fails_the_update_by_name(tmp_path: Path) -> None:
    """A pinned node is logged in to at every diff: the real ssh client against a loopback
    port nobody listens on fails, naming the node."""
    port = _closed_port()
    olds = _props(tmp_path, port)
    pin(Path(olds["known_hosts"]), "gpu07", "127.0.0.1", [KEY], port=port)
    with pytest.raises(ConnectionError, match=r"^gpu07 \(127\.0\.0\.1\): SSH login failed: "):
        ExistingNodeProvider().diff("x", olds, dict(olds))
