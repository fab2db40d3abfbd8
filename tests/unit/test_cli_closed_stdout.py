"""Every command survives a stdout it cannot write: closed (``>&-``) or full (``/dev/full``).

Bad input, round 3: the error is one line on stderr, exit 2, never a traceback, whatever the
command would have printed (its result, a JSON document, or a JSON error under ``--json``). A
reader that goes away (``| head``) stays a quiet exit (tests/unit/test_cli_bad_input.py).
"""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from fabric.cli import main
from fabric.parsers import PARSERS

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"
SPECS = Path(__file__).parent / "specs"
LAB = str(SPECS / "valid" / "lab.yaml")
CAPTURE = str(FIXTURES / "ibnetdiscover__ibsim_lab__1.txt")
MESSAGE = "error: cannot write the output to stdout: "


def _capture_of(tool: str) -> str:
    return str(
        next(
            path
            for path in sorted(FIXTURES.glob("*.txt"))
            if path.name.split("__")[0] in {tool, f"{tool}_v", f"{tool}_p"}
        )
    )


#: Every command that prints to stdout, and its forms (text, JSON).
COMMANDS: list[list[str]] = [
    ["validate", "--spec", LAB],
    ["validate", "--spec", LAB, "--json"],
    # exit 1 with problems, when stdout can be written
    ["validate", "--spec", str(SPECS / "invalid.yaml")],
    ["schema"],
    ["schema", "--json"],
    ["topology", "--spec", LAB],
    ["topology", "--spec", LAB, "--json"],
    ["topology", "--from-ibnetdiscover", CAPTURE],
    ["topology", "--from-ibnetdiscover", CAPTURE, "--json"],
    ["topology", "--from-ibnetdiscover", CAPTURE, "--plugin", "block"],
    ["topology", "--from-ibnetdiscover", CAPTURE, "--ibsim-net"],
    ["topology", "--from-ibnetdiscover", CAPTURE, "--oversubscription"],
    ["topology", "--from-ibnetdiscover", CAPTURE, "--plugin", "kubernetes"],
    ["kubernetes", "--spec", str(SPECS / "valid" / "kubernetes.yaml")],
    ["kubernetes", "--spec", str(SPECS / "valid" / "kubernetes.yaml"), "--json"],
    ["import", CAPTURE],
    ["import", CAPTURE, "--json"],
    ["check", "--plan", "--spec", LAB],
    ["check", "--plan", "--spec", LAB, "--json"],
    ["check", "--stack", "t", "--spec", LAB, "--json"],
    ["run", "site.yml", "--stack", "t", "--spec", LAB],
    ["run", "site.yml", "--stack", "t", "--spec", LAB, "--json"],
    ["lab", "status", "--stack", "t", "--json"],  # the lab is not up: a JSON error on stdout
    ["check", "--stack", "nosuchstack", "--json"],  # a JSON error on stdout
    *(["parse", tool, _capture_of(tool)] for tool in sorted(PARSERS)),
]


@pytest.fixture
def fakes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A state root with stack ``t`` (an inventory), a playbook run and a check run that
    succeed without touching a host."""
    root = tmp_path / "state"
    (root / "t").mkdir(parents=True)
    (root / "t" / "inventory.yml").write_text("all:\n  hosts:\n    a: {}\n")
    monkeypatch.setenv("RAILYARD_STATE_DIR", str(root))
    monkeypatch.setenv("RAILYARD_MUNGE_KEY", "not-a-real-key")
    monkeypatch.delenv("PULUMI_BACKEND_URL", raising=False)

    def run_playbook(*_: Any, **__: Any) -> SimpleNamespace:
        return SimpleNamespace(
            ok=True,
            status="successful",
            rc=0,
            recap=lambda: "recap",
            summary=lambda: "summary line",
            artifacts=Path("/tmp/artifacts"),
            hosts={},
        )

    outcome = SimpleNamespace(ok=True, model_dump=lambda: {"ok": True})
    monkeypatch.setattr("fabric.handoff.runner.run_playbook", run_playbook)
    monkeypatch.setattr("fabric.verify.runner.run_checks", lambda *a, **k: outcome)


def _run_with_stdout(
    monkeypatch: pytest.MonkeyPatch, stdout: Any, argv: list[str]
) -> tuple[int, str]:
    err = io.StringIO()
    monkeypatch.setattr(sys, "stdout", stdout)
    monkeypatch.setattr(sys, "stderr", err)
    code = main(argv)
    monkeypatch.undo()
    return code, err.getvalue()


@pytest.mark.usefixtures("fakes")
@pytest.mark.parametrize("argv", COMMANDS, ids=" ".join)
def test_closed_stdout_is_one_line_and_2(monkeypatch: pytest.MonkeyPatch, argv: list[str]) -> None:
    """``>&-``: Python's ``sys.stdout`` is None."""
    code, err = _run_with_stdout(monkeypatch, None, argv)
    assert (code, err.count("\n")) == (2, 1), err
    assert MESSAGE + "it is closed; " in err and "Traceback" not in err


@pytest.mark.usefixtures("fakes")
@pytest.mark.parametrize("argv", COMMANDS, ids=" ".join)
def test_full_stdout_is_one_line_and_2(
    monkeypatch: pytest.MonkeyPatch, argv: list[str], tmp_path: Path
) -> None:
    with open("/dev/full", "w", encoding="utf-8") as full:  # noqa: PTH123 - a device
        code, err = _run_with_stdout(monkeypatch, full, argv)
    assert (code, err.count("\n")) == (2, 1), err
    assert MESSAGE + "No space left on device; " in err and "Traceback" not in err


#: Whole processes: the interpreter's own last flush, and the compiled topology.conf shortcut
#: in fabric/__main__.py (a file it takes never reaches the CLI).
PROCESSES = [
    ["validate", "--spec", LAB],
    ["validate", "--spec", LAB, "--json"],
    ["schema"],
    ["parse", "ibstat", _capture_of("ibstat")],
    ["topology", "--from-ibnetdiscover", CAPTURE],
    ["topology", "--spec", LAB],
    ["import", CAPTURE],
    ["check", "--plan", "--spec", LAB, "--json"],
]


@pytest.mark.parametrize("how", ["closed", "full"])
@pytest.mark.parametrize("argv", PROCESSES, ids=" ".join)
def test_process_with_unwritable_stdout(argv: list[str], how: str) -> None:
    command = [sys.executable, "-m", "fabric", *argv]
    if how == "closed":
        done = subprocess.run(
            ["bash", "-c", 'exec "$@" >&-', "bash", *command],
            capture_output=True,
            cwd=ROOT,
            timeout=60,
            check=False,
        )
    else:
        with open("/dev/full", "wb") as full:  # noqa: PTH123 - a device
            done = subprocess.run(
                command, stdout=full, stderr=subprocess.PIPE, cwd=ROOT, timeout=60, check=False
            )
    err = done.stderr.decode()
    assert (done.returncode, err.count("\n")) == (2, 1), err
    assert err.startswith(f"railyard {argv[0]}: {MESSAGE}"), err
