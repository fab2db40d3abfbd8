"""One CLI convention, command by command (issue 38), walked from ``fabric.cli.COMMANDS``:

- a command that reads a cluster names it with ``--spec FILE`` or ``--stack NAME`` (from
  ``fabric/cli/options.py``) and nothing else; ``--stack`` defaults to ``lab`` except where it
  is one of several sources (``topology``);
- every command takes ``--json``: one JSON document on stdout, the result or the error;
- the older spellings (``fabric.cli.options.RETIRED``) fail with one line naming the new flag,
  exit 2; an unknown stack is exit 2 with one line naming it and the fix.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

import pytest
import yaml

from fabric.cli import COMMANDS, build_parser, main
from fabric.cli.errors import stack_name
from fabric.cli.options import RETIRED
from fabric.state import DEFAULT_STACK, REPO_ROOT

SPECS = REPO_ROOT / "tests" / "unit" / "specs" / "valid"
LAB = str(REPO_ROOT / "Pulumi.lab.yaml")
CAPTURE = str(REPO_ROOT / "tests" / "fixtures" / "ibnetdiscover__ibsim_lab__1.txt")
IBSTAT = str(REPO_ROOT / "tests" / "fixtures" / "ibstat__gpud__1.txt")


class Rule(NamedTuple):
    """How a command names a cluster: ``argv`` (the command and what else it requires),
    whether it takes ``--spec`` and ``--stack``, and ``--stack``'s default."""

    argv: list[str]
    spec: bool
    stack: bool
    stack_default: str | None = DEFAULT_STACK
    #: what else a whole command line needs when no cluster is named (topology: a source)
    source: tuple[str, ...] = ()


#: The convention, one row per command (a test keeps the rows equal to the parsers' commands).
CONVENTION: dict[str, Rule] = {
    "validate": Rule(["validate"], spec=True, stack=True),
    "schema": Rule(["schema"], spec=False, stack=False),
    "topology": Rule(
        ["topology"], spec=True, stack=True, stack_default=None, source=("--stack", "lab")
    ),
    "kubernetes": Rule(["kubernetes"], spec=True, stack=True),
    "parse": Rule(["parse", "ibstat", IBSTAT], spec=False, stack=False),
    "lab image": Rule(["lab", "image"], spec=False, stack=False),
    "lab status": Rule(["lab", "status"], spec=False, stack=True),  # the lab's state, no spec
    # faults on a running lab: its state, no spec
    "lab fault list": Rule(["lab", "fault", "list"], spec=False, stack=True),
    "lab fault pull": Rule(["lab", "fault", "pull", "gpu01"], spec=False, stack=True),
    "lab fault speed": Rule(["lab", "fault", "speed", "gpu01", "EDR"], spec=False, stack=True),
    "lab fault width": Rule(["lab", "fault", "width", "gpu01", "1x"], spec=False, stack=True),
    "lab fault counter": Rule(["lab", "fault", "counter", "gpu01"], spec=False, stack=True),
    "lab fault sm": Rule(["lab", "fault", "sm", "sm1"], spec=False, stack=True),
    "lab fault mtu": Rule(["lab", "fault", "mtu", "leaf1:p1", "1500"], spec=False, stack=True),
    "lab fault restore": Rule(["lab", "fault", "restore", "--all"], spec=False, stack=True),
    "run": Rule(["run", "site.yml"], spec=True, stack=True),
    "check": Rule(["check"], spec=True, stack=True),
    "import": Rule(["import", CAPTURE], spec=False, stack=True, stack_default=None),
    "watch": Rule(["watch"], spec=True, stack=True),
}
STACK_COMMANDS = [name for name, rule in CONVENTION.items() if rule.stack]


