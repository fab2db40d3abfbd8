"""The bare-metal component under Pulumi mocks, its refusals, and the SSH wait."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pulumi
import pytest
import yaml
from conftest import DYNAMIC, Mocks, build_component, mock_stack

from fabric.cli import main
from fabric.spec import (
    SKIP_RULES,
    ClusterSpec,
    SpecError,
    provision_problems,
)
from fabric.state import REPO_ROOT
from fabric.targets.baremetal.component import BaremetalCluster, BareMetalSettings
from fabric.targets.baremetal.dynamic_redfish import SshWaitError, wait_for_ssh
from fabric.targets.baremetal.rules import baremetal_settings_problems

EXAMPLE = REPO_ROOT / "Pulumi.baremetal-ib.example.yaml"
SPECS = Path(__file__).parent / "specs"


def example() -> dict[str, Any]:
    return yaml.safe_load(EXAMPLE.read_text())["config"]["railyard:cluster"]


@pytest.fixture()
def secret_config() -> Iterator[None]:
    pulumi.runtime.set_all_config(
        {"railyard:bmcPassword": "bmc-pw-123", "railyard:bootTarget": "Pxe"},
        ["railyard:bmcPassword"],
    )
    yield
    pulumi.runtime.set_all_config({}, [])


def build(spec: ClusterSpec) -> tuple[Mocks, dict[str, Any]]:
    """Run the component under fresh mocks; return the mocks and its resolved outputs."""
    return build_component(lambda: BaremetalCluster("c", spec), "bmtest")


def test_one_redfish_node_per_host(secret_config: None) -> None:
    mocks, out = build(ClusterSpec.model_validate(example()))
    nodes = {r.inputs["node"]: r.inputs for r in mocks.of(DYNAMIC) if "url" in r.inputs}
    assert sorted(nodes) == ["gpu01", "gpu02", "gpu03", "gpu04", "sm1"]
    assert nodes["gpu02"]["url"] == "https://10.10.1.12"
    assert nodes["sm1"]["system_id"] == "1"
    assert nodes["gpu01"]["address"] == "10.10.0.11"
    assert nodes["gpu01"]["boot_target"] == "Pxe"
    assert nodes["gpu01"]["verify_tls"] is True
    # Read from the secret config key, and still marked secret on the resource's inputs.
    secret_sig = "4dabf18193072939515e22adb298388d"
    assert nodes["gpu01"]["password"] == {
        secret_sig: "1b47061264138c4ac30d75fd1eb44270",
        "value": "bmc-pw-123",
    }
    assert out["hosts"]["gpu03"]["serial"] == "SN-gpu03"
    assert all(
        "::railyard:baremetal:Cluster$" in u for u in out["urns"] if "pulumi-python:dynamic" in u
    )


def _redfish_nodes(mocks: Mocks) -> dict[str, dict[str, Any]]:
    return {r.inputs["node"]: r.inputs for r in mocks.of(DYNAMIC) if "url" in r.inputs}


def _pins(mocks: Mocks) -> dict[str, dict[str, Any]]:
    return {r.inputs["host"]: r.inputs for r in mocks.of(DYNAMIC) if "known_hosts" in r.inputs}


def test_no_boot_override_unless_asked() -> None:
    """Without bootTarget and boot_once no one-time boot device is set; boot_once is per node."""
    pulumi.runtime.set_all_config({"railyard:bmcPassword": "pw"}, ["railyard:bmcPassword"])
    try:
        data = example()
        data["bmc"]["endpoints"]["gpu02"]["boot_once"] = "Pxe"
        mocks, _ = build(ClusterSpec.model_validate(data))
    finally:
        pulumi.runtime.set_all_config({}, [])
    nodes = _redfish_nodes(mocks)
    assert nodes["gpu01"].get("boot_target") is None  # mocks drop None inputs
    assert nodes["gpu02"]["boot_target"] == "Pxe"


def test_every_node_gets_a_host_key_pin_after_its_redfish_node(secret_config: None) -> None:
    """First contact by default; keys the endpoint declares are pinned as given; ``replaced``
    reaches the pin (a change there accepts a new key once)."""
    data = example()
    key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBPiG4a0lJYIzEG7C0wDPyHlZ6e6c0iAGm2hT6yNKJ8r"
    data["bmc"]["endpoints"]["gpu01"]["host_keys"] = [key]
    data["bmc"]["endpoints"]["gpu03"]["replaced"] = "SN-NEW-3"
    mocks, out = build(ClusterSpec.model_validate(data))
    pins = _pins(mocks)
    assert sorted(pins) == ["gpu01", "gpu02", "gpu03", "gpu04", "sm1"]
    assert pins["gpu01"]["source"] == {"declared": True, "keys": [key]}
    assert pins["gpu02"].get("source") is None
    assert pins["gpu03"]["replaced"] == "SN-NEW-3"
    assert _redfish_nodes(mocks)["gpu03"]["replaced"] == "SN-NEW-3"
    assert pins["gpu01"]["address"] == "10.10.0.11"
    assert out["inventory"]["all"]["hosts"]["gpu01"] == {"ansible_host": "10.10.0.11"}


def test_bad_boot_once_and_host_key_lines_are_named() -> None:
    data = example()
    data["bmc"]["endpoints"]["gpu01"]["boot_once"] = "Floppy"
    data["bmc"]["endpoints"]["gpu02"]["host_keys"] = ["not a key"]
    found = problems_of(data)
    assert "Pxe" in found["bmc.endpoints.gpu01.boot_once"]
    assert "ssh-ed25519" in found["bmc.endpoints.gpu02.host_keys[0]"]


def test_a_lab_block_marks_bare_metal_as_simulated_but_datacenter_is_the_labs() -> None:
    data = example()
    assert not ClusterSpec.model_validate(data).simulated
    data["lab"] = {}
    assert ClusterSpec.model_validate(data).simulated
    data["lab"] = {"datacenter": True}
    assert "target lab" in problems_of(data)["lab.datacenter"]


def test_switches_are_handed_to_ansible(secret_config: None) -> None:
    mocks, out = build(ClusterSpec.model_validate(example()))
    assert len(mocks.of("railyard:baremetal:Switch")) == 2
    assert out["switches"]["mgmt1"] == {
        "switch_name": "mgmt1",
        "switch_os": "sonic",
        "switch_role": "management",
        "switch_managed": True,
        "switch_qos_apply": False,
        "switch_qos_interfaces": [],
        "ansible_user": "admin",
        "switch_qos_os": "sonic",
        "ansible_host": "10.10.0.2",
        "ansible_network_os": "dellemc.enterprise_sonic.sonic",
        "ansible_connection": "ansible.netcommon.network_cli",
    }
    assert out["switches"]["ib-leaf1"]["switch_managed"] is False


def test_inventory_uses_fixed_addresses(secret_config: None) -> None:
    _, out = build(ClusterSpec.model_validate(example()))
    hosts = out["inventory"]["all"]["hosts"]
    assert hosts["sm1"] == {"ansible_host": "10.10.0.21"}
    assert out["inventory"]["all"]["children"]["subnet_managers"]["hosts"] == {
        "sm1": {"subnet_manager_priority": 14}
    }


def test_missing_secret_names_the_config_key() -> None:
    mock_stack("bmtest")
    with pytest.raises(pulumi.ConfigMissingError, match="railyard:bmcPassword"):
        BaremetalCluster("c", ClusterSpec.model_validate(example()))


def problems_of(data: dict[str, Any], settings: BareMetalSettings | None = None) -> dict[str, str]:
    """What the component checks before creating anything, on a spec whose rules did not run."""
    spec = ClusterSpec.model_validate(data, context={SKIP_RULES: True})
    found = provision_problems(spec, "baremetal")
    return dict(found + baremetal_settings_problems(settings or BareMetalSettings()))


def test_node_without_endpoint_or_address_refused() -> None:
    data = example()
    del data["bmc"]["endpoints"]["gpu03"]
    del data["management"]["addresses"]["gpu04"]
    found = problems_of(data)
    assert "Redfish endpoint" in found["bmc.endpoints.gpu03"]
    assert "fixed address" in found["management.addresses.gpu04"]


def test_plain_http_needs_verify_tls_false() -> None:
    data = example()
    data["bmc"]["endpoints"]["gpu01"]["url"] = "http://10.10.1.11"
    assert "unencrypted" in problems_of(data)["bmc.endpoints.gpu01.url"]
    data["bmc"]["verify_tls"] = False
    assert "bmc.endpoints.gpu01.url" not in problems_of(data)


def test_password_reference_required() -> None:
    data = example()
    del data["bmc"]["password"]
    assert "--secret" in problems_of(data)["bmc.password"]


def test_unknown_boot_target_refused() -> None:
    found = problems_of(example(), BareMetalSettings(boot_target="Floppy"))
    assert "Pxe" in found["config railyard:bootTarget"]


def test_refused_before_any_resource(secret_config: None) -> None:
    data = example()
    data["bmc"]["endpoints"]["gpu01"]["url"] = "http://10.10.1.11"
    mocks = mock_stack("bmtest")
    with pytest.raises(SpecError, match=r"bmc\.endpoints\.gpu01\.url"):
        BaremetalCluster("c", ClusterSpec.model_validate(data, context={SKIP_RULES: True}))
    assert mocks.resources == []


def test_spec_itself_refuses_a_node_without_endpoint() -> None:
    data = example()
    del data["bmc"]["endpoints"]["gpu03"]
    with pytest.raises(ValueError, match=r"bmc\.endpoints\.gpu03: every node needs a Redfish"):
        ClusterSpec.model_validate(data)


def test_settings_problems_name_the_config_key() -> None:
    found = baremetal_settings_problems(BareMetalSettings(settle_target="Floppy"))
    assert [str(p) for p in found] == [
        "config railyard:settleBootTarget: 'Floppy'; use one of Pxe, Hdd, Cd, UefiHttp,"
        " UefiTarget, Usb"
    ]


# --- validate refuses what the component refuses -----------------------------------------


def refusals(data: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Any:
    """The problems ``python -m fabric validate`` reports for ``data``, and the component's."""
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(data))
    code = main(["validate", "--json", "--spec", str(path)])
    found = [(p["path"], p["message"]) for p in json.loads(capsys.readouterr().out)["problems"]]
    mock_stack("bmtest")
    with pytest.raises(SpecError) as error:
        BaremetalCluster("c", ClusterSpec.model_validate(data, context={SKIP_RULES: True}))
    return code, found, [(p.path, p.message) for p in error.value.problems]


