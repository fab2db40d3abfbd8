"""The ``railyard`` command: the console script ``make bootstrap`` installs into ``.venv/bin``
(``[project.scripts]``), the same entry point as ``python -m fabric``."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

from fabric.cli import COMMANDS
from fabric.state import REPO_ROOT

RAILYARD = REPO_ROOT / ".venv" / "bin" / "railyard"
CAPTURE = REPO_ROOT / "tests" / "fixtures" / "ibnetdiscover__ibsim_lab__1.txt"


def run(argv: list[str], cwd: Path = REPO_ROOT) -> subprocess.CompletedProcess[str]:
    """``argv`` as a user's shell runs it: no PYTHONPATH, from ``cwd``."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run(
        argv, capture_output=True, text=True, cwd=cwd, env=env, timeout=60, check=False
    )


def test_the_console_script_is_declared() -> None:
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
    assert project["scripts"] == {"railyard": "fabric.__main__:main"}


def test_railyard_help_lists_every_command() -> None:
    assert RAILYARD.is_file(), f"{RAILYARD} is missing: run make bootstrap (scripts/bootstrap.sh)"
    done = run([str(RAILYARD), "--help"])
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert done.stdout.startswith("usage: railyard [-h] COMMAND ...\n"), done.stdout[:200]
    listed = {line.split()[0] for line in done.stdout.splitlines() if line.startswith("    ")}
    assert set(COMMANDS) <= listed, listed


def test_railyard_validates_the_lab_spec_from_anywhere(tmp_path: Path) -> None:
    """Outside the checkout too: the installed command finds the package."""
    done = run([str(RAILYARD), "validate", "--spec", str(REPO_ROOT / "Pulumi.lab.yaml")], tmp_path)
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    assert done.stdout.startswith("lab: valid — 11 hosts, infiniband fat-tree"), done.stdout


def test_python_m_fabric_is_the_same_command(tmp_path: Path) -> None:
    """``python -m fabric`` keeps working, with the same output and errors as ``railyard``,
    the topology shortcut included."""
    for argv in (
        ["--help"],
        ["topology", "--from-ibnetdiscover", str(CAPTURE)],
        ["validate", "--spec", str(tmp_path / "none.yaml")],
    ):
        script = run([str(RAILYARD), *argv])
        module = run([sys.executable, "-m", "fabric", *argv])
        assert (script.returncode, script.stdout, script.stderr) == (
            module.returncode,
            module.stdout,
            module.stderr,
        ), argv
    assert script.returncode == 2 and script.stderr.startswith("railyard validate: error: ")