def leaves(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> dict[str, argparse.ArgumentParser]:
    """Every runnable command's parser, by its name (``lab status``)."""
    found: dict[str, argparse.ArgumentParser] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found.update(leaves(sub, (*path, name)))
    if path and not found:
        found[" ".join(path)] = parser
    return found


PARSERS = leaves(build_parser())


def options(command: str) -> dict[str, argparse.Action]:
    return {s: a for a in PARSERS[command]._actions for s in a.option_strings}


def outcome(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty state root: no stack has state, only the checkout's Pulumi.<stack>.yaml."""
    root = tmp_path / "state"
    root.mkdir()
    monkeypatch.setenv("RAILYARD_STATE_DIR", str(root))
    monkeypatch.setenv("RAILYARD_MUNGE_KEY", "not-a-real-key")
    monkeypatch.delenv("PULUMI_BACKEND_URL", raising=False)
    return root


# -- the table is every command ------------------------------------------------------------


def test_the_convention_names_every_command() -> None:
    assert set(CONVENTION) == set(PARSERS)
    assert {name.split()[0] for name in PARSERS} == set(COMMANDS)


# -- --spec FILE / --stack NAME, and nothing else -----------------------------------------------


@pytest.mark.parametrize("command", CONVENTION)
def test_a_cluster_is_named_one_way(command: str) -> None:
    rule, opts = CONVENTION[command], options(command)
    assert ("--spec" in opts, "--stack" in opts) == (rule.spec, rule.stack)
    if rule.spec:
        assert (opts["--spec"].metavar, opts["--spec"].type) == ("FILE", Path)
    if rule.stack:
        stack = opts["--stack"]
        assert (stack.metavar, stack.type, stack.default) == (
            "NAME",
            stack_name,
            rule.stack_default,
        )
    # nothing else names a spec or a stack, and what --help hides is the retired spellings
    visible = {s for s in opts if opts[s].help != argparse.SUPPRESS}
    assert not {s for s in visible - {"--spec", "--stack"} if "spec" in s or "stack" in s}
    hidden = {
        a.option_strings[0] if a.option_strings else "SPEC"
        for a in PARSERS[command]._actions
        if a.help == argparse.SUPPRESS
    }
    assert hidden == {e.spelling for e in RETIRED if e.command == command}


@pytest.mark.parametrize("command", STACK_COMMANDS)
def test_the_stack_is_parsed_the_same_everywhere(command: str) -> None:
    rule = CONVENTION[command]
    if rule.stack_default is not None:
        assert build_parser().parse_args(rule.argv).stack == rule.stack_default == "lab"
    assert build_parser().parse_args([*rule.argv, "--stack", "other"]).stack == "other"


@pytest.mark.parametrize("command", [c for c, r in CONVENTION.items() if r.spec])
def test_the_spec_is_parsed_the_same_everywhere(command: str) -> None:
    assert build_parser().parse_args([*CONVENTION[command].argv, "--spec", LAB]).spec == Path(LAB)


@pytest.mark.parametrize("command", [c for c, r in CONVENTION.items() if r.spec])
def test_help_shows_only_the_one_spelling(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main([*CONVENTION[command].argv, "--help"])
    out = capsys.readouterr().out
    assert "--spec FILE" in out and "--stack NAME" in out
    assert "--from-spec" not in out and "retired" not in out and "SPEC_OR_STACK_FILE" not in out


def test_topology_reads_a_stack_as_its_spec(capsys: pytest.CaptureFixture[str]) -> None:
    assert outcome(capsys, "topology", "--spec", LAB) == outcome(
        capsys, "topology", "--stack", "lab"
    )
    code, out, err = outcome(capsys, "topology", "--stack", "lab", "--spec", LAB)
    assert (code, out) == (2, "") and "not allowed with argument" in err


def test_check_plan_of_a_stack(capsys: pytest.CaptureFixture[str]) -> None:
    by_stack = outcome(capsys, "check", "--plan", "--stack", "lab")
    assert by_stack == outcome(capsys, "check", "--plan", "--spec", LAB)
    assert by_stack[0] == 0 and by_stack[1].startswith("ports: ")


# -- the older spellings: one line naming the new flag, exit 2 --------------------------------

#: Each retired spelling as it was typed, and its error line.
OLD = [
    (
        ["validate", LAB],
        f"railyard validate: error: validate SPEC: a spec named without --spec is gone; "
        f"use --spec {LAB}",
    ),
    (
        ["topology", "--from-spec", LAB],
        "railyard topology: error: --from-spec: this option is gone; use --spec FILE",
    ),
    (
        ["check", "--plan", LAB],
        f"railyard check: error: check SPEC: a spec named without --spec is gone; use --spec {LAB}",
    ),
]


def test_every_retired_spelling_is_in_the_one_table() -> None:
    assert {(e.command, e.spelling) for e in RETIRED} == {
        ("validate", "SPEC"),
        ("topology", "--from-spec"),
        ("check", "SPEC"),
    }
    assert {e.command for e in RETIRED} == {argv[0] for argv, _ in OLD}


@pytest.mark.parametrize(("argv", "line"), OLD, ids=lambda v: " ".join(v)[:40])
def test_a_retired_spelling_is_one_line_naming_the_new_flag(
    capsys: pytest.CaptureFixture[str], argv: list[str], line: str
) -> None:
    assert outcome(capsys, *argv) == (2, "", line + "\n")
    code, out, err = outcome(capsys, *argv, "--json")
    assert (code, err, json.loads(out)) == (
        2,
        "",
        {"error": line.split(": error: ", 1)[1], "exit_code": 2},
    )


def test_a_retired_option_without_its_value_names_the_new_flag_too(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = outcome(capsys, "topology", "--from-spec")
    assert (code, out) == (2, "") and err.endswith(
        "--from-spec: this option is gone; use --spec FILE\n"
    )


def test_check_with_a_bare_file_and_no_plan_names_the_flag(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = outcome(capsys, "check", LAB)
    assert (code, out) == (2, "") and err.endswith(f"use --spec {LAB}\n")


def test_the_new_spelling_gives_what_the_old_one_gave(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = outcome(capsys, "validate", "--spec", LAB)
    assert code == 0 and out.startswith("lab: valid")


# -- an unknown stack: exit 2, one line naming it and the fix ---------------------------------


@pytest.mark.usefixtures("state")
@pytest.mark.parametrize("command", STACK_COMMANDS)
def test_an_unknown_stack_is_2(capsys: pytest.CaptureFixture[str], command: str) -> None:
    argv = [*CONVENTION[command].argv, "--stack", "nosuch"]
    code, out, err = outcome(capsys, *argv)
    assert (code, out) == (2, "")
    assert err.startswith(f"railyard {command}: error: no stack named 'nosuch'"), err
    assert "pass one with --stack" in err and err.count("\n") == 1
    code, out, err = outcome(capsys, *argv, "--json")
    doc = json.loads(out)
    assert (code, err, doc["exit_code"]) == (2, "", 2) and "'nosuch'" in doc["error"]


def test_lab_status_of_an_unknown_stack_as_a_process() -> None:
    """The issue's case, as a user runs it: exit 2 (it was 1), one line, no traceback."""
    done = subprocess.run(
        [sys.executable, "-m", "fabric", "lab", "status", "--stack", "nosuch"],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.startswith("railyard lab status: error: no stack named 'nosuch'")
    assert done.stderr.count("\n") == 1


@pytest.mark.usefixtures("state")
def test_lab_status_of_a_known_stack_not_up_is_1(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = outcome(capsys, "lab", "status", "--stack", "lab", "--json")
    doc = json.loads(out)
    assert (code, err, doc["exit_code"]) == (1, "", 1) and "bring the lab up" in doc["error"]


def test_lab_status_of_unreadable_lab_state_is_2(
    capsys: pytest.CaptureFixture[str], state: Path
) -> None:
    (state / "t").mkdir()
    (state / "t" / "lab.json").write_text("{not json")
    code, out, err = outcome(capsys, "lab", "status", "--stack", "t")
    assert (code, out) == (2, "") and "cannot read the lab's state in" in err
    assert err.count("\n") == 1 and "Traceback" not in err


# -- --json on every command ------------------------------------------------------------------


@pytest.mark.parametrize("command", CONVENTION)
def test_every_command_takes_json(command: str) -> None:
    action = options(command)["--json"]
    assert isinstance(action, argparse._StoreTrueAction) and action.help != argparse.SUPPRESS


@pytest.mark.parametrize("command", CONVENTION)
def test_an_error_under_json_is_one_json_document(
    capsys: pytest.CaptureFixture[str], command: str
) -> None:
    rule = CONVENTION[command]
    code, out, err = outcome(capsys, *rule.argv, *rule.source, "--json", "--no-such-option")
    doc = json.loads(out)
    assert (code, err, doc["exit_code"]) == (2, "", 2)
    assert "unrecognized arguments: --no-such-option" in doc["error"]


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> object:
    code, out, err = outcome(capsys, *argv, "--json")
    assert code == 0, err
    return json.loads(out)


def test_validate_json(capsys: pytest.CaptureFixture[str]) -> None:
    doc = _json(capsys, "validate", "--stack", "lab")
    assert doc["valid"] is True and doc["problems"] == []  # type: ignore[index]


def test_schema_json(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert "properties" in _json(capsys, "schema")  # type: ignore[operator]
    out = tmp_path / "schema.json"
    assert _json(capsys, "schema", "--output", str(out)) == {"output": str(out)}
    assert "properties" in json.loads(out.read_text())


def test_topology_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, text, _ = outcome(capsys, "topology", "--stack", "lab")
    assert code == 0
    doc = _json(capsys, "topology", "--stack", "lab")
    assert doc == {"output": "tree", "text": text, "warnings": []}
    captured = _json(capsys, "topology", "--from-ibnetdiscover", CAPTURE, "--plugin", "block")
    assert captured["output"] == "block" and "BlockName=leaf01" in captured["text"]  # type: ignore[index]
    loads = _json(capsys, "topology", "--spec", LAB, "--oversubscription")
    leaf = loads["leaves"][0]  # type: ignore[index]
    assert loads["output"] == "oversubscription" and leaf["switch"] in loads["text"]  # type: ignore[index]
    assert leaf["down_gbps"] / leaf["up_gbps"] == pytest.approx(leaf["oversubscription"])


def test_kubernetes_json(capsys: pytest.CaptureFixture[str]) -> None:
    spec = str(SPECS / "kubernetes.yaml")
    code, out, _ = outcome(capsys, "kubernetes", "--spec", spec)
    doc = _json(capsys, "kubernetes", "--spec", spec)
    assert doc["objects"] == list(yaml.safe_load_all(out))  # type: ignore[index]
    assert [o["kind"] for o in doc["objects"]][0] == "NicClusterPolicy"  # type: ignore[index]


def test_parse_json_is_its_result(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = outcome(capsys, "parse", "ibstat", IBSTAT)
    assert code == 0 and _json(capsys, "parse", "ibstat", IBSTAT) == json.loads(out)


def test_lab_image_json(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import fabric.lab.image

    monkeypatch.setattr(fabric.lab.image, "ensure_image", lambda: "localhost/railyard-node:abc")
    assert _json(capsys, "lab", "image") == {"image": "localhost/railyard-node:abc"}
    assert outcome(capsys, "lab", "image") == (0, "localhost/railyard-node:abc\n", "")


def test_check_plan_json(capsys: pytest.CaptureFixture[str]) -> None:
    doc = _json(capsys, "check", "--plan", "--stack", "lab")
    assert doc["spec"] == LAB and "ports" in doc["families"]  # type: ignore[index]


def test_import_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = outcome(capsys, "import", CAPTURE)
    doc = _json(capsys, "import", CAPTURE)
    assert doc["spec"].rstrip("\n") == out.rstrip("\n")  # type: ignore[index]
    assert doc["notes"] and all(n in err for n in doc["notes"])  # type: ignore[index]
    assert (doc["name"], doc["output"]) == ("imported", None)  # type: ignore[index]


def test_watch_json_reads_once_and_prints_it(tmp_path: Path) -> None:
    """A stack whose hosts answer nothing (a closed loopback port): one reading, every tool a
    scrape error, printed as one document; no endpoint served."""
    from fabric.spec import load_spec

    state = tmp_path / "state" / "wt"
    state.mkdir(parents=True)
    hosts = {
        h: {"ansible_host": "127.0.0.1", "ansible_port": 9} for h in load_spec(Path(LAB)).hosts
    }
    inventory = {
        "all": {
            "vars": {
                "ansible_user": "root",
                "ansible_ssh_common_args": f"-o UserKnownHostsFile={state / 'known_hosts'}",
            },
            "hosts": hosts,
        }
    }
    (state / "inventory.yml").write_text(yaml.safe_dump(inventory))
    env = {**os.environ, "RAILYARD_STATE_DIR": str(tmp_path / "state")}
    done = subprocess.run(
        [sys.executable, "-m", "fabric", "watch", "--stack", "wt", "--spec", LAB, "--json"],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert {"ibnetdiscover", "sminfo"} <= set(doc["errors"]) and doc["cables"] == [], doc.keys()
