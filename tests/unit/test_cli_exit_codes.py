"""One set of CLI conventions: ``cmd_<command>`` handlers, exit codes 0/1/2/130 for every
command (and 3 for ``check --mark-nodes`` when the API server fails a call), errors as one line on stderr (JSON on stdout under ``--json``), a fast ``--help``."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml

from fabric.cli import build_parser, main
from fabric.cli.errors import EXIT_CODES_HELP, Exit
from fabric.state import REPO_ROOT

SPECS = Path(__file__).parent / "specs"
INVENTORY = "all:\n  hosts:\n    a: {}\n"


def broken_spec(tmp_path: Path) -> Path:
    """The lab spec with three problems (IB MTU, SM priority, undeclared controller)."""
    data = yaml.safe_load((SPECS / "valid" / "lab.yaml").read_text())
    data["fabric"]["mtu"] = 9000
    data["fabric"]["infiniband"]["subnet_managers"][1]["priority"] = 20
    data["slurm"]["controller"] = "ctl9"
    path = tmp_path / "broken.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def outcome(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_error_line(err: str, command: str) -> None:
    assert err.startswith(f"railyard{f' {command}' if command else ''}: error: "), err
    assert err.count("\n") == 1 and "Traceback" not in err, err


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty state root (``$RAILYARD_STATE_DIR``) and no munge key lookup through pulumi."""
    root = tmp_path / "state"
    root.mkdir()
    monkeypatch.setenv("RAILYARD_STATE_DIR", str(root))
    monkeypatch.setenv("RAILYARD_MUNGE_KEY", "not-a-real-key")
    # The key above is taken out of the environment by the first run; a later one looks in the
    # project's backend under this empty state root (make's PULUMI_BACKEND_URL would be used).
    monkeypatch.delenv("PULUMI_BACKEND_URL", raising=False)
    return root


# -- conventions -------------------------------------------------------------------------


