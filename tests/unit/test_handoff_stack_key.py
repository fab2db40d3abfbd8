"""A day-2 run reads the cluster's munge key from the stack, with the real pulumi CLI and a
file backend of the test's own; a stack it cannot read stops the run instead of letting the
slurm role make a new key."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from fabric.handoff.secrets import munge_key
from fabric.handoff.vars import HandoffError
from tests.integration.labkit import PULUMI_BIN

KEY = "railyard-unit-stack-key-0123456789abcdef"
PASSPHRASE = "railyard-unit-stack-passphrase"
PULUMI_ENV = (
    "PULUMI_BACKEND_URL",
    "PULUMI_CONFIG_PASSPHRASE",
    "PULUMI_CONFIG_PASSPHRASE_FILE",
    "RAILYARD_MUNGE_KEY",
)


def _pulumi_path() -> str:
    found = shutil.which("pulumi") or shutil.which("pulumi", path=str(PULUMI_BIN))
    assert found, f"no pulumi CLI on PATH or in {PULUMI_BIN} (make bootstrap builds it)"
    return str(Path(found).parent)


@pytest.fixture()
def stack(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """Stack ``c1`` of project ``railyard`` in ``<state>/pulumi`` (the project's own backend),
    its passphrase in ``<state>/c1.passphrase``, its secret output ``munge_key``; the process
    environment then holds no Pulumi setting, as outside make."""
    project, state = tmp_path / "project", tmp_path / "state"
    (state / "pulumi").mkdir(parents=True)
    project.mkdir()
    (project / "Pulumi.yaml").write_text("name: railyard\nruntime: python\n")
    (state / "c1.passphrase").write_text(PASSPHRASE)
    env = {
        **os.environ,
        "PATH": f"{_pulumi_path()}:{os.environ['PATH']}",
        "PULUMI_BACKEND_URL": (state / "pulumi").as_uri(),
        "PULUMI_CONFIG_PASSPHRASE": PASSPHRASE,
        "PULUMI_SKIP_UPDATE_CHECK": "true",
    }

    def pulumi(*args: str) -> str:
        return subprocess.run(
            ["pulumi", *args, "--stack", "c1"],
            cwd=project,
            env=env,
            capture_output=True,
            text=True,
            check=True,
            timeout=120,
        ).stdout

    pulumi("stack", "init", "--non-interactive")
    deployment = json.loads(pulumi("stack", "export"))
    deployment["deployment"]["resources"] = [
        {
            "urn": "urn:pulumi:c1::railyard::pulumi:pulumi:Stack::railyard-c1",
            "custom": False,
            "type": "pulumi:pulumi:Stack",
            # Pulumi's marker of a secret value, given in plaintext: the import encrypts it.
            "outputs": {
                "munge_key": {
                    "4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270",
                    "plaintext": json.dumps(KEY),
                }
            },
        }
    ]
    (tmp_path / "deployment.json").write_text(json.dumps(deployment))
    pulumi("stack", "import", "--file", str(tmp_path / "deployment.json"))
    assert KEY not in (state / "pulumi/.pulumi/stacks/railyard/c1.json").read_text()
    for name in PULUMI_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PATH", env["PATH"])
    return project, state


def test_key_read_with_the_makefiles_backend_and_passphrase_file(stack) -> None:
    project, state = stack
    assert munge_key("c1", project, state) == KEY


def test_wrong_passphrase_stops_the_run_with_pulumis_reason(stack, monkeypatch) -> None:
    project, state = stack
    monkeypatch.setenv("PULUMI_CONFIG_PASSPHRASE", "not-the-passphrase")
    with pytest.raises(HandoffError) as err:
        munge_key("c1", project, state)
    said = str(err.value)
    assert "stack c1: cannot read its munge_key output: failed to decrypt" in said
    assert "make run PLAYBOOK=" in said and "\n" not in said
    assert KEY not in said and PASSPHRASE not in said


def test_no_pulumi_cli_stops_the_run(stack, monkeypatch) -> None:
    project, state = stack
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    with pytest.raises(HandoffError, match=r"stack c1: .*the pulumi CLI is not on PATH"):
        munge_key("c1", project, state)


def test_stack_no_backend_holds_has_no_key(stack, monkeypatch) -> None:
    """Not in the project's backend, no backend set: the role makes a key, pulumi is not run."""
    project, state = stack
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    assert munge_key("c2", project, state) is None


def test_stack_the_set_backend_lacks_has_no_key(stack, monkeypatch, tmp_path: Path) -> None:
    project, state = stack
    (tmp_path / "other").mkdir()
    monkeypatch.setenv("PULUMI_BACKEND_URL", (tmp_path / "other").as_uri())
    monkeypatch.setenv("PULUMI_CONFIG_PASSPHRASE", PASSPHRASE)
    assert munge_key("c1", project, state) is None


def test_a_file_backend_that_does_not_exist_has_no_key(stack, monkeypatch, tmp_path) -> None:
    """As under make before any stack was made: pulumi is not even run."""
    project, state = stack
    monkeypatch.setenv("PULUMI_BACKEND_URL", (tmp_path / "not-made").as_uri())
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    assert munge_key("c1", project, state) is None