def _unaddressed_switch(data: dict[str, Any]) -> None:
    data["fabric"]["switches"] = [{"name": "leaf01", "os": "sonic"}]


@pytest.mark.parametrize(
    ("change", "path", "words"),
    [
        (
            lambda d: d["bmc"]["endpoints"].pop("gpu3"),
            "bmc.endpoints.gpu3",
            "every node needs a Redfish endpoint url",
        ),
        (
            lambda d: d["management"]["addresses"].pop("gpu4"),
            "management.addresses.gpu4",
            "every bare-metal node needs a fixed address",
        ),
        (
            lambda d: d["bmc"]["endpoints"]["gpu1"].update(url="http://10.11.0.11"),
            "bmc.endpoints.gpu1.url",
            "plain http sends the BMC password unencrypted",
        ),
        (
            lambda d: d["bmc"].pop("password"),
            "bmc.password",
            "set {config: bmcPassword} and `pulumi config set --secret bmcPassword ...`",
        ),
        (lambda d: d.pop("bmc"), "bmc", "target baremetal needs a bmc block with endpoints"),
        (
            _unaddressed_switch,
            "fabric.switches[0].address",
            "sonic switch 'leaf01' needs a management address",
        ),
    ],
    ids=["no-endpoint", "no-address", "plain-http", "no-password", "no-bmc", "switch-address"],
)
def test_validate_refuses_what_the_component_refuses(
    change: Any, path: str, words: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = yaml.safe_load((SPECS / "valid" / "roce.yaml").read_text())
    change(data)
    code, validate, component = refusals(data, tmp_path, capsys)
    assert (code, validate) == (1, component)
    assert words in dict(validate)[path]


# --- wait_for_ssh against loopback listeners --------------------------------------------


def listener(greeting: bytes, times: int = 1) -> tuple[int, threading.Thread]:
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]

    def serve() -> None:
        with server:
            for _ in range(times):
                conn, _ = server.accept()
                with conn:
                    conn.sendall(greeting)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return port, thread


def test_wait_for_ssh_reads_the_banner() -> None:
    port, thread = listener(b"SSH-2.0-OpenSSH_9.2p1 Debian\r\n")
    banner, waited = wait_for_ssh("127.0.0.1", port, timeout=5, interval=0.1)
    assert banner == "SSH-2.0-OpenSSH_9.2p1 Debian"
    assert waited < 5
    thread.join(1)


def test_wait_for_ssh_rejects_a_non_ssh_service() -> None:
    port, _ = listener(b"HTTP/1.1 400 Bad Request\r\n", times=100)
    with pytest.raises(SshWaitError, match="not an SSH banner"):
        wait_for_ssh("127.0.0.1", port, timeout=0.3, interval=0.1)


def test_wait_for_ssh_times_out_with_a_clear_error() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # bound, not listening: connections are refused
        with pytest.raises(SshWaitError, match=rf"127\.0\.0\.1:{port} did not answer within 0 s"):
            wait_for_ssh("127.0.0.1", port, timeout=0.3, interval=0.1)
