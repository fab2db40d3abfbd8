"""Secrets on their way to Ansible: the munge key reaches the play but no kept file."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path

import pulumi
import pytest
from conftest import Mocks
from localplay import local_stack

from fabric.components.munge import KEY_BYTES, MIN_KEY_LENGTH, MungeKeyProvider, _checked, munge_key
from fabric.handoff import secrets as handoff_secrets
from fabric.handoff.runner import run_playbook, secret_vars_file, without_sensitive_env
from fabric.spec import ClusterSpec

KEY = "railyard-unit-test-munge-key-0123456789abcdef"
PASSPHRASE = "railyard-unit-test-passphrase"

PLAYBOOK = """\
- name: Write what the play was given
  hosts: all
  gather_facts: false
  tasks:
    - name: Record the key's length and whether the passphrase reached Ansible
      ansible.builtin.copy:
        content: "{{ slurm_munge_key | length }} {{ lookup('ansible.builtin.env', 'PULUMI_CONFIG_PASSPHRASE') | length }}"
        dest: "{{ out }}"
        mode: "0600"
      no_log: true
"""


@pytest.fixture()
def secret_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    book, out = local_stack(tmp_path, PLAYBOOK)
    monkeypatch.setenv("PULUMI_CONFIG_PASSPHRASE", PASSPHRASE)
    result = run_playbook(
        book,
        stack="t",
        emit=lambda _: None,
        state_root=tmp_path / "state",
        artifacts_root=tmp_path / "artifacts",
        secret_vars={"slurm_munge_key": KEY},
    )
    return result, out, tmp_path / "artifacts"


def test_secret_var_reaches_the_play(secret_run) -> None:
    result, out, _ = secret_run
    assert result.ok, result.summary()
    assert out.read_text() == f"{len(KEY)} 0"


def test_no_kept_artifact_holds_the_key_or_the_passphrase(secret_run) -> None:
    _, _, artifacts = secret_run
    files = [p for p in artifacts.rglob("*") if p.is_file()]
    assert files, "the run kept no artifacts"
    leaks = [
        str(p)
        for p in files
        if KEY in p.read_text(errors="replace") or PASSPHRASE in p.read_text(errors="replace")
    ]
    assert leaks == []


def test_passphrase_is_back_in_the_environment_after_the_run(secret_run) -> None:
    assert os.environ["PULUMI_CONFIG_PASSPHRASE"] == PASSPHRASE


def test_secret_vars_file_is_private_and_removed() -> None:
    with secret_vars_file({"slurm_munge_key": KEY}) as path:
        assert path is not None and stat.S_IMODE(path.stat().st_mode) == 0o600
        assert KEY in path.read_text()
    assert not path.exists()
    with secret_vars_file({}) as none:
        assert none is None


def test_without_sensitive_env_hides_and_restores(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAILYARD_MUNGE_KEY", KEY)
    with without_sensitive_env():
        assert "RAILYARD_MUNGE_KEY" not in os.environ
    assert os.environ["RAILYARD_MUNGE_KEY"] == KEY


def test_munge_key_is_taken_out_of_the_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(handoff_secrets.MUNGE_KEY_ENV, KEY)
    assert handoff_secrets.munge_key("absent-stack", tmp_path) == KEY
    assert handoff_secrets.MUNGE_KEY_ENV not in os.environ


def test_generated_key_is_long_enough_and_differs_each_time() -> None:
    provider = MungeKeyProvider()
    keys = {provider.create({}).outs["key"] for _ in range(3)}
    assert len(keys) == 3
    assert all(len(k) >= KEY_BYTES >= MIN_KEY_LENGTH for k in keys)
    assert provider.diff("id", {"key": "a"}, {"key": None}).changes is False


def test_short_configured_key_names_the_field_and_the_fix() -> None:
    with pytest.raises(
        ValueError, match=r"slurm.munge_key.config: the munge key is 5 bytes.*openssl rand"
    ):
        _checked("short", "slurm.munge_key.config")


SPEC = {
    "name": "k",
    "target": "lab",
    "nodes": [{"names": "n1", "role": "compute"}],
    "fabric": {"kind": "roce", "mtu": 9000},
    "management": {"subnet": "198.18.0.0/24"},
    "slurm": {"munge_key": {"config": "mungeKey"}},
}


@pytest.fixture()
def mocked(mock_pulumi: Callable[..., Mocks]) -> Mocks:
    return mock_pulumi("t")


def test_missing_configured_munge_key_names_the_field_and_the_fix(mocked: Mocks) -> None:
    pulumi.runtime.set_all_config({}, [])
    with pytest.raises(
        ValueError, match=r"slurm.munge_key.config: no config value 'mungeKey'.*--secret mungeKey"
    ):
        munge_key("k", ClusterSpec.model_validate(SPEC))


@pulumi.runtime.test
def test_configured_munge_key_is_the_secret_value(mocked: Mocks):  # type: ignore[no-untyped-def]
    pulumi.runtime.set_all_config({"railyard:mungeKey": KEY}, ["railyard:mungeKey"])
    out = munge_key("k", ClusterSpec.model_validate(SPEC))

    def check(args: list) -> None:
        value, secret = args
        assert value == KEY and secret is True, (value, secret)
        assert mocked.resources == [], "a configured munge key creates no resource"

    return pulumi.Output.all(out, pulumi.Output.from_input(out).is_secret()).apply(check)
