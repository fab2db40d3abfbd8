"""The Redfish client against a scripted BMC (a requests transport adapter)."""

from __future__ import annotations

import json
from typing import Any

import pytest
import requests
from requests.adapters import BaseAdapter

from fabric.redfish import RedfishClient, RedfishError

BMC = "https://bmc.test"
SYSTEM = "/redfish/v1/Systems/1"


class ScriptedBmc(BaseAdapter):
    """Answers from a dict of path -> body; records every request; PATCH/POST -> 204."""

    def __init__(self, resources: dict[str, Any], status: dict[str, int] | None = None) -> None:
        super().__init__()
        self.resources = resources
        self.status = status or {}
        self.requests: list[tuple[str, str, Any]] = []
        self.error: Exception | None = None

    def send(self, request: requests.PreparedRequest, **_: Any) -> requests.Response:
        if self.error:
            raise self.error
        path = request.path_url
        body = json.loads(request.body) if request.body else None
        self.requests.append((request.method or "", path, body))
        response = requests.Response()
        response.request, response.url = request, request.url or ""
        response.status_code = self.status.get(path, 200 if request.method == "GET" else 204)
        if request.method == "PATCH" and response.status_code == 204:
            self.resources[path]["Boot"].update(self.apply_boot(body["Boot"]))
        if request.method == "GET" and response.status_code < 400:
            response._content = json.dumps(self.resources[path]).encode()
        elif response.status_code >= 400:
            response._content = json.dumps({"error": {"message": "scripted failure"}}).encode()
        else:
            response._content = b""
        return response

    def apply_boot(self, boot: dict[str, Any]) -> dict[str, Any]:
        return boot

    def close(self) -> None:
        pass


def resources(power: str = "Off") -> dict[str, Any]:
    return {
        "/redfish/v1/": {"Systems": {"@odata.id": "/redfish/v1/Systems"}},
        "/redfish/v1/Systems": {"Members": [{"@odata.id": SYSTEM}]},
        SYSTEM: {
            "Id": "1",
            "Name": "gpu01",
            "SerialNumber": "SN123",
            "PowerState": power,
            "Boot": {
                "BootSourceOverrideTarget": "None",
                "BootSourceOverrideEnabled": "Disabled",
                "BootSourceOverrideTarget@Redfish.AllowableValues": ["None", "Pxe", "Hdd"],
            },
            "EthernetInterfaces": {"@odata.id": f"{SYSTEM}/EthernetInterfaces"},
            "Actions": {
                "#ComputerSystem.Reset": {
                    "target": f"{SYSTEM}/Actions/ComputerSystem.Reset",
                    "ResetType@Redfish.AllowableValues": ["On", "ForceOff", "ForceRestart"],
                }
            },
        },
        f"{SYSTEM}/EthernetInterfaces": {
            "Members": [
                {"@odata.id": f"{SYSTEM}/EthernetInterfaces/1"},
                {"@odata.id": f"{SYSTEM}/EthernetInterfaces/2"},
            ]
        },
        f"{SYSTEM}/EthernetInterfaces/1": {"MACAddress": "AA:BB:CC:00:00:01"},
        f"{SYSTEM}/EthernetInterfaces/2": {
            "PermanentMACAddress": "aa:bb:cc:00:00:02",
            "MACAddress": "02:00:00:00:00:99",
        },
    }


def client(bmc: ScriptedBmc) -> RedfishClient:
    c = RedfishClient(BMC, "admin", "s3cret-pw")
    c._session.mount(BMC, bmc)
    return c


def test_reads_serial_power_and_permanent_macs() -> None:
    c = client(ScriptedBmc(resources()))
    info = c.system(c.system_path())
    assert (info.id, info.serial, info.power_state) == ("1", "SN123", "Off")
    assert info.macs == ("aa:bb:cc:00:00:01", "aa:bb:cc:00:00:02")
    assert info.boot.allowed_targets == ("None", "Pxe", "Hdd")


def test_system_id_not_found_names_the_field() -> None:
    c = client(ScriptedBmc(resources()))
    with pytest.raises(RedfishError, match=r"no system '7' \(have: 1\).*system_id"):
        c.system_path("7")


def test_boot_override_patches_and_reads_back() -> None:
    bmc = ScriptedBmc(resources())
    result = client(bmc).set_boot_override(SYSTEM, "Pxe")
    assert (
        "PATCH",
        SYSTEM,
        {"Boot": {"BootSourceOverrideTarget": "Pxe", "BootSourceOverrideEnabled": "Once"}},
    ) in bmc.requests
    assert result.target_applied and result.enabled_applied
    assert bmc.requests[-1][0] == "GET"  # the read-back follows the PATCH


