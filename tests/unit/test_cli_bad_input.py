"""Every command survives any input: binary, not UTF-8, over the cap, cut short, a closed
stdout, an unknown stack. Each error is one line on stderr (JSON on stdout under ``--json``)
with the documented exit code, never a traceback."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from fabric.cli import main
from fabric.parsers import PARSERS
from fabric.parsers.text import MIB, InputError, read_text
from fabric.state import REPO_ROOT

FIXTURES = REPO_ROOT / "tests" / "fixtures"
SPECS = Path(__file__).parent / "specs"


def outcome(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_error_line(err: str, command: str) -> None:
    assert err.startswith(f"railyard {command}: error: "), err
    assert err.count("\n") == 1 and "Traceback" not in err, err


def captures(tool: str) -> list[Path]:
    """The tool's real captures that end in a newline, as the tool printed them."""
    return [
        path
        for path in sorted(FIXTURES.glob("*.txt"))
        if path.name.split("__")[0] in {tool, f"{tool}_v", f"{tool}_p"}
        and path.read_bytes().endswith(b"\n")
    ]


# -- binary, not UTF-8, over the cap ------------------------------------------------------


@pytest.mark.parametrize("tool", sorted(PARSERS))
def test_binary_input_is_2_naming_the_byte(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, tool: str
) -> None:
    path = tmp_path / "capture.bin"
    path.write_bytes(b"CA 'mlx5_0'\n\x7fELF\x02\x01\x01\x00\x00")
    code, out, err = outcome(capsys, "parse", tool, str(path))
    assert (code, out) == (2, "")
    assert_one_error_line(err, "parse")
    assert f"{path}: line 2: byte 19 is NUL: binary data" in err


def test_not_utf8_is_2_naming_line_and_byte(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    text = (FIXTURES / "ibstat__ibsimparse__1.txt").read_bytes()
    path = tmp_path / "latin1.txt"
    path.write_bytes(text + "Node description: Ca\xf1on\n".encode("latin-1"))
    code, _, err = outcome(capsys, "parse", "ibstat", str(path))
    line = text.count(b"\n") + 1
    assert code == 2 and f"line {line}: byte " in err and "(0xf1)" in err
    assert_one_error_line(err, "parse")


def test_binary_stdin_is_2_without_traceback() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "fabric", "parse", "ibstat", "-"],
        input=bytes(range(256)) * 64,
        capture_output=True,
        cwd=REPO_ROOT,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2 and done.stdout == b""
    assert done.stderr.decode().startswith("railyard parse: error: stdin: line 1: byte 0")
    assert done.stderr.count(b"\n") == 1


