"""``fabric.state``: one layout for every stack's files; ``$RAILYARD_STATE_DIR`` moves it.
Also the run-on-change provider base the hand-off and the verification share."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from fabric.components.rerun import RerunProvider
from fabric.handoff import runner
from fabric.handoff.resource import AnsibleHandoffProvider
from fabric.state import (
    ARTIFACTS_ROOT,
    DEFAULT_STACK,
    LAB_PASSPHRASE,
    PULUMI_OFFLINE,
    REPO_ROOT,
    StateLayout,
    pulumi_env,
    stack_file,
    state_root,
)
from fabric.verify.resource import VerificationProvider


def test_repo_root_is_the_checkout() -> None:
    # the one place a test finds the checkout itself: to check REPO_ROOT, which every other uses
    assert REPO_ROOT == Path(__file__).resolve().parents[2]
    assert (REPO_ROOT / "playbooks" / "site.yml").is_file()
    assert runner.REPO_ROOT == REPO_ROOT


def test_default_root_is_repo_state(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RAILYARD_STATE_DIR", raising=False)
    assert state_root() == REPO_ROOT / "state"
    assert StateLayout("lab").inventory == REPO_ROOT / "state" / "lab" / "inventory.yml"


def test_env_moves_the_root_but_not_the_artifacts(state_root: Path) -> None:
    layout = StateLayout("s")
    assert layout.dir == state_root.resolve() / "s"
    assert layout.artifacts == ARTIFACTS_ROOT / "s" == REPO_ROOT / "artifacts" / "s"
    assert layout.passphrase == state_root.resolve() / "s.passphrase"


def test_every_name() -> None:
    layout = StateLayout("s", Path("/r"))
    names = {
        "inventory": "s/inventory.yml",
        "group_vars": "s/group_vars",
        "group_vars_all": "s/group_vars/all.yml",
        "discovered_fabric": "s/ibnetdiscover.txt",
        "secrets": "s/secrets",
        "munge_key": "s/secrets/munge.key",
        "reports": "s/reports",
        "known_hosts": "s/known_hosts",
        "ssh_key": "s/ssh/id_ed25519",
        "provided_ssh_key": "s/id_ed25519",
        "passphrase": "s.passphrase",
        "pulumi_backend": "pulumi",
        "lab_json": "s/lab.json",
        "logs": "s/logs",
        "ibsim_net": "s/ibsim.net",
        "ibsim_console": "s/ibsim.console",
        "ibsim_log": "s/logs/ibsim.log",
        "bmc": "s/bmc",
        "bmc_credentials": "s/bmc/credentials.json",
    }
    assert {k: getattr(layout, k).relative_to("/r").as_posix() for k in names} == names
    assert runner.HANDOFF_FILES == ("group_vars/all.yml", "ibnetdiscover.txt", "secrets/munge.key")


def test_at_and_frozen() -> None:
    layout = StateLayout.at("/r/s")
    assert layout == StateLayout("s", Path("/r"))
    with pytest.raises(AttributeError):
        layout.stack = "other"  # type: ignore[misc]
    with pytest.raises(ValueError, match="not a stack name"):
        StateLayout("a/b")


def test_lab_status_does_not_import_pulumi(tmp_path: Path) -> None:
    (tmp_path / "nope").mkdir()  # a stack with state (known), whose lab is not up: exit 1
    code = (
        "import sys\nfrom fabric.cli import main\n"
        "rc = main(['lab', 'status', '--stack', 'nope'])\n"
        "print(rc, 'pulumi' in sys.modules)"
    )
    env = {**os.environ, "RAILYARD_STATE_DIR": str(tmp_path), "PYTHONPATH": str(REPO_ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.stdout.strip().splitlines()[-1] == "1 False", done.stdout + done.stderr
    assert f"{tmp_path}/nope/lab.json not found" in done.stdout + done.stderr


class _Counting(RerunProvider):
    RERUN_ON = ("stack", "a")
    ID_PREFIX = "count"

    def __init__(self) -> None:
        self.runs: list[dict] = []

    def run(self, props: dict) -> dict:
        self.runs.append(props)
        return {"n": len(self.runs)}


def test_rerun_provider_runs_on_create_and_on_a_watched_change_only() -> None:
    provider = _Counting()
    created = provider.create({"stack": "s", "a": 1, "b": 1})
    assert created.id == "count-s" and created.outs == {"stack": "s", "a": 1, "b": 1, "n": 1}
    assert provider.diff("count-s", created.outs, {"stack": "s", "a": 1, "b": 2}).changes is False
    diff = provider.diff("count-s", created.outs, {"stack": "s", "a": 2, "b": 1})
    assert diff.changes is True and diff.replaces == []
    assert provider.update("count-s", created.outs, {"stack": "s", "a": 2}).outs == {
        "stack": "s",
        "a": 2,
        "n": 2,
    }


def test_handoff_and_verification_share_the_base() -> None:
    for provider, watched in (
        (AnsibleHandoffProvider(), "munge_key"),
        (VerificationProvider(), "after"),
    ):
        assert isinstance(provider, RerunProvider)
        assert provider.changed_inputs({watched: "x", "other": 1}, {watched: "y", "other": 2}) == [
            watched
        ]


def _makefile() -> dict[str, str]:
    """The Makefile's variable assignments (``NAME := value``, ``export NAME := value``,
    ``NAME ?= value``); a name assigned twice keeps every value, joined by ``|``."""
    out: dict[str, str] = {}
    for line in (REPO_ROOT / "Makefile").read_text().splitlines():
        m = re.match(r"^(?:export )?([A-Z_]+) [:?]= (.*)$", line)
        if m:
            out[m[1]] = f"{out[m[1]]}|{m[2]}" if m[1] in out else m[2]
    return out


def test_the_makefile_exports_the_pulumi_environment_fabric_state_defines() -> None:
    make = _makefile()
    assert make["STACK"] == DEFAULT_STACK
    assert make["STATE"] == "$(ROOT)/state" and make["ROOT"] == "$(CURDIR)"
    layout = StateLayout("s", REPO_ROOT / "state")
    backend = make["PULUMI_BACKEND_URL"].replace("$(STATE)", str(REPO_ROOT / "state"))
    assert backend == f"file://{layout.pulumi_backend}"
    passphrase_file = make["PULUMI_CONFIG_PASSPHRASE_FILE"].replace("$(STATE)", str(layout.root))
    assert passphrase_file.replace("$(STACK)", "s") == str(layout.passphrase)
    assert make["PULUMI_CONFIG_PASSPHRASE"] == LAB_PASSPHRASE
    assert "ifeq ($(STACK),lab)" in (REPO_ROOT / "Makefile").read_text()
    for name, value in PULUMI_OFFLINE.items():
        assert make[name] == value, name


def test_pulumi_env_fills_what_the_caller_left_unset(tmp_path: Path) -> None:
    lab, other = StateLayout("lab", tmp_path), StateLayout("other", tmp_path)
    assert pulumi_env(lab, {}) is None  # the project's backend does not hold the stack
    (tmp_path / "pulumi" / ".pulumi" / "stacks" / "railyard").mkdir(parents=True)
    for name in ("lab", "other"):
        (tmp_path / "pulumi" / ".pulumi" / "stacks" / "railyard" / f"{name}.json").write_text("{}")
    env = pulumi_env(lab, {"PATH": "/bin"})
    assert (
        env
        == {
            "PATH": "/bin",
            "PULUMI_BACKEND_URL": (tmp_path / "pulumi").resolve().as_uri(),
            "PULUMI_CONFIG_PASSPHRASE": LAB_PASSPHRASE,
        }
        | PULUMI_OFFLINE
    )
    assert "PULUMI_CONFIG_PASSPHRASE" not in (pulumi_env(other, {}) or {})
    other.passphrase.write_text("x")
    assert (pulumi_env(other, {}) or {})["PULUMI_CONFIG_PASSPHRASE_FILE"] == str(other.passphrase)
    mine = {"PULUMI_BACKEND_URL": tmp_path.as_uri(), "PULUMI_CONFIG_PASSPHRASE": "mine"}
    assert pulumi_env(lab, mine) == mine | PULUMI_OFFLINE
    assert pulumi_env(lab, {"PULUMI_BACKEND_URL": (tmp_path / "nope").as_uri()}) is None


def test_the_stack_file() -> None:
    assert stack_file("lab") == REPO_ROOT / "Pulumi.lab.yaml"
    assert stack_file("x", Path("/w")) == Path("/w/Pulumi.x.yaml")
