"""``python -m fabric parse TOOL FILE``."""

import io
import json
from pathlib import Path

import pytest

from fabric.cli import main
from fabric.state import REPO_ROOT

FIXTURES = REPO_ROOT / "tests" / "fixtures"


def test_prints_json_and_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["parse", "ibstat", str(FIXTURES / "ibstat__magnate3__4.txt")])
    data = json.loads(capsys.readouterr().out)
    assert (code, data["devices"][0]["ports"][0]["base_lid"]) == (0, 12)


def test_reads_stdin_for_dash(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    text = (FIXTURES / "sminfo__ibsimparse__1.txt").read_text()
    monkeypatch.setattr("sys.stdin", io.StringIO(text))
    code = main(["parse", "sminfo", "-"])
    assert (code, json.loads(capsys.readouterr().out)["state"]) == (0, "MASTER")


def test_tool_failure_is_json_with_ok_false(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["parse", "ibstat", str(FIXTURES / "ibstat__magnate3__3.txt")])
    assert (code, json.loads(capsys.readouterr().out)["ok"]) == (0, False)


def test_parse_error_is_bad_input_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["parse", "ibstat", str(FIXTURES / "show_gids__magnate3__1.txt")])
    captured = capsys.readouterr()
    assert (code, captured.out, captured.err.count("\n")) == (2, "", 1)
    assert captured.err.startswith("railyard parse: error: ibstat: line 1: expected ")


def test_unknown_tool_lists_valid_ones(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["parse", "ibnope", str(FIXTURES / "ibstat__gpud__1.txt")])
    err = capsys.readouterr().err
    assert (code, "valid tools:" in err, "perfquery" in err) == (2, True, True)
    assert err.startswith("railyard parse: error: unknown tool 'ibnope'")


def test_missing_file_exits_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code = main(["parse", "ibstat", str(tmp_path / "absent.txt")])
    err = capsys.readouterr().err
    assert (
        code,
        err.startswith(f"railyard parse: error: cannot read {tmp_path / 'absent.txt'}:"),
    ) == (2, True)


def test_help_lists_every_tool(capsys: pytest.CaptureFixture[str]) -> None:
    from fabric.parsers import PARSERS

    with pytest.raises(SystemExit) as exited:
        main(["parse", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert exited.value.code == 0 and f"Tools: {', '.join(sorted(PARSERS))}." in out