def test_boot_override_reports_continuous_when_once_was_asked() -> None:
    bmc = ScriptedBmc(resources())
    bmc.apply_boot = lambda boot: {**boot, "BootSourceOverrideEnabled": "Continuous"}  # type: ignore[method-assign]
    result = client(bmc).set_boot_override(SYSTEM, "Pxe", "Once")
    assert result.target_applied
    assert not result.enabled_applied
    assert result.readback.enabled == "Continuous"


def test_boot_override_refuses_target_the_bmc_does_not_offer() -> None:
    bmc = ScriptedBmc(resources())
    with pytest.raises(RedfishError, match=r"'Cd' not offered.*None, Pxe, Hdd"):
        client(bmc).set_boot_override(SYSTEM, "Cd")
    assert not [r for r in bmc.requests if r[0] == "PATCH"]


def test_boot_override_target_not_applied_is_an_error() -> None:
    bmc = ScriptedBmc(resources())
    bmc.apply_boot = lambda boot: {"BootSourceOverrideTarget": "Hdd"}  # type: ignore[method-assign]
    with pytest.raises(RedfishError, match="asked boot target 'Pxe', the BMC reads back 'Hdd'"):
        client(bmc).set_boot_override(SYSTEM, "Pxe")


def test_reset_posts_to_the_action_target() -> None:
    bmc = ScriptedBmc(resources())
    client(bmc).reset(SYSTEM, "On")
    assert bmc.requests[-1] == (
        "POST",
        f"{SYSTEM}/Actions/ComputerSystem.Reset",
        {"ResetType": "On"},
    )


def test_reset_type_outside_allowable_values_refused() -> None:
    bmc = ScriptedBmc(resources())
    with pytest.raises(RedfishError, match="ResetType 'PowerCycle' not allowed"):
        client(bmc).reset(SYSTEM, "PowerCycle")
    assert not [r for r in bmc.requests if r[0] == "POST"]


def test_wait_power_state_times_out_naming_the_last_state() -> None:
    bmc = ScriptedBmc(resources("Off"))
    ticks = iter(range(100))
    with pytest.raises(RedfishError, match=r"PowerState still 'Off' after 5 s waiting for 'On'"):
        client(bmc).wait_power_state(
            SYSTEM, "On", timeout=5, clock=lambda: next(ticks), sleep=lambda _: None
        )


def test_wait_power_state_returns_when_reached() -> None:
    bmc = ScriptedBmc(resources("On"))
    assert client(bmc).wait_power_state(SYSTEM, "On", clock=lambda: 0.0) == 0.0


def test_auth_failure_names_the_credentials_not_the_password() -> None:
    bmc = ScriptedBmc(resources(), status={SYSTEM: 401})
    with pytest.raises(RedfishError) as error:
        client(bmc).power_state(SYSTEM)
    assert "bmc.username" in str(error.value) and "bmc.password.config" in str(error.value)
    assert "s3cret-pw" not in str(error.value)


def test_tls_failure_points_at_verify_tls() -> None:
    bmc = ScriptedBmc(resources())
    bmc.error = requests.exceptions.SSLError("certificate verify failed")
    with pytest.raises(RedfishError, match="bmc.verify_tls: false"):
        client(bmc).service_root()


def test_unreachable_bmc_names_the_endpoint_field() -> None:
    bmc = ScriptedBmc(resources())
    bmc.error = requests.exceptions.ConnectionError("refused")
    with pytest.raises(RedfishError, match=r"bmc\.endpoints\.<node>\.url"):
        client(bmc).service_root()


def test_http_error_carries_the_redfish_message() -> None:
    bmc = ScriptedBmc(resources(), status={SYSTEM: 500})
    with pytest.raises(RedfishError, match="HTTP 500: scripted failure"):
        client(bmc).power_state(SYSTEM)


def test_repr_hides_credentials() -> None:
    assert "s3cret" not in repr(RedfishClient(BMC, "admin", "s3cret-pw"))


def test_tls_verification_is_on_by_default() -> None:
    assert RedfishClient(BMC, "admin", "pw")._session.verify is True
    assert RedfishClient(BMC, "admin", "pw", verify_tls=False)._session.verify is False
