"""The hand-off's saved capture (site.yml's task that writes ``state/<stack>/ibnetdiscover.txt``)
parses and imports: the task is taken from ``playbooks/site.yml`` as it is and run by the
hand-off's own runner (ansible-runner, Mitogen) on this machine, with a real ibnetdiscover
capture as the registered output of the command before it."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from localplay import local_stack

from fabric.cli import main
from fabric.handoff.runner import run_playbook
from fabric.parsers.ibnetdiscover import parse
from fabric.spec import load_spec
from fabric.state import REPO_ROOT
from fabric.topology.importer import import_fabric

#: The lab's own fabric, as ibnetdiscover printed it under ibsim (tests/fixtures/SOURCES.md).
CAPTURE = REPO_ROOT / "tests" / "fixtures" / "ibnetdiscover__ibsim_lab__1.txt"
TASK = "Keep the discovered fabric next to the inventory, without the volatile header."


def site_task(name: str) -> dict[str, Any]:
    """The task called ``name`` in playbooks/site.yml, as written there."""
    found = [
        task
        for play in yaml.safe_load((REPO_ROOT / "playbooks" / "site.yml").read_text())
        for outer in play.get("tasks", [])
        for task in [outer, *outer.get("block", [])]
        if task.get("name") == name
    ]
    assert len(found) == 1, f"site.yml has {len(found)} tasks named {name!r}"
    return found[0]


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The file site.yml's task writes from CAPTURE, as the registered stdout of a command."""
    tmp_path = tmp_path_factory.mktemp("site")
    register = {
        "name": "Run ibnetdiscover (here: print a real capture).",
        "ansible.builtin.command": {"argv": ["cat", str(CAPTURE)]},
        "register": "railyard_ibnetdiscover",
        "changed_when": False,
    }
    play = [{"name": "The capture task", "hosts": "all", "gather_facts": False}]
    play[0]["tasks"] = [register, site_task(TASK)]
    local_stack(tmp_path, yaml.safe_dump(play, sort_keys=False))
    result = run_playbook(
        tmp_path / "book.yml",
        stack="t",
        emit=lambda _: None,
        state_root=tmp_path / "state",
        artifacts_root=tmp_path / "artifacts",
    )
    assert result.ok, result.summary()
    return tmp_path / "state" / "t" / "ibnetdiscover.txt"  # {{ inventory_dir }}


def test_the_saved_capture_is_the_capture_without_its_header(saved: Path) -> None:
    """One real newline at the end (not a backslash and an n), and only the two volatile header
    lines gone."""
    text = CAPTURE.read_text()
    header = re.compile(r"(?m)^# (Topology file: generated on|Initiated from node) .*\n")
    assert len(header.findall(text)) == 2
    assert saved.read_text() == header.sub("", text)
    assert saved.read_bytes().endswith(b"4xHDR\n")


def test_the_saved_capture_parses_and_imports(
    saved: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``railyard parse ibnetdiscover`` and ``railyard import`` take the saved file, as they
    take the capture; the import is the lab's fabric."""
    assert main(["parse", "ibnetdiscover", str(saved)]) == 0
    parsed = json.loads(capsys.readouterr().out)
    assert parsed == parse(CAPTURE.read_text()).model_dump()
    spec_file = tmp_path / "imported.yaml"
    assert main(["import", str(saved), "--output", str(spec_file)]) == 0
    spec = load_spec(spec_file)
    assert sorted(spec.hosts) == [f"gpu0{i}" for i in range(1, 9)] + ["sm1", "sm2"]
    assert import_fabric(parse(saved.read_text()), "imported").spec == yaml.safe_load(
        spec_file.read_text()
    )
