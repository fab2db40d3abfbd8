"""The lab's Redfish BMCs require HTTP basic auth: a 2-node lab built by ``pulumi up``
(Automation API, file backend in tmp) first with a generated password, then with the spec's
``bmc.password`` config secret. The password never shows in clear in state or logs.

Own stack name ``rybmc-<hex>``, subnets 198.18.120-134.0/24 (management) and 198.18.136-150.0/24
(BMC), ports 19100-19129 (BMC) and 17500-17734 (ibsim)."""

from __future__ import annotations

import json
import secrets
import stat
import time
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from fabric.lab.bmc import read_credentials
from fabric.redfish import RedfishClient, RedfishError
from tests.integration.labkit import OwnLab, own_lab

pytestmark = pytest.mark.integration


def _spec(tag: int) -> dict[str, Any]:
    return {
        "name": "rybmc",
        "target": "lab",
        "nodes": [
            {"names": "b1", "role": "compute", "hcas": [{"device": "mlx5_0"}]},
            {"names": "sm1", "role": "sm", "hcas": [{"device": "mlx5_0"}]},
        ],
        "fabric": {
            "kind": "infiniband",
            "mtu": 4096,
            "topology": {
                "kind": "fat-tree",
                "leaves": 1,
                "nodes_per_leaf": 2,
                "ports_per_switch": 8,
            },
            "infiniband": {"subnet_managers": [{"host": "sm1", "priority": 14}]},
        },
        "management": {"subnet": f"198.18.{120 + tag}.0/24"},
        "bmc": {"subnet": f"198.18.{136 + tag}.0/24", "username": "operator"},
        "lab": {"bmc_port": 19100 + 2 * tag, "ibsim_port": 17500 + 16 * tag},
    }


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OwnLab]:
    with own_lab(tmp_path_factory, "rybmc", _spec) as lab:
        yield lab
    assert not lab.state.exists()


def _endpoint(lab: OwnLab, node: str = "b1") -> dict[str, str]:
    return lab.stack.outputs()["bmc_endpoints"].value[node]


def _secret_leaks(lab: OwnLab, password: str) -> list[str]:
    """Files where ``password`` shows in clear: the backend (state, history, backups) and logs."""
    files = [
        *lab.backend.rglob("*"),
        *lab.state.rglob("*.log"),
        *lab.stack_file.parent.glob("*.yaml"),
    ]
    return [str(f) for f in files if f.is_file() and password.encode() in f.read_bytes()]


def _stored_emulator(lab: OwnLab) -> dict[str, Any]:
    """The emulator resource as the file backend stores it (secrets encrypted)."""
    path = lab.backend / ".pulumi" / "stacks" / "railyard" / f"{lab.name}.json"
    resources = json.loads(path.read_text())["checkpoint"]["latest"]["resources"]
    return next(r for r in resources if r["urn"].endswith("-bmc-emulator"))


def test_unauthenticated_get_is_refused(lab: OwnLab) -> None:
    bmc = _endpoint(lab)
    assert (
        requests.get(f"{bmc['url']}/redfish/v1/", timeout=10).status_code == 200
    )  # DMTF: root is open
    assert requests.get(f"{bmc['url']}/redfish/v1/Systems", timeout=10).status_code == 401
    wrong = requests.get(f"{bmc['url']}/redfish/v1/Systems", auth=("operator", "wrong"), timeout=10)
    assert wrong.status_code == 401
    with pytest.raises(RedfishError, match="HTTP 401; check bmc.username"):
        RedfishClient(bmc["url"]).systems()


def test_generated_password_is_a_secret_and_authenticates(lab: OwnLab) -> None:
    bmc_dir = lab.state / "bmc"
    creds = read_credentials(bmc_dir)
    assert creds.username == _endpoint(lab)["username"] == "operator"
    assert len(creds.password) >= 32 and "***" in repr(creds)
    for f in ("credentials.json", "htpasswd"):
        assert stat.S_IMODE((bmc_dir / f).stat().st_mode) == 0o600, f
    assert creds.password not in (bmc_dir / "htpasswd").read_text()  # bcrypt digest only
    assert (bmc_dir / "htpasswd").read_text().startswith("operator:$2b$")
    assert _secret_leaks(lab, creds.password) == []
    assert "ciphertext" in _stored_emulator(lab)["outputs"]["out_password"]
    with RedfishClient(_endpoint(lab)["url"], creds.username, creds.password) as client:
        assert len(client.systems()) == 2


def test_authenticated_power_off_on_drives_the_container(lab: OwnLab) -> None:
    from fabric.lab.node import state

    bmc = _endpoint(lab)
    creds = read_credentials(lab.state / "bmc")
    container = f"{lab.name}-b1"
    with RedfishClient(bmc["url"], creds.username, creds.password) as client:
        path = client.system_path(bmc["system_id"])
        for action, power, running in (("ForceOff", "Off", False), ("On", "On", True)):
            client.reset(path, action)
            client.wait_power_state(path, power, timeout=40)
            deadline = time.monotonic() + 40
            while (
                time.monotonic() < deadline and (state(container) or {}).get("running") != running
            ):
                time.sleep(1)
            assert (state(container) or {}).get("running") is running, action


def test_spec_password_from_config_secret_replaces_the_generated_one(lab: OwnLab) -> None:
    from pulumi import automation as auto

    old = read_credentials(lab.state / "bmc")
    data = lab.read_config()
    data["config"]["railyard:cluster"]["bmc"]["password"] = {"config": "labBmcPassword"}
    lab.write_config(data)
    chosen = "lab-" + secrets.token_hex(12)
    lab.stack.set_config("labBmcPassword", auto.ConfigValue(value=chosen, secret=True))
    assert chosen not in lab.stack_file.read_text()
    lab.stack.up(on_output=lambda _: None)

    assert read_credentials(lab.state / "bmc").password == chosen
    url = _endpoint(lab)["url"]
    assert requests.get(f"{url}/redfish/v1/Systems", auth=old.auth(), timeout=10).status_code == 401
    assert (
        requests.get(f"{url}/redfish/v1/Systems", auth=("operator", chosen), timeout=10).status_code
        == 200
    )
    assert _secret_leaks(lab, chosen) == []
    assert "ciphertext" in _stored_emulator(lab)["inputs"]["password"]
    preview = lab.stack.preview(on_output=lambda _: None)
    assert {k: v for k, v in preview.change_summary.items() if k != "same"} == {}


def test_missing_config_secret_names_the_field_and_the_fix(lab: OwnLab) -> None:
    from pulumi import automation as auto

    data = lab.read_config()
    data["config"]["railyard:cluster"]["bmc"]["password"] = {"config": "noSuchSecret"}
    original = lab.stack_file.read_text()
    lab.write_config(data)
    try:
        with pytest.raises(auto.CommandError) as err:
            lab.stack.preview(on_output=lambda _: None)
    finally:
        lab.stack_file.write_text(original)
    assert "bmc.password.config" in str(err.value)
    assert "pulumi config set --secret noSuchSecret" in str(err.value)
