"""The lab's and bare metal's dynamic providers: stored by class name, sharing read and delete.

Pulumi keeps each provider in the state as a dill pickle that names its class by module path
and class name; a stack made earlier refreshes, updates and destroys only while every class
it names is still there and pickles the same way.
"""

from __future__ import annotations

import base64
import importlib
import pickle
from pathlib import Path
from typing import Any

import pytest
from pulumi.dynamic.dynamic import serialize_provider

from fabric.lab.process import Helper
from fabric.targets.lab import dynamic_lab
from fabric.targets.lab.dynamic_lab import (
    IbSimProvider,
    IbSimReaperProvider,
    LabNodeProvider,
    LabSwitchSmProvider,
)
from fabric.targets.lab.dynamic_switch import LabSwitchProvider

#: Every provider class a stack's state may name (module path, class name).
STORED = [
    ("fabric.targets.lab.dynamic_lab", name)
    for name in (
        "NodeImageProvider",
        "LabNetworkProvider",
        "AddressPoolProvider",
        "SshKeyProvider",
        "LabFileProvider",
        "IbSimProvider",
        "IbSimReaperProvider",
        "LabSwitchSmProvider",
        "RedfishEmulatorProvider",
        "LabNodeProvider",
    )
] + [
    ("fabric.targets.lab.dynamic_switch", "LabSwitchProvider"),
    ("fabric.targets.baremetal.dynamic_redfish", "RedfishNodeProvider"),
]

HELPER = {"pid": 42, "start_time": 7, "argv": ["x"], "log": "x.log"}


@pytest.mark.parametrize(("module", "name"), STORED)
def test_a_stored_provider_pickles_as_its_class_name_alone(module: str, name: str) -> None:
    cls = getattr(importlib.import_module(module), name)
    stored = base64.b64decode(serialize_provider(cls()))
    assert stored == pickle.dumps(cls(), protocol=pickle.DEFAULT_PROTOCOL)
    assert module.encode() in stored and name.encode() in stored
    assert type(pickle.loads(stored)) is cls


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, Any]]:
    """Record the lab drivers the providers call; every helper process is alive."""
    made: list[tuple[str, Any]] = []

    def record(name: str, result: Any = None) -> Any:
        def call(*args: Any, **_kwargs: Any) -> Any:
            made.append((name, args[0] if args else None))
            return result

        return call

    monkeypatch.setattr("fabric.lab.process.alive", record("alive", True))
    monkeypatch.setattr("fabric.lab.process.stop", record("stop"))
    monkeypatch.setattr("fabric.lab.ibsim.stop_mad_senders", record("stop_mad_senders"))
    monkeypatch.setattr("fabric.lab.ibsim.remove_console", record("remove_console"))
    monkeypatch.setattr("fabric.lab.ibsim.start_ibsim", record("start_ibsim", Helper(**HELPER)))
    monkeypatch.setattr("fabric.lab.node.remove_node", record("remove_node"))
    monkeypatch.setattr("fabric.lab.node.create_node", record("create_node"))
    monkeypatch.setattr("fabric.lab.ssh.host_keys_from", record("host_keys_from"))
    return made


def test_a_helper_is_gone_when_its_process_is_or_was_never_recorded(
    calls: list[tuple[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    for provider in (IbSimProvider(), IbSimReaperProvider(), LabSwitchSmProvider()):
        assert provider.read("i", {"out_helper": HELPER}).id == "i"
        missing = provider.read("i", {"out_helper": None})
        assert missing.id is None and missing.outs == {}
    monkeypatch.setattr("fabric.lab.process.alive", lambda _helper: False)
    dead = IbSimProvider().read("i", {"out_helper": HELPER, "port": 1})
    assert dead.id is None and dead.outs == {"out_helper": HELPER, "port": 1}


def test_ibsim_is_created_with_its_pid_and_stops_after_its_clients(
    calls: list[tuple[str, Any]], tmp_path: Path
) -> None:
    log = tmp_path / "stack" / "logs" / "ibsim.log"
    log.parent.mkdir(parents=True)
    log.write_text("x")
    props = {"net_file": "net", "port": 1.0, "limits": [], "log": str(log), "clients": ["c1"]}
    created = IbSimProvider().create({**props, "__provider": "p", "out_helper": None})
    assert created.id == "ibsim-42" and created.outs == {**props, "out_helper": HELPER}
    calls.clear()
    IbSimProvider().delete("ibsim-42", {**props, "out_helper": HELPER})
    assert [name for name, _ in calls] == ["stop_mad_senders", "stop", "remove_console"]
    assert not (tmp_path / "stack").exists()  # the log and the folders it left empty


def test_the_reaper_keeps_the_folder_of_its_log(
    calls: list[tuple[str, Any]], tmp_path: Path
) -> None:
    log = tmp_path / "stack" / "reaper.log"
    log.parent.mkdir()
    log.write_text("x")
    IbSimReaperProvider().delete("r", {"log": str(log)})
    assert calls == [] and not log.exists() and log.parent.exists()


def test_a_switch_sm_takes_its_workdir_with_it(
    calls: list[tuple[str, Any]], tmp_path: Path
) -> None:
    work = tmp_path / "stack" / "sm" / "work"
    work.mkdir(parents=True)
    (work / "opensm.conf").write_text("x")
    log = tmp_path / "stack" / "sm" / "sm.log"
    log.write_text("x")
    LabSwitchSmProvider().delete("s", {"out_helper": HELPER, "workdir": str(work), "log": str(log)})
    assert [name for name, _ in calls] == ["stop"]
    assert not (tmp_path / "stack").exists()


@pytest.mark.parametrize("provider", [LabNodeProvider(), LabSwitchProvider()])
def test_a_container_that_never_answers_ssh_is_removed(
    provider: Any, calls: list[tuple[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(*_args: Any, **_kwargs: Any) -> None:
        raise TimeoutError("no SSH")

    monkeypatch.setattr("fabric.lab.ssh.wait_ssh", refuse)
    monkeypatch.setattr(dynamic_lab, "_create_when_address_free", lambda cfg, start=True: None)
    props = {
        "config": {
            "name": "n1",
            "container": "railyard-s-n1",
            "image": "i",
            "networks": {},
            "authorized_key": "a",
            "host_key_private": "p",
            "host_key_public": "h",
        },
        "address": "198.18.0.2",
        "ssh_user": "root",
        "login_private_key": "k",
    }
    with pytest.raises(TimeoutError):
        provider.create(props)
    assert ("remove_node", "railyard-s-n1") in calls
    calls.clear()
    provider.delete("railyard-s-n1", {})
    assert calls == [("remove_node", "railyard-s-n1")]
