"""``python -m fabric topology`` end to end through the CLI entry point."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from fabric.cli import main

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests/fixtures"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["topology", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_from_spec_tree(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--from-spec", str(ROOT / "Pulumi.lab.yaml"))
    assert code == 0 and "SwitchName=spine01 Switches=leaf[01-02]\n" in out


def test_from_ibnetdiscover_block(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys,
        "--from-ibnetdiscover",
        str(FIXTURES / "ibnetdiscover__ibsim_lab__1.txt"),
        "--plugin",
        "block",
        "--block-size",
        "5",
    )
    assert code == 0 and out.splitlines()[1:] == [
        "BlockName=leaf01 Nodes=gpu[01-05]",
        "BlockName=leaf02 Nodes=gpu[06-08],sm[1-2]",
        "BlockSizes=5",
    ]


def test_from_ibnetdiscover_yaml(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys,
        "--from-ibnetdiscover",
        str(FIXTURES / "ibnetdiscover__ibsim_lab__1.txt"),
        "--plugin",
        "yaml",
    )
    assert code == 0 and yaml.safe_load(out)[0]["tree"]["switches"][2] == {
        "switch": "spine01",
        "children": "leaf[01-02]",
    }


def test_oversubscription(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--from-spec", str(ROOT / "Pulumi.lab.yaml"), "--oversubscription")
    assert code == 0 and out.splitlines()[0] == "leaf01\tdown 2000 Gb/s\tup 1600 Gb/s\t1.25:1"


def test_ibsim_net(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--from-spec", str(ROOT / "Pulumi.lab.yaml"), "--ibsim-net")
    assert code == 0 and 'Ca\t1 "gpu01:mlx5_0"\t# "gpu01 mlx5_0"' in out


def test_bad_ibnetdiscover_reports_the_line(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(
        capsys, "--from-ibnetdiscover", str(FIXTURES / "ibnetdiscover_p__ibsim_quirks__1.txt")
    )
    assert code == 2 and "line 1" in err and "without -p" in err
    assert err.startswith("python -m fabric topology: error: ") and err.count("\n") == 1


def test_block_size_too_big_names_the_fix(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(
        capsys,
        "--from-spec",
        str(ROOT / "Pulumi.lab.yaml"),
        "--plugin",
        "block",
        "--block-size",
        "6",
    )
    assert code == 2 and "use --block-size 5 or less" in err


def test_missing_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run(capsys, "--from-ibnetdiscover", str(tmp_path / "nope.txt"))
    assert code == 2 and f"cannot read {tmp_path / 'nope.txt'}: No such file or directory" in err


def test_nodes_keeps_only_the_slurm_hosts(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys,
        "--from-ibnetdiscover",
        str(FIXTURES / "ibnetdiscover__ibsim_lab__1.txt"),
        "--nodes",
        "gpu[01-08]",
    )
    assert code == 0 and "sm1" not in out and "Nodes=gpu[06-08]\n" in out, out


def test_nodes_bad_hostlist_names_it(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "--from-spec", str(ROOT / "Pulumi.lab.yaml"), "--nodes", "gpu[01-")
    assert (
        code == 2
        and err.startswith("python -m fabric topology: error: --nodes: ")
        and "gpu[01-" in err
    ), err


def test_block_size_below_one(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(
        capsys,
        "--from-spec",
        str(ROOT / "Pulumi.lab.yaml"),
        "--plugin",
        "block",
        "--block-size",
        "0",
    )
    assert (code, err) == (2, "python -m fabric topology: error: --block-size must be 1 or more\n")


def test_bad_spec_is_bad_input_in_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    data = yaml.safe_load((ROOT / "tests/unit/specs/valid/lab.yaml").read_text())
    data["fabric"]["mtu"] = 9000
    data["slurm"]["controller"] = "ctl9"
    spec = tmp_path / "broken.yaml"
    spec.write_text(yaml.safe_dump(data))
    code, out, err = run(capsys, "--from-spec", str(spec))
    assert (code, out, err.count("\n")) == (2, "", 1)
    assert err.startswith(
        f"python -m fabric topology: error: {spec}: fabric.mtu: 9000 is not an InfiniBand MTU"
    )
    assert f"(and 1 more problem: python -m fabric validate {spec} lists them all)" in err


def test_missing_spec_is_bad_input(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run(capsys, "--from-spec", str(tmp_path / "none.yaml"))
    assert code == 2 and "none.yaml: no such file" in err


# --- input a user can trust (issue 16): one line, exit 2, before anything is written ---------


def _refused(capsys: pytest.CaptureFixture[str], path: Path, *argv: str) -> str:
    code, out, err = run(capsys, "--from-ibnetdiscover", str(path), *argv)
    assert (code, out) == (2, "")
    assert err.startswith("python -m fabric topology: error: ") and err.count("\n") == 1
    return err


@pytest.mark.parametrize("text", ["", "#\n# Topology file: generated on Mon Nov 23 2026\n#\n\n"])
def test_empty_or_comments_only_input_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, text: str
) -> None:
    path = tmp_path / "ibnetdiscover.txt"
    path.write_text(text)
    assert "expected at least one node record" in _refused(capsys, path)


def test_input_cut_at_a_line_boundary_names_the_node(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    lines = (FIXTURES / "ibnetdiscover__ibsim_lab__1.txt").read_text().split("\n")
    path = tmp_path / "cut.txt"
    path.write_text("\n".join(lines[:40]) + "\n")
    err = _refused(capsys, path)
    assert 'line 39: expected all port lines of "leaf02"' in err and "cut off" in err


def test_input_cut_mid_line_is_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Cut inside a CA's port line: the line no longer parses, and is named."""
    text = (FIXTURES / "ibnetdiscover__ibsim_lab__1.txt").read_text()
    path = tmp_path / "cut.txt"
    cut = text.index("lmc 0", text.index("\nCa"))
    path.write_text(text[:cut])
    line = text.count("\n", 0, cut) + 1
    assert f"line {line}: expected a port line" in _refused(capsys, path)


