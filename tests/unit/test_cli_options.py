"""Every command names a spec with ``--spec FILE`` and a stack with ``--stack NAME`` (default
``lab``, ``fabric.state.DEFAULT_STACK``); the older spellings still work, hidden from --help."""

from __future__ import annotations

import pytest

from fabric.cli import build_parser, main
from fabric.state import DEFAULT_STACK, REPO_ROOT

LAB = str(REPO_ROOT / "Pulumi.lab.yaml")
#: Each command that names a stack, as parsed with nothing but what it requires.
STACK_COMMANDS = {
    "validate": ["validate"],
    "check": ["check"],
    "run": ["run", "site.yml"],
    "watch": ["watch"],
    "lab status": ["lab", "status"],
    "kubernetes": ["kubernetes"],
}


@pytest.mark.parametrize("command", STACK_COMMANDS)
def test_every_stack_command_defaults_to_the_same_stack(command: str) -> None:
    args = build_parser().parse_args(STACK_COMMANDS[command])
    assert args.stack == DEFAULT_STACK == "lab"
    named = build_parser().parse_args([*STACK_COMMANDS[command], "--stack", "other"])
    assert named.stack == "other"


@pytest.mark.parametrize("command", ["validate", "check", "run", "watch", "topology", "kubernetes"])
def test_every_spec_command_names_it_with_spec_file(command: str) -> None:
    argv = {"run": ["run", "site.yml"]}.get(command, [command])
    assert str(build_parser().parse_args([*argv, "--spec", LAB]).spec) == LAB


@pytest.mark.parametrize("command", [["validate"], ["check"], ["topology"], ["run", "x"]])
def test_help_shows_only_the_one_spelling(
    command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        main([*command, "--help"])
    out = capsys.readouterr().out
    assert "--spec FILE" in out and "--from-spec" not in out
    assert "SPEC_OR_STACK_FILE" not in out and "legacy" not in out


def test_old_spellings_give_the_same_result(capsys: pytest.CaptureFixture[str]) -> None:
    pairs = [
        (["validate", LAB], ["validate", "--spec", LAB]),
        (["topology", "--from-spec", LAB], ["topology", "--spec", LAB]),
        (["check", "--plan", LAB], ["check", "--plan", "--spec", LAB]),
    ]
    for old, new in pairs:
        assert main(old) == 0
        before = capsys.readouterr()
        assert main(new) == 0
        assert capsys.readouterr() == before, old


def test_check_plan_of_a_stack(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--plan", "--stack", "lab"]) == 0
    by_stack = capsys.readouterr().out
    assert main(["check", "--plan", "--spec", LAB]) == 0
    assert capsys.readouterr().out == by_stack and by_stack.startswith("ports: ")


def test_a_spec_given_twice_is_bad_usage(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", LAB, "--spec", LAB]) == 2
    assert "the spec is given twice" in capsys.readouterr().err
    assert main(["check", LAB]) == 2  # a file without --plan
    assert "give the spec with --spec" in capsys.readouterr().err
    assert main(["topology", "--spec", LAB, "--from-spec", LAB]) == 2
    assert "not allowed with argument" in capsys.readouterr().err
