"""The bare-metal path against a real Redfish service: sushy-tools' emulator on loopback.

The emulator (fake driver) applies power actions 1-11 s after answering, checks
HTTP basic auth against a bcrypt htpasswd file, and reads back
BootSourceOverrideEnabled as Continuous whatever was asked. A loopback listener
that sends an SSH banner stands in for each node's sshd.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import bcrypt
import pytest
import requests
import yaml

from fabric.components.dynamic_redfish import provision
from fabric.redfish import RedfishClient, RedfishError

pytestmark = pytest.mark.integration

ROOT = Path(__file__).parents[2]
VENV_BIN = Path(sys.executable).parent
PULUMI_BIN = Path.home() / ".cache/railyard/pulumi/v3.259.0/bin"
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
    assert "password" not in outs and PASSWORD not in json.dumps(outs)
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


PROGRAM = """\
import pulumi
from fabric.components import cluster_component
from fabric.spec import ClusterSpec

spec = ClusterSpec.model_validate(pulumi.Config().require_object("cluster"))
cluster = cluster_component("metal", spec)
pulumi.export("hosts", cluster.hosts)
pulumi.export("inventory", cluster.inventory)
"""


def spec_for(url: str) -> dict[str, Any]:
    return {
        "name": "metal",
        "target": "baremetal",
        "nodes": [
            {
                "names": "n[1-2]",
                "role": "compute",
                "hcas": [{"device": "mlx5_0", "link_layer": "InfiniBand"}],
            }
        ],
        "fabric": {
            "kind": "infiniband",
            "mtu": 4096,
            "infiniband": {"subnet_managers": [{"host": "n1", "priority": 14}]},
        },
        "management": {
            "subnet": "127.0.0.0/8",
            "addresses": {"n1": "127.0.0.1", "n2": "127.0.0.2"},
        },
        "bmc": {
            "username": USER,
            "password": {"config": "bmcPassword"},
            "verify_tls": False,
            "endpoints": {n: {"url": url, "system_id": uuid} for n, (uuid, _) in SYSTEMS.items()},
        },
    }


@pytest.mark.skipif(
    not (PULUMI_BIN / "pulumi").exists(), reason="Pulumi CLI not built (make bootstrap)"
)
def test_pulumi_up_brings_the_nodes_on(emulator: str, sshd_stub: int, tmp_path: Path) -> None:
    """A real `pulumi up` (file backend, offline) of a bare-metal stack through the dispatcher."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "Pulumi.yaml").write_text("name: railyard\nruntime: python\nmain: __main__.py\n")
    (project / "__main__.py").write_text(PROGRAM)
    backend = tmp_path / "backend"
    backend.mkdir()
    env = {
        **os.environ,
        "PATH": f"{PULUMI_BIN}:{VENV_BIN}:{os.environ['PATH']}",
        "PYTHONPATH": str(ROOT),
        "PULUMI_HOME": str(tmp_path / "pulumi-home"),
        "PULUMI_BACKEND_URL": f"file://{backend}",
        "PULUMI_CONFIG_PASSPHRASE": "integration-test",
        "PULUMI_SKIP_UPDATE_CHECK": "true",
        "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
    }

    def pulumi(*args: str, stdin: str | None = None) -> str:
        done = subprocess.run(
            ["pulumi", *args, "--non-interactive"],
            cwd=project,
            env=env,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert done.returncode == 0, f"pulumi {' '.join(args)}:\n{done.stdout}\n{done.stderr}"
        return done.stdout

    pulumi("stack", "init", "metal")
    pulumi("config", "set", "--secret", "bmcPassword", PASSWORD)
    stack_file = project / "Pulumi.metal.yaml"
    stack = yaml.safe_load(stack_file.read_text())  # holds the encrypted bmcPassword
    stack["config"].update(
        {
            "railyard:cluster": spec_for(emulator),
            "railyard:sshPort": str(sshd_stub),
            "railyard:sshTimeoutSeconds": "30",
            "railyard:powerTimeoutSeconds": "40",
            "railyard:sshPrivateKeyFile": str(tmp_path / "id_ed25519"),
            "railyard:knownHostsFile": str(tmp_path / "known_hosts"),
        }
    )
    stack_file.write_text(yaml.safe_dump(stack))
    assert PASSWORD not in stack_file.read_text()
    pulumi("up", "--yes", "--skip-preview")
    outputs = json.loads(pulumi("stack", "output", "--json", "--show-secrets"))
    assert {h: outputs["hosts"][h]["power_state"] for h in SYSTEMS} == {"n1": "On", "n2": "On"}
    assert outputs["hosts"]["n1"]["macs"] == [SYSTEMS["n1"][1]]
    assert outputs["inventory"]["all"]["hosts"]["n2"] == {"ansible_host": "127.0.0.2"}
    state = json.loads(pulumi("stack", "export", "--show-secrets=false"))
    assert PASSWORD not in json.dumps(state)
    with RedfishClient(emulator, USER, PASSWORD, verify_tls=False) as bmc:
        for uuid, _ in SYSTEMS.values():
            assert bmc.power_state(bmc.system_path(uuid)) == "On"
    pulumi("destroy", "--yes", "--skip-preview")
    shutil.rmtree(backend)