def test_input_without_its_last_newline_is_whole(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """As the hand-off saves it (Ansible's registered stdout drops the last newline)."""
    path = tmp_path / "ibnetdiscover.txt"
    path.write_text((FIXTURES / "ibnetdiscover__ibsim_lab__1.txt").read_text().rstrip("\n"))
    code, out, _ = run(capsys, "--from-ibnetdiscover", str(path))
    assert code == 0 and "SwitchName=spine01 Switches=leaf[01-02]" in out


def test_binary_input_is_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "capture.pcap"
    path.write_bytes(b"\xd4\xc3\xb2\xa1\x02\x00\x04\x00" + bytes(range(256)))
    assert "line 1: byte 5 is NUL" in _refused(capsys, path)


def test_non_utf8_input_is_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "latin1.txt"
    text = (FIXTURES / "ibnetdiscover__ibsim_lab__1.txt").read_text()
    path.write_bytes(text.replace("gpu01", "gpü01", 1).encode("latin-1"))
    assert "is not UTF-8" in _refused(capsys, path)


def test_input_over_the_cap_is_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "big.txt"
    text = (FIXTURES / "ibnetdiscover__ibsim_lab__1.txt").read_text()
    path.write_text(text * (1024 * 1024 // len(text) + 1))
    assert "--max-mb" in _refused(capsys, path, "--max-mb", "1")


def test_fabric_without_a_host_on_a_switch_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    """A lone CA (real topograph capture): no topology.conf at all rather than an empty one."""
    err = _refused(capsys, FIXTURES / "ibnetdiscover__topograph__2.txt")
    assert "no switch is cabled to a host's HCA" in err


def test_several_planes_are_said_in_a_comment(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Two real captures in one file, as the hand-off writes one per plane: two parts."""
    path = tmp_path / "planes.txt"
    path.write_text(
        (FIXTURES / "ibnetdiscover__ibsim_lab__1.txt").read_text()
        + (FIXTURES / "ibnetdiscover__ibtopotool__2.txt").read_text()
    )
    code, out, _ = run(capsys, "--from-ibnetdiscover", str(path))
    assert code == 0
    assert "# this fabric has 2 disjoint parts (pods or planes)" in out
    assert "SwitchName=spine01 Switches=leaf[01-02]" in out
    assert "SwitchName=S-000b8cffff0053ee Nodes=compute-00-[00-01]" in out


def test_the_ibnetdiscover_path_imports_no_heavy_module() -> None:
    """What the topology path does not use it does not import (start-up is most of its time on a
    2,048-host capture): no pydantic, Pulumi, rich or yaml, and no other parser."""
    import subprocess
    import sys

    probe = (
        "import sys\n"
        "from fabric.cli import main\n"
        f"code = main(['topology', '--from-ibnetdiscover', {str(FIXTURES / 'ibnetdiscover__ibsim_lab__1.txt')!r}])\n"
        "heavy = {'pydantic', 'pulumi', 'rich', 'yaml', 'networkx'}\n"
        "print(code, sorted(m for m in sys.modules if m.split('.')[0] in heavy"
        " or m.startswith('fabric.parsers.') and not m.startswith(('fabric.parsers.ibnetdiscover',"
        " 'fabric.parsers.text'))))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        check=True,
    )
    assert done.stdout.splitlines()[-1] == "0 []", done.stdout[-500:]


def test_the_tree_path_builds_no_graph() -> None:
    """``topology --from-ibnetdiscover`` (tree) runs the compiled writer: it loads only the CLI,
    the decoder and the writer, not the graph, its dataclasses, or the other commands."""
    import subprocess
    import sys

    probe = (
        "import sys, io, contextlib\n"
        "from fabric.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    code = main(['topology', '--from-ibnetdiscover', {str(FIXTURES / 'ibnetdiscover__ibsim_lab__1.txt')!r}])\n"
        "print(code, sorted(m for m in sys.modules if m.startswith('fabric')),"
        " sorted({'dataclasses', 'subprocess', 'inspect'} & set(sys.modules)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        check=True,
    )
    assert done.stdout.splitlines()[-1] == (
        "0 ['fabric', 'fabric.cli', 'fabric.cli.errors', 'fabric.cli.topology', 'fabric.parsers',"
        " 'fabric.parsers.ibnetdiscover', 'fabric.parsers.ibnetdiscover._ibnetdiscover_scan',"
        " 'fabric.parsers.ibnetdiscover.tree', 'fabric.parsers.text'] []"
    ), done.stdout[-800:]


def test_each_command_loads_only_its_module() -> None:
    """``fabric.cli.COMMANDS`` names, for every command, the module that registers it (main
    imports only that one), and every registered command is in it."""
    import argparse

    from fabric.cli import COMMAND_MODULES, COMMANDS, build_parser

    registered: dict[str, str] = {}
    for module in COMMAND_MODULES:
        parser = build_parser((module,))
        subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        registered.update(dict.fromkeys(subparsers.choices, module))
    assert registered == COMMANDS


@pytest.mark.parametrize("argv", [["--help"], ["topology", "--help"], ["nosuchcommand"]])
def test_help_and_unknown_commands_still_list_every_command(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    from fabric.cli import COMMANDS

    try:
        code = main(argv)
    except SystemExit as exit_:  # --help exits through argparse
        code = exit_.code
    out, err = capsys.readouterr()
    if argv[:1] == ["topology"]:
        assert code == 0 and "--from-ibnetdiscover" in out
        return
    assert code in (0, 2)
    assert all(command in out + err for command in COMMANDS), out + err
