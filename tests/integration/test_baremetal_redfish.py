"""The bare-metal path against a real Redfish service: sushy-tools' emulator on loopback.

The emulator (fake driver) applies power actions 1-11 s after answering, checks
HTTP basic auth against a bcrypt htpasswd file, and reads back
BootSourceOverrideEnabled as Continuous whatever was asked. A loopback listener
that sends an SSH banner stands in for each node's sshd here; the whole bare-metal
``pulumi up`` (host keys, hand-off, checks) over real lab nodes is
``tests/integration/test_baremetal_lab.py``.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import bcrypt
import pytest
import requests

from fabric.redfish import RedfishClient, RedfishError
from fabric.targets.baremetal.dynamic_redfish import RedfishNodeProvider, provision

pytestmark = pytest.mark.integration

VENV_BIN = Path(sys.executable).parent
USER, PASSWORD = "admin", "emulator-pw-9f3"
SYSTEMS = {
    "n1": ("8b6c0a0e-1111-4c1a-9d52-0d3c5b1e0001", "52:54:00:aa:00:01"),
    "n2": ("8b6c0a0e-2222-4c1a-9d52-0d3c5b1e0002", "52:54:00:aa:00:02"),
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture()
def emulator(tmp_path: Path) -> Iterator[str]:
    """A sushy-tools emulator on 127.0.0.1 with two powered-off systems and basic auth."""
    port = free_port()
    auth = tmp_path / "htpasswd"
    auth.write_text(f"{USER}:{bcrypt.hashpw(PASSWORD.encode(), bcrypt.gensalt()).decode()}\n")
    systems = [
        {
            "uuid": uuid,
            "name": name,
            "power_state": "Off",
            "nics": [{"mac": mac, "ip": "127.0.0.1"}],
        }
        for name, (uuid, mac) in SYSTEMS.items()
    ]
    config = tmp_path / "emulator.conf"
    config.write_text(
        "SUSHY_EMULATOR_FAKE_DRIVER = True\n"
        f"SUSHY_EMULATOR_FAKE_SYSTEMS = {systems!r}\n"
        f"SUSHY_EMULATOR_AUTH_FILE = {str(auth)!r}\n"
        f"SUSHY_EMULATOR_STATE_DIR = {str(tmp_path / 'state')!r}\n"
    )
    log = (tmp_path / "emulator.log").open("w")
    proc = subprocess.Popen(
        [
            str(VENV_BIN / "sushy-emulator"),
            "--config",
            str(config),
            "--interface",
            "127.0.0.1",
            "--port",
            str(port),
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                requests.get(f"{url}/redfish/v1/", timeout=1).raise_for_status()
                break
            except requests.RequestException:
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(
                        f"sushy-emulator did not start: {(tmp_path / 'emulator.log').read_text()}"
                    )
                time.sleep(0.3)
        yield url
    finally:
        proc.terminate()
        proc.wait(10)
        log.close()


@pytest.fixture()
def sshd_stub() -> Iterator[int]:
    """Loopback listeners on 127.0.0.1 and 127.0.0.2 (same port) sending an SSH banner."""
    port = free_port()
    servers = [socket.create_server((host, port)) for host in ("127.0.0.1", "127.0.0.2")]
    stop = threading.Event()

    def serve(server: socket.socket) -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with conn:
                conn.sendall(b"SSH-2.0-railyard-stub\r\n")

    threads = [threading.Thread(target=serve, args=(s,), daemon=True) for s in servers]
    for thread in threads:
        thread.start()
    yield port
    stop.set()
    for thread in threads:
        thread.join(2)
    for server in servers:
        server.close()


def test_read_boot_override_power_on(emulator: str) -> None:
    uuid, mac = SYSTEMS["n1"]
    with RedfishClient(emulator, USER, PASSWORD, verify_tls=False) as bmc:
        assert bmc.service_root()["RedfishVersion"]
        path = bmc.system_path(uuid)
        info = bmc.system(path)
        assert info.name == "n1" and info.power_state == "Off"
        assert info.macs == (mac,)
        result = bmc.set_boot_override(path, "Pxe", "Once")
        assert result.target_applied and result.readback.target == "Pxe"
        # The fake driver reads back Continuous: reported as it is, not as asked.
        assert result.readback.enabled == "Continuous" and not result.enabled_applied
        bmc.reset(path, "On")
        waited = bmc.wait_power_state(path, "On", timeout=30, interval=0.5)
        assert waited <= 30
        assert bmc.power_state(path) == "On"
        assert bmc.power_state(bmc.system_path(SYSTEMS["n2"][0])) == "Off"


def test_wrong_password_is_refused(emulator: str) -> None:
    with RedfishClient(emulator, USER, "wrong", verify_tls=False) as bmc:
        with pytest.raises(RedfishError, match="HTTP 401.*bmc.username"):
            bmc.system_path()


def test_provision_one_node(emulator: str, sshd_stub: int) -> None:
    uuid, mac = SYSTEMS["n2"]
    outs = provision(
        {
            "node": "n2",
            "url": emulator,
            "system_id": uuid,
            "username": USER,
            "password": PASSWORD,
            "verify_tls": False,
            "address": "127.0.0.2",
            "boot_target": "Pxe",
            "settle_target": "Hdd",
            "ssh_port": sshd_stub,
            "ssh_timeout": 20,
            "power_timeout": 30,
            "restart_if_on": False,
        }
    )
    # The password is kept only as the (secret) input delete needs, nowhere else.
    assert PASSWORD not in json.dumps({k: v for k, v in outs.items() if k != "password"})
    assert outs["power_state"] == "On"
    assert outs["macs"] == [mac]
    assert outs["ssh_banner"] == "SSH-2.0-railyard-stub"
    # Once was read back as Continuous, so after SSH answered the override went to Hdd.
    assert outs["boot_override_target"] == "Hdd"
    assert "read back Continuous" in outs["boot_note"]
    with RedfishClient(emulator, USER, PASSWORD, verify_tls=False) as bmc:
        assert bmc.boot_override(bmc.system_path(uuid)).target == "Hdd"


def test_provision_fails_clearly_without_ssh(emulator: str) -> None:
    uuid, _ = SYSTEMS["n1"]
    closed = free_port()
    with pytest.raises(Exception, match=rf"127\.0\.0\.1:{closed} did not answer within 2 s"):
        provision(
            {
                "node": "n1",
                "url": emulator,
                "system_id": uuid,
                "username": USER,
                "password": PASSWORD,
                "verify_tls": False,
                "address": "127.0.0.1",
                "boot_target": "Pxe",
                "settle_target": "Hdd",
                "ssh_port": closed,
                "ssh_timeout": 2,
                "power_timeout": 30,
                "restart_if_on": False,
            }
        )


def test_running_node_gets_no_boot_override_unless_it_asks(emulator: str, sshd_stub: int) -> None:
    """A running node: a stack-wide boot target is not set on it; the node's
    own ``boot_once`` (``boot_running``) is, without a reboot."""
    uuid, _ = SYSTEMS["n2"]
    props = {
        "node": "n2",
        "url": emulator,
        "system_id": uuid,
        "username": USER,
        "password": PASSWORD,
        "verify_tls": False,
        "address": "127.0.0.2",
        "boot_target": "Cd",
        "settle_target": None,
        "ssh_port": sshd_stub,
        "ssh_timeout": 20,
        "power_timeout": 30,
        "restart_if_on": False,
    }
    with RedfishClient(emulator, USER, PASSWORD, verify_tls=False) as bmc:
        path = bmc.system_path(uuid)
        bmc.reset(path, "On")
        bmc.wait_power_state(path, "On", timeout=30, interval=0.5)
        before = bmc.boot_override(path)
        outs = provision(props)
        assert bmc.boot_override(path) == before and outs["boot_note"] == ""
        outs = provision({**props, "boot_running": True})
        assert bmc.boot_override(path).target == "Cd"
        assert "already On" in outs["boot_note"]
        assert bmc.power_state(path) == "On"


def test_delete_powers_the_node_off(emulator: str, sshd_stub: int) -> None:
    uuid, _ = SYSTEMS["n2"]
    with RedfishClient(emulator, USER, PASSWORD, verify_tls=False) as bmc:
        path = bmc.system_path(uuid)
        bmc.reset(path, "On")
        bmc.wait_power_state(path, "On", timeout=30, interval=0.5)
        RedfishNodeProvider().delete(
            "n2",
            {
                "node": "n2",
                "url": emulator,
                "system_id": uuid,
                "system_path": path,
                "username": USER,
                "password": PASSWORD,
                "verify_tls": False,
                "power_timeout": 60,
            },
        )
        assert bmc.power_state(path) == "Off"
