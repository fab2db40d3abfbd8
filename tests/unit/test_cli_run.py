"""``python -m fabric run -e KEY=VALUE``: plain playbook variables (add-node.yml's
``railyard_new_nodes``) reach the play; malformed or secret-looking ones are refused first."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest
from localplay import local_stack

from fabric.cli.run import _extra_var
from fabric.handoff import stragglers
from fabric.handoff.runner import REPO_ROOT, run_playbook

PLAYBOOK = """\
- name: Write what the play was given
  hosts: all
  gather_facts: false
  tasks:
    - name: Record the extra var
      ansible.builtin.copy:
        content: "{{ railyard_new_nodes }}"
        dest: "{{ out }}"
        mode: "0600"
"""


def test_extra_var_reaches_the_play(tmp_path: Path) -> None:
    book, out = local_stack(tmp_path, PLAYBOOK)
    result = run_playbook(
        book,
        stack="t",
        emit=lambda _: None,
        state_root=tmp_path / "state",
        artifacts_root=tmp_path / "artifacts",
        extra_vars={"railyard_new_nodes": "gpu[09-10]"},
    )
    assert result.ok, result.summary()
    assert out.read_text() == "gpu[09-10]"


@pytest.mark.parametrize(
    ("text", "pair"),
    [
        ("railyard_new_nodes=gpu09", ("railyard_new_nodes", "gpu09")),
        ("railyard_upgrade_batch=2", ("railyard_upgrade_batch", "2")),
        ("x=a=b", ("x", "a=b")),
        ("empty=", ("empty", "")),
    ],
)
def test_key_value_pairs(text: str, pair: tuple[str, str]) -> None:
    assert _extra_var(text) == pair


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("railyard_new_nodes", "not KEY=VALUE"),
        ("new-nodes=gpu09", "not KEY=VALUE"),
        ("=gpu09", "not KEY=VALUE"),
        ("bmc_password=hunter2", "looks like a secret"),
        ("slurm_munge_key=abc", "looks like a secret"),
        ("API_TOKEN=abc", "looks like a secret"),
    ],
)
def test_bad_pairs_are_refused(text: str, says: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match=says):
        _extra_var(text)


def test_cli_refuses_a_secret_before_running_anything(tmp_path: Path) -> None:
    result_json = tmp_path / "result.json"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "fabric",
            "run",
            "playbooks/site.yml",
            "--stack",
            "nonexistent-stack",
            "-e",
            "bmc_password=hunter2",
            "--result-json",
            str(result_json),
        ],
        check=False,
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        timeout=120,
    )
    assert proc.returncode == 2
    assert "bmc_password looks like a secret" in proc.stderr
    assert "hunter2" not in proc.stdout + proc.stderr
    assert not result_json.exists()


HANGING = """\
- name: A play that outlives its timeout
  hosts: all
  gather_facts: false
  tasks:
    - name: Wait longer than the run may take
      ansible.builtin.pause:
        seconds: 120
"""


def test_a_run_past_its_timeout_is_stopped_and_says_so(tmp_path: Path) -> None:
    book, _ = local_stack(tmp_path, HANGING)
    result = run_playbook(
        book,
        stack="t",
        emit=lambda _: None,
        state_root=tmp_path / "state",
        artifacts_root=tmp_path / "artifacts",
        timeout=3,
    )
    assert not result.ok
    assert result.status == "timeout"
    # Nothing of the run is left: Ansible's task worker (its own session, outside the process
    # group ansible-runner kills) waited forever on the dead controller before.
    assert not stragglers.marked(str(result.artifacts))
    left = [p for p in Path("/proc").glob("[0-9]*") if str(tmp_path).encode() in _cmdline(p)]
    assert not left, [_cmdline(p) for p in left]


def _cmdline(proc: Path) -> bytes:
    try:
        return (proc / "cmdline").read_bytes()
    except OSError:
        return b""


@pytest.mark.parametrize("text", ["0", "-5", "1.5", "soon"])
def test_cli_refuses_a_timeout_that_is_not_whole_seconds(text: str) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "fabric", "run", "site.yml", "--timeout", text],
        check=False,
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        timeout=120,
    )
    assert proc.returncode == 2
    assert "--timeout" in proc.stderr and "whole number of seconds" in proc.stderr