def _handlers(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> dict[str, str]:
    found = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found.update(_handlers(sub, (*path, name)))
    if path and not found:
        found[" ".join(path)] = parser.get_default("func").__name__
    return found


def test_every_handler_is_cmd_command() -> None:
    handlers = _handlers(build_parser())
    assert handlers == {name: "cmd_" + name.replace(" ", "_") for name in handlers}
    assert set(handlers) == {
        "validate",
        "schema",
        "topology",
        "kubernetes",
        "parse",
        "lab image",
        "lab status",
        *(f"lab fault {action}" for action in ("list", "pull", "speed", "width", "counter")),
        *(f"lab fault {action}" for action in ("sm", "mtu", "restore")),
        "run",
        "check",
        "import",
        "watch",
    }


def test_help_shows_the_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--help"])
    out = capsys.readouterr().out
    assert exited.value.code == 0 and EXIT_CODES_HELP in out


def test_readme_has_the_same_exit_codes() -> None:
    readme = (REPO_ROOT / "README.md").read_text()
    table = readme.split("### Exit codes", 1)[1].split("\n## ", 1)[0]
    assert [
        row.split("|")[1].strip(" `") for row in table.splitlines() if row.startswith("| `")
    ] == [str(int(code)) for code in Exit]


def test_help_imports_nothing_heavy() -> None:
    probe = (
        "import sys\n"
        "from fabric.cli import build_parser\n"
        "build_parser().format_help()\n"
        "heavy = ('pydantic', 'pulumi', 'ansible_runner', 'rich', 'yaml', 'fabric.spec', 'fabric.parsers')\n"
        "print(sorted(m for m in heavy if m in sys.modules))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe],
        check=False,
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        timeout=60,
    )
    assert (proc.returncode, proc.stdout) == (0, "[]\n"), proc.stderr


# -- usage errors: 2 ---------------------------------------------------------------------


def test_no_command(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = outcome(capsys)
    assert (code, out) == (2, "")
    assert err == (
        "railyard: error: the following arguments are required: COMMAND; see railyard --help\n"
    )


def test_unknown_command(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = outcome(capsys, "frobnicate")
    assert code == 2 and "invalid choice: 'frobnicate'" in err
    assert_one_error_line(err, "")


def test_lab_without_subcommand(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = outcome(capsys, "lab")
    assert code == 2 and "LAB_COMMAND" in err and "see railyard lab --help" in err
    assert_one_error_line(err, "lab")


def test_usage_error_under_json_is_json_on_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = outcome(capsys, "check", "--json", "--workers", "many")
    doc = json.loads(out)
    assert (code, doc["exit_code"], err) == (2, 2, "")
    assert "--workers" in doc["error"]


@pytest.mark.parametrize("command", [["run", "site.yml"], ["check"], ["lab", "status"]])
def test_bad_stack_name(capsys: pytest.CaptureFixture[str], command: list[str]) -> None:
    code, _, err = outcome(capsys, *command, "--stack", "../etc")
    assert code == 2 and "'../etc' is not a stack name" in err
    assert_one_error_line(err, " ".join(command[:2] if command[0] == "lab" else command[:1]))


# -- validate: 1 for a spec with problems, 2 for one that cannot be read --------------------


def test_validate_bad_spec_is_1_with_every_problem(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    spec = broken_spec(tmp_path)
    code, out, err = outcome(capsys, "validate", "--spec", str(spec))
    assert (code, err) == (1, "")
    assert out.splitlines()[0] == f"{spec}: 3 problems" and len(out.splitlines()) == 4


def test_validate_unreadable_is_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, err = outcome(capsys, "validate", "--spec", str(tmp_path / "absent.yaml"))
    assert (code, out) == (2, "")
    assert_one_error_line(err, "validate")


# -- a bad spec anywhere else: 2, one line naming the first problem -------------------------


def test_topology_bad_spec_is_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    spec = broken_spec(tmp_path)
    code, out, err = outcome(capsys, "topology", "--spec", str(spec))
    assert (code, out) == (2, "")
    assert_one_error_line(err, "topology")
    assert f"{spec}: fabric.mtu: 9000 is not an InfiniBand MTU" in err
    assert f"(and 2 more problems: railyard validate --spec {spec} lists them all)" in err


def test_run_bad_spec_is_2(capsys: pytest.CaptureFixture[str], tmp_path: Path, state: Path) -> None:
    spec = broken_spec(tmp_path)
    code, out, err = outcome(capsys, "run", "site.yml", "--stack", "t", "--spec", str(spec))
    assert (code, out) == (2, "")
    assert_one_error_line(err, "run")
    assert f"{spec}: fabric.mtu:" in err


def test_run_bad_spec_under_json(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, state: Path
) -> None:
    spec = broken_spec(tmp_path)
    code, out, err = outcome(
        capsys, "run", "site.yml", "--stack", "t", "--spec", str(spec), "--json"
    )
    doc = json.loads(out)
    assert (code, err, doc["exit_code"]) == (2, "", 2)
    assert [p["path"] for p in doc["problems"]] == [
        "fabric.mtu",
        "fabric.infiniband.subnet_managers[1].priority",
        "slurm.controller",
    ]


def test_run_missing_spec_is_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, state: Path
) -> None:
    code, _, err = outcome(
        capsys, "run", "site.yml", "--stack", "t", "--spec", str(tmp_path / "none.yaml")
    )
    assert code == 2 and "none.yaml: no such file" in err
    assert_one_error_line(err, "run")


def test_run_unknown_playbook_is_2(capsys: pytest.CaptureFixture[str], state: Path) -> None:
    code, _, err = outcome(
        capsys,
        "run",
        "no-such-book.yml",
        "--stack",
        "t",
        "--spec",
        str(SPECS / "valid" / "lab.yaml"),
    )
    assert code == 2 and "no playbook 'no-such-book.yml'" in err
    assert_one_error_line(err, "run")


def test_run_without_inventory_is_2(capsys: pytest.CaptureFixture[str], state: Path) -> None:
    code, _, err = outcome(
        capsys, "run", "site.yml", "--stack", "t", "--spec", str(SPECS / "valid" / "lab.yaml")
    )
    assert code == 2 and "no inventory at" in err and "pulumi up --stack t" in err
    assert_one_error_line(err, "run")


def _fake_playbook(ok: bool) -> Any:
    def run_playbook(*_: Any, **__: Any) -> SimpleNamespace:
        return SimpleNamespace(
            ok=ok,
            status="successful" if ok else "failed",
            rc=0 if ok else 2,
            recap=lambda: "recap",
            summary=lambda: "summary line",
            artifacts=Path("/tmp/artifacts"),
            hosts={},
        )

    return run_playbook


@pytest.mark.parametrize(("ok", "code"), [(True, 0), (False, 1)])
def test_run_playbook_result(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    state: Path,
    ok: bool,
    code: int,
) -> None:
    monkeypatch.setattr("fabric.handoff.runner.run_playbook", _fake_playbook(ok))
    result = tmp_path / "result.json"
    argv = ["run", "site.yml", "--stack", "t", "--spec", str(SPECS / "valid" / "lab.yaml")]
    assert outcome(capsys, *argv, "--result-json", str(result)) == (code, "summary line\n", "")
    assert json.loads(result.read_text())["ok"] is ok
    got, out, _ = outcome(capsys, *argv, "--json")
    assert (got, json.loads(out)["status"]) == (code, "successful" if ok else "failed")


def test_check_without_inventory_is_2(capsys: pytest.CaptureFixture[str], state: Path) -> None:
    (state / "t").mkdir()  # a stack with state but no inventory (else: no stack named 't')
    code, out, err = outcome(capsys, "check", "--stack", "t")
    assert (code, out) == (2, "")
    assert_one_error_line(err, "check")
    assert "inventory.yml not found" in err


def test_check_bad_spec_is_2_before_any_check(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path, state: Path
) -> None:
    (state / "t").mkdir()
    (state / "t" / "inventory.yml").write_text(INVENTORY)
    monkeypatch.setattr(
        "fabric.verify.runner.run_checks", lambda *a, **k: pytest.fail("checks ran")
    )
    spec = broken_spec(tmp_path)
    code, out, err = outcome(capsys, "check", "--stack", "t", "--spec", str(spec))
    assert (code, out) == (2, "")
    assert_one_error_line(err, "check")
    assert f"{spec}: fabric.mtu:" in err
    code, out, err = outcome(capsys, "check", "--stack", "t", "--spec", str(spec), "--json")
    assert (code, json.loads(out)["exit_code"], err) == (2, 2, "")


@pytest.mark.parametrize(("ok", "code"), [(True, 0), (False, 1)])
def test_check_result(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    state: Path,
    ok: bool,
    code: int,
) -> None:
    (state / "t").mkdir()
    (state / "t" / "inventory.yml").write_text(INVENTORY)
    fake = SimpleNamespace(ok=ok, model_dump=lambda: {"ok": ok})
    monkeypatch.setattr("fabric.verify.runner.run_checks", lambda *a, **k: fake)
    got, out, _ = outcome(
        capsys, "check", "--stack", "t", "--spec", str(SPECS / "valid" / "lab.yaml"), "--json"
    )
    assert (got, json.loads(out)) == (code, {"ok": ok})


# -- the lab: 1 when it is not up or unhealthy, or the image cannot be built ----------------


def test_lab_status_not_up_is_1(capsys: pytest.CaptureFixture[str], state: Path) -> None:
    """A stack this checkout knows (Pulumi.lab.yaml) with no lab up: 1; an unknown one: 2."""
    code, out, err = outcome(capsys, "lab", "status", "--stack", "lab")
    assert (code, out) == (1, "")
    assert_one_error_line(err, "lab status")
    assert "bring the lab up first" in err
    code, out, err = outcome(capsys, "lab", "status", "--stack", "lab", "--json")
    assert (code, json.loads(out)["exit_code"], err) == (1, 1, "")
    code, out, err = outcome(capsys, "lab", "status", "--stack", "t")
    assert (code, out) == (2, "") and "no stack named 't'" in err


def test_lab_image_failure_is_1(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from fabric.lab import image

    def ensure_image() -> str:
        raise image.ImageError("podman build failed: no space left on device")

    monkeypatch.setattr(image, "ensure_image", ensure_image)
    code, out, err = outcome(capsys, "lab", "image")
    assert (code, out) == (1, "")
    assert err == "railyard lab image: error: podman build failed: no space left on device\n"


# -- Ctrl-C and bugs -----------------------------------------------------------------------


def test_interrupt_is_130(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupted(args: argparse.Namespace) -> int:
        raise KeyboardInterrupt

    interrupted.__name__ = "cmd_validate"
    monkeypatch.setattr("fabric.cli.validate.cmd_validate", interrupted)
    code, _, err = outcome(capsys, "validate", "--spec", "x.yaml")
    assert (code, err) == (130, "railyard validate: error: interrupted\n")


def test_a_bug_keeps_its_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(args: argparse.Namespace) -> int:
        raise RuntimeError("a bug")

    monkeypatch.setattr("fabric.cli.validate.cmd_schema", broken)
    with pytest.raises(RuntimeError, match="a bug"):
        main(["schema"])


def test_entry_point_exit_code_and_no_traceback(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "fabric", "topology", "--spec", str(broken_spec(tmp_path))],
        check=False,
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        timeout=60,
    )
    assert (proc.returncode, proc.stdout) == (2, "")
    assert_one_error_line(proc.stderr, "topology")