def test_over_the_cap_is_2_naming_the_cap_and_how_to_raise_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    record = (FIXTURES / "ibstat__magnate3__4.txt").read_text()
    path = tmp_path / "big.txt"
    path.write_text(record * (MIB // len(record) + 1))  # real records, just over 1 MiB
    code, out, err = outcome(capsys, "parse", "ibstat", str(path), "--max-mb", "1")
    assert (code, out) == (2, "")
    assert_one_error_line(err, "parse")
    assert "larger than the input cap of 1 MiB" in err and "--max-mb N" in err
    code, out, _ = outcome(capsys, "parse", "ibstat", str(path), "--max-mb", "2")
    assert code == 0 and json.loads(out)["ok"] is True


def test_read_text_reads_no_further_than_the_cap(tmp_path: Path) -> None:
    path = tmp_path / "big.txt"
    path.write_bytes(b"x\n" * MIB)
    with pytest.raises(InputError, match="larger than the input cap of 1 MiB"):
        read_text(path, 1)
    assert read_text(path, 2).complete and read_text(path, None).last_line == MIB


@pytest.mark.parametrize("value", ["0", "-1", "lots"])
def test_max_mb_must_be_a_positive_number(capsys: pytest.CaptureFixture[str], value: str) -> None:
    code, _, err = outcome(
        capsys, "parse", "ibstat", str(FIXTURES / "ibstat__gpud__1.txt"), "--max-mb", value
    )
    assert code == 2 and "not a whole number of MiB above 0" in err
    assert err.count("\n") == 1


# -- cut short ---------------------------------------------------------------------------


def _cuts(path: Path) -> list[tuple[int, str]]:
    """(cut position, description): the middle of the first, a middle and the last line."""
    text = path.read_text()
    starts = [0] + [i + 1 for i, c in enumerate(text[:-1]) if c == "\n"]
    ends = [text.index("\n", start) for start in starts]
    picked = sorted({0, len(starts) // 2, len(starts) - 1})
    return [
        (starts[i] + max(1, (ends[i] - starts[i]) // 2), f"line {i + 1}")
        for i in picked
        if ends[i] - starts[i] > 1
    ]


@pytest.mark.parametrize("tool", sorted(PARSERS))
def test_output_cut_mid_line_is_never_ok(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, tool: str
) -> None:
    """Real captures cut in the middle of a line: exit 2, or the records with ok false and
    a reason; never ``"ok": true`` with part of the data."""
    seen = 0
    for capture in captures(tool):
        for cut, where in _cuts(capture):
            path = tmp_path / "cut.txt"
            path.write_bytes(capture.read_bytes()[:cut])
            code, out, err = outcome(capsys, "parse", tool, str(path))
            if code == 2:
                assert_one_error_line(err, "parse")
            else:
                doc = json.loads(out)
                assert (code, doc["ok"]) == (0, False), f"{capture.name} cut in {where}"
                assert doc["reason"], f"{capture.name} cut in {where}"
            seen += 1
    assert seen >= 2


def test_cut_mid_line_keeps_the_records_and_says_where(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    text = (FIXTURES / "ibstatus__magnate3__1.txt").read_text()
    path = tmp_path / "cut.txt"
    body = text.rstrip("\n")
    path.write_text(body[: body.rindex("\n") + 29])  # "        link_layer:      Eth"
    code, out, _ = outcome(capsys, "parse", "ibstatus", str(path))
    doc = json.loads(out)
    lines = path.read_text().count("\n") + 1
    assert (code, doc["ok"]) == (0, False) and doc["ports"]
    assert (
        doc["reason"] == f"ibstatus: line {lines} ends without a newline: the output was cut short"
    )


def test_failure_line_after_records_keeps_them(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """ibstat listing a CA, then panicking on the next one (two real ibstat runs under ibsim,
    joined: the shape of the reported 8 CAs + ``ibpanic: ... 'mlx5_8'``)."""
    path = tmp_path / "ibstat.txt"
    path.write_text(
        (FIXTURES / "ibstat__ibsimparse__1.txt").read_text()
        + (FIXTURES / "ibstat__ibsimparse__5.txt").read_text()
    )
    code, out, _ = outcome(capsys, "parse", "ibstat", str(path))
    doc = json.loads(out)
    assert (code, doc["ok"], len(doc["devices"])) == (0, False, 1)
    assert doc["reason"].startswith("ibpanic: ") and "'mlx5_9'" in doc["reason"]
    assert doc["devices"][0]["ports"][0]["base_lid"] == 1


# -- a closed stdout ---------------------------------------------------------------------


def test_closed_stdout_is_a_quiet_exit(tmp_path: Path) -> None:
    record = (FIXTURES / "ibstat__magnate3__4.txt").read_text()
    path = tmp_path / "big.txt"
    path.write_text(record * 2000)  # about 1.5 MB of JSON: more than a pipe holds
    with subprocess.Popen(
        [sys.executable, "-m", "fabric", "parse", "ibstat", str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=REPO_ROOT,
    ) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        assert proc.stdout.read(10) == b'{\n  "devic'
        proc.stdout.close()  # what `| head -c 10` does
        err = proc.stderr.read()
        code = proc.wait(timeout=60)
    assert (code, err) == (0, b"")


def test_closed_stdout_keeps_the_error_code_quietly() -> None:
    """An error under --json goes to stdout; with stdout closed the exit code still tells."""
    with subprocess.Popen(
        [sys.executable, "-m", "fabric", "check", "--stack", "nosuchstack", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=REPO_ROOT,
    ) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        proc.stdout.close()
        err = proc.stderr.read()
        code = proc.wait(timeout=60)
    assert (code, err) == (2, b"")


# -- an unknown stack --------------------------------------------------------------------


@pytest.mark.parametrize("command", [["check"], ["run", "site.yml"]])
def test_unknown_stack_names_the_known_ones(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    command: list[str],
) -> None:
    monkeypatch.setenv("RAILYARD_STATE_DIR", str(tmp_path / "state"))
    code, out, err = outcome(capsys, *command, "--stack", "nosuchstack")
    assert (code, out) == (2, "")
    assert_one_error_line(err, command[0])
    assert "no stack named 'nosuchstack'" in err and "known stacks: lab" in err
    assert "no such file" not in err
    code, out, err = outcome(capsys, *command, "--stack", "nosuchstack", "--json")
    doc = json.loads(out)
    assert (code, err, doc["exit_code"]) == (2, "", 2)
    assert doc["error"].startswith("no stack named 'nosuchstack'")
