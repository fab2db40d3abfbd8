"""site.yml lets the slurm role's wait skip exactly the nodes railyard's health check drained."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from fabric.state import REPO_ROOT
from fabric.verify.health import REASON_PREFIX


def test_site_passes_the_health_checks_drain_reason_to_the_slurm_wait() -> None:
    plays = yaml.safe_load((REPO_ROOT / "playbooks" / "site.yml").read_text())
    slurm = [
        role
        for play in plays
        for role in play.get("roles", [])
        if isinstance(role, dict) and role.get("role") == "slurm"
    ]
    assert len(slurm) == 1
    assert slurm[0]["vars"]["slurm_wait_skip_drain_reason"] == REASON_PREFIX
    resume = [play for play in plays if "resume.yml" in str(play.get("tasks", ""))]
    assert resume and plays.index(resume[0]) > plays.index(
        next(p for p in plays if slurm[0] in p.get("roles", []))
    ), "the play that resumes drained nodes must run after Slurm is up"


#: sinfo lines (``%N %t %E``) as real slurmctld printed them in make test's run of 2026-11-27,
#: when the wait stopped a converge (``test_lab_recovery``) on the node railyard had drained.
SINFO = ["gpu01 idle none", "gpu02 drain railyard: mlx5_0/1 Down (leaf01 p2)", "gpu03 idle none"]


@pytest.mark.parametrize(
    ("skip", "waited_for"),
    [("railyard:", []), ("", ["gpu02 drain railyard: mlx5_0/1 Down (leaf01 p2)"])],
)
def test_the_wait_pattern_as_ansible_renders_it(
    tmp_path: Path, skip: str, waited_for: list[str]
) -> None:
    """``__slurm_wait_ok`` from the role's vars, rendered by Ansible itself (its Jinja keeps a
    string literal's backslashes), leaves exactly the nodes the wait must wait for."""
    role_vars = yaml.safe_load((REPO_ROOT / "roles" / "slurm" / "vars" / "main.yml").read_text())
    play = [
        {
            "hosts": "localhost",
            "gather_facts": False,
            "vars": {
                "slurm_wait_skip_drain_reason": skip,
                "__slurm_wait_ok": role_vars["__slurm_wait_ok"],
                "lines": SINFO,
            },
            "tasks": [
                {
                    "ansible.builtin.copy": {
                        "content": "{{ lines | reject('match', __slurm_wait_ok) | list | to_json }}",
                        "dest": str(tmp_path / "left.json"),
                        "mode": "0644",
                    }
                }
            ],
        }
    ]
    (tmp_path / "play.yml").write_text(yaml.safe_dump(play))
    done = subprocess.run(
        [
            str(Path(sys.executable).parent / "ansible-playbook"),
            "-i",
            "localhost,",
            "-c",
            "local",
            "-e",
            f"ansible_python_interpreter={sys.executable}",
            str(tmp_path / "play.yml"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "ANSIBLE_CONFIG": str(REPO_ROOT / "ansible.cfg")},
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert json.loads((tmp_path / "left.json").read_text()) == waited_for
