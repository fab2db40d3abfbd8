"""Bad input, round 3: ``import`` (file, stdin and ``--ssh``) and ``topology
--from-ibnetdiscover`` have parse's input cap (64 MiB) and ``--max-mb``; a larger capture is
refused at once, before it is read further. (A 200 MB capture used to take 26-37 s and 2.6 GB,
then fail with a misleading first line; bench/capture_cap measures it now.)"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from fabric.cli import main
from fabric.cli.topology import DEFAULT_MAX_MB
from fabric.parsers.text import DEFAULT_LIMIT_MIB, MIB

ROOT = Path(__file__).resolve().parents[2]
CAPTURE = ROOT / "tests" / "fixtures" / "ibnetdiscover__ibsim_lab__1.txt"


def big_capture(tmp_path: Path, mib: int) -> Path:
    """The real capture repeated to just over ``mib`` MiB (whole nodes, GUIDs repeating:
    the cap refuses it before any parser sees it)."""
    text = CAPTURE.read_text()
    path = tmp_path / "big.txt"
    path.write_text(text * (mib * MIB // len(text) + 1))
    return path


def test_the_caps_are_parses() -> None:
    assert DEFAULT_MAX_MB == DEFAULT_LIMIT_MIB == 64


@pytest.mark.parametrize(
    "argv",
    [["import", "{path}"], ["topology", "--from-ibnetdiscover", "{path}", "--plugin", "block"]],
)
def test_over_the_cap_is_refused_naming_max_mb(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, argv: list[str]
) -> None:
    path = big_capture(tmp_path, 1)
    code = main([a.format(path=path) for a in argv] + ["--max-mb", "1"])
    out, err = capsys.readouterr()
    assert (code, out, err.count("\n")) == (2, "", 1), err
    assert "larger than the input cap of 1 MiB" in err and "--max-mb N" in err


def test_import_over_the_default_cap_is_refused_at_once(tmp_path: Path) -> None:
    """65 MiB through the whole process: refused by the cap (not by a parse of it)."""
    path = big_capture(tmp_path, DEFAULT_LIMIT_MIB)
    for argv in (["import", str(path)], ["topology", "--from-ibnetdiscover", str(path)]):
        done = subprocess.run(
            [sys.executable, "-m", "fabric", *argv],
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=120,
            check=False,
        )
        assert (done.returncode, done.stdout) == (2, ""), done.stderr
        assert "larger than the input cap of 64 MiB" in done.stderr
        assert done.stderr.count("\n") == 1


def test_import_stdin_is_capped(tmp_path: Path) -> None:
    path = big_capture(tmp_path, 1)
    with path.open("rb") as stdin:
        done = subprocess.run(
            [sys.executable, "-m", "fabric", "import", "-", "--max-mb", "1"],
            stdin=stdin,
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=60,
            check=False,
        )
    assert done.returncode == 2 and "stdin: larger than the input cap of 1 MiB" in done.stderr


@pytest.mark.parametrize("value", ["0", "-1", "lots"])
def test_import_max_mb_must_be_a_positive_number(
    capsys: pytest.CaptureFixture[str], value: str
) -> None:
    code = main(["import", str(CAPTURE), "--max-mb", value])
    assert code == 2 and "not a whole number of MiB above 0" in capsys.readouterr().err


@pytest.fixture
def ssh_printing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An ``ssh`` first on PATH that prints the file ``$FAKE_SSH_OUT`` (for any command): the
    real capture, or more than the cap."""
    program = tmp_path / "bin" / "ssh"
    program.parent.mkdir()
    program.write_text('#!/bin/sh\nexec cat "$FAKE_SSH_OUT"\n')
    program.chmod(program.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{program.parent}{os.pathsep}{os.environ['PATH']}")
    return tmp_path


def test_import_ssh_output_is_capped(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, ssh_printing: Path
) -> None:
    monkeypatch.setenv("FAKE_SSH_OUT", str(big_capture(ssh_printing, 1)))
    code = main(["import", "--ssh", "gpu01", "--max-mb", "1"])
    out, err = capsys.readouterr()
    assert (code, out, err.count("\n")) == (2, "", 1), err
    assert "--ssh gpu01: ibnetdiscover printed more than the input cap of 1 MiB" in err
    assert "--max-mb N" in err


def test_import_ssh_within_the_cap_is_read(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, ssh_printing: Path
) -> None:
    monkeypatch.setenv("FAKE_SSH_OUT", str(CAPTURE))
    code = main(["import", "--ssh", "gpu01"])
    out, _ = capsys.readouterr()
    assert code == 0 and "gpu01" in out and "target: existing" in out
