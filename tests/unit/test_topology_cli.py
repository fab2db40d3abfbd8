"""``python -m fabric topology`` end to end through the CLI entry point."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from fabric.cli import main
from fabric.state import REPO_ROOT

FIXTURES = REPO_ROOT / "tests/fixtures"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["topology", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_from_spec_tree(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--spec", str(REPO_ROOT / "Pulumi.lab.yaml"))
    assert code == 0 and "SwitchName=spine01 Switches=leaf[01-02]\n" in out


@pytest.mark.parametrize("plugin", ["tree", "block", "yaml"])
@pytest.mark.parametrize(
    "source", [["--spec", str(REPO_ROOT / "Pulumi.lab.yaml")], ["--stack", "lab"]]
)
def test_from_spec_is_the_handoffs_file_for_the_slurm_nodes(
    capsys: pytest.CaptureFixture[str], plugin: str, source: list[str]
) -> None:
    """A spec's topology names the Slurm nodes only (the compute nodes, as the hand-off writes
    slurm.conf and topology.conf), not sm[1-2], which slurmctld would refuse; ``--nodes``
    still picks any hosts."""
    from fabric.handoff.vars import slurm_topology_vars
    from fabric.spec import load_spec

    spec = load_spec(REPO_ROOT / "Pulumi.lab.yaml")
    handoff = slurm_topology_vars(
        spec.model_copy(
            update={"slurm": spec.slurm.model_copy(update={"topology_plugin": plugin})}
        ),
        spec.hosts_with_role("compute"),
    )["slurm_topology_conf"]
    code, out, _ = run(capsys, *source, "--plugin", plugin)
    assert (code, out) == (0, handoff) and "gpu[06-08]" in out and "sm" not in out
    code, out, _ = run(capsys, *source, "--nodes", "gpu[01-08],sm[1-2]")
    assert code == 0 and "SwitchName=leaf02 Nodes=gpu[06-08],sm[1-2]\n" in out


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
    code, out, _ = run(capsys, "--spec", str(REPO_ROOT / "Pulumi.lab.yaml"), "--oversubscription")
    assert code == 0 and out.splitlines()[0] == "leaf01\tdown 2000 Gb/s\tup 1600 Gb/s\t1.25:1"


def test_ibsim_net(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--spec", str(REPO_ROOT / "Pulumi.lab.yaml"), "--ibsim-net")
    assert code == 0 and 'Ca\t1 "gpu01:mlx5_0"\t# "gpu01 mlx5_0"' in out


def test_bad_ibnetdiscover_reports_the_line(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(
        capsys, "--from-ibnetdiscover", str(FIXTURES / "ibnetdiscover_p__ibsim_quirks__1.txt")
    )
    assert code == 2 and "line 1" in err and "without -p" in err
    assert err.startswith("railyard topology: error: ") and err.count("\n") == 1


def test_block_size_too_big_names_the_fix(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(
        capsys,
        "--spec",
        str(REPO_ROOT / "Pulumi.lab.yaml"),
        "--plugin",
        "block",
        "--block-size",
        "6",
    )
    # a spec's blocks hold its Slurm nodes: leaf02's are gpu[06-08] (sm[1-2] are no Slurm nodes)
    assert code == 2 and "use --block-size 3 or less" in err


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
    code, _, err = run(capsys, "--spec", str(REPO_ROOT / "Pulumi.lab.yaml"), "--nodes", "gpu[01-")
    assert (
        code == 2 and err.startswith("railyard topology: error: --nodes: ") and "gpu[01-" in err
    ), err


def test_block_size_below_one(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(
        capsys,
        "--spec",
        str(REPO_ROOT / "Pulumi.lab.yaml"),
        "--plugin",
        "block",
        "--block-size",
        "0",
    )
    assert (code, err) == (2, "railyard topology: error: --block-size must be 1 or more\n")


def test_bad_spec_is_bad_input_in_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    data = yaml.safe_load((REPO_ROOT / "tests/unit/specs/valid/lab.yaml").read_text())
    data["fabric"]["mtu"] = 9000
    data["slurm"]["controller"] = "ctl9"
    spec = tmp_path / "broken.yaml"
    spec.write_text(yaml.safe_dump(data))
    code, out, err = run(capsys, "--spec", str(spec))
    assert (code, out, err.count("\n")) == (2, "", 1)
    assert err.startswith(
        f"railyard topology: error: {spec}: fabric.mtu: 9000 is not an InfiniBand MTU"
    )
    assert f"(and 1 more problem: railyard validate --spec {spec} lists them all)" in err


def test_missing_spec_is_bad_input(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run(capsys, "--spec", str(tmp_path / "none.yaml"))
    assert code == 2 and "none.yaml: no such file" in err


# --- input a user can trust (issue 16): one line, exit 2, before anything is written ---------


def _refused(capsys: pytest.CaptureFixture[str], path: Path, *argv: str) -> str:
    code, out, err = run(capsys, "--from-ibnetdiscover", str(path), *argv)
    assert (code, out) == (2, "")
    assert err.startswith("railyard topology: error: ") and err.count("\n") == 1
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
        " 'fabric.parsers.text', 'fabric.parsers.errors'))))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO_ROOT,
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
        cwd=REPO_ROOT,
        check=True,
    )
    assert done.stdout.splitlines()[-1] == (
        "0 ['fabric', 'fabric.cli', 'fabric.cli.errors', 'fabric.cli.options',"
        " 'fabric.cli.topology', 'fabric.parsers', 'fabric.parsers.errors',"
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


# --- the entry point's shortcut to the compiled writer (fabric/__main__.py, issue 16) ------------

#: The command as a user runs it (the shortcut first), and the full CLI alone (what
#: ``fabric/__main__.py`` ran before the shortcut), each in a process of its own.
ENTRY = ("-m", "fabric")
FULL_CLI = ("-c", "import sys; from fabric.cli import main; sys.exit(main())")
SHORTCUT_FIXTURES = sorted(FIXTURES.glob("ibnetdiscover*.txt"))


def _process(
    prefix: tuple[str, ...], argv: list[str], env: dict[str, str] | None = None, **kwargs: object
) -> tuple[int, bytes, bytes]:
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, *prefix, *argv],
        stdin=subprocess.DEVNULL,
        capture_output="stdout" not in kwargs,
        timeout=120,
        cwd=REPO_ROOT,
        env=env,
        check=False,
        **kwargs,  # type: ignore[arg-type]
    )
    return done.returncode, done.stdout or b"", done.stderr or b""


def _same_as_the_cli(argv: list[str]) -> tuple[int, bytes, bytes]:
    """Run ``argv`` through the entry point and through the full CLI; assert the same exit code,
    stdout and stderr bytes; return them."""
    got = _process(ENTRY, argv)
    assert got == _process(FULL_CLI, argv), argv
    return got


def _shortcut(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int | None, str]:
    """What ``fast_topology`` returns and writes in this process."""
    from fabric.__main__ import fast_topology

    code = fast_topology(argv)
    out, err = capsys.readouterr()
    assert err == ""
    return code, out


def _bench_text(hosts: int) -> str:
    from bench.topology.fabric import graph, render_ibnetdiscover

    return render_ibnetdiscover(graph(hosts))


def test_the_shortcut_gives_the_clis_bytes_on_every_fixture(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Same exit code, stdout and stderr bytes as the full CLI on every ibnetdiscover fixture
    and a 64-host rail-optimized fabric; the shortcut takes exactly the texts the compiled writer
    takes (and writes nothing for the others, which the CLI then reads itself)."""
    from fabric.parsers.ibnetdiscover.tree import compiled_tree_conf

    bench = tmp_path / "bench_64.txt"
    bench.write_text(_bench_text(64))
    taken = []
    for path in [*SHORTCUT_FIXTURES, bench]:
        argv = ["topology", "--from-ibnetdiscover", str(path)]
        code, out, err = _same_as_the_cli(argv)
        writer = compiled_tree_conf(path.read_text())
        fast = _shortcut(argv, capsys)
        if writer is None:
            assert fast == (None, ""), path.name
        else:
            assert fast == (0, writer) and (code, out, err) == (0, writer.encode(), b""), path.name
            taken.append(path.name)
    assert len(taken) >= 6 and "bench_64.txt" in taken, taken


@pytest.mark.parametrize(
    "argv",
    [
        ["topology", "--help"],
        ["topology", "--from-ibnetdiscover"],
        ["topology", "--from-ibnetdiscover", "LAB", "--plugin", "tree"],
        ["topology", "--from-ibnetdiscover", "LAB", "--plugin", "block"],
        ["topology", "--from-ibnetdiscover", "LAB", "--nodes", "gpu[01-08]"],
        ["topology", "--from-ibnetdiscover", "LAB", "--max-mb", "0"],
        ["topology", "--from-ibnetdiscover=LAB"],
        ["topology", "--from-ib", "LAB"],
        ["topology", "--plugin", "tree", "--from-ibnetdiscover", "LAB"],
        ["topology", "--spec", "LAB"],
        ["topology", "--from-ibnetdiscover", "-"],
        ["topology", "--from-ibnetdiscover", "--nodes"],
        ["topology", "--from-ibnetdiscover", ""],
        ["parse", "ibnetdiscover", "LAB"],
        ["--help"],
        [],
    ],
)
def test_other_command_lines_go_to_the_cli(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """Only ``topology --from-ibnetdiscover FILE`` is taken; every other command line (even one
    the writer could serve) is the CLI's, with the CLI's bytes and exit code."""
    argv = [str(FIXTURES / "ibnetdiscover__ibsim_lab__1.txt") if a == "LAB" else a for a in argv]
    argv = [a.replace("=LAB", f"={FIXTURES / 'ibnetdiscover__ibsim_lab__1.txt'}") for a in argv]
    assert _shortcut(argv, capsys) == (None, "")
    code, out, err = _same_as_the_cli(argv)
    assert out + err, argv


def test_a_file_named_like_an_option_or_stdin_is_the_clis(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``-`` is stdin and ``-x`` an option to the CLI even where a file has that name."""
    monkeypatch.chdir(tmp_path)
    for name in ("-", "-lab.txt", "--nodes"):
        (tmp_path / name).write_bytes((FIXTURES / "ibnetdiscover__ibsim_lab__1.txt").read_bytes())
        assert _shortcut(["topology", "--from-ibnetdiscover", name], capsys) == (None, ""), name


def _lab_bytes() -> bytes:
    return (FIXTURES / "ibnetdiscover__ibsim_lab__1.txt").read_bytes()


#: Input the writer may not take: (name, content, taken by the shortcut, exit code).
NOT_PLAIN = [
    ("empty", b"", False, 2),
    ("comments-only", b"#\n# Topology file: generated on Mon Nov 23 2026\n#\n\n", False, 2),
    (
        "cut-mid-line",
        _lab_bytes()[: _lab_bytes().index(b"lmc 0", _lab_bytes().index(b"\nCa"))],
        False,
        2,
    ),
    ("cut-at-a-line", b"\n".join(_lab_bytes().split(b"\n")[:40]) + b"\n", False, 2),
    ("no-last-newline", _lab_bytes().rstrip(b"\n"), True, 0),
    ("utf8-not-ascii", _lab_bytes().replace(b"gpu01", "gpü01".encode(), 1), False, 0),
    ("not-utf8", _lab_bytes().replace(b"gpu01", "gpü01".encode("latin-1"), 1), False, 2),
    ("nul-byte", _lab_bytes().replace(b"gpu01 mlx5_0", b"gpu01\0 mlx5_0", 1), False, 2),
    ("stderr-line", (FIXTURES / "ibnetdiscover__ibtopotool__3.txt").read_bytes(), False, 0),
]


@pytest.mark.parametrize(
    ("content", "taken", "code"), [case[1:] for case in NOT_PLAIN], ids=[c[0] for c in NOT_PLAIN]
)
def test_input_that_is_not_plain_gets_the_clis_answer(
    content: bytes, taken: bool, code: int, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Refused, declined or not-ASCII input: the CLI's bytes and exit code. What the shortcut
    does not take it leaves untouched (nothing written), so every error comes from the CLI."""
    from fabric.parsers.ibnetdiscover.tree import compiled_tree_conf

    path = tmp_path / "ibnetdiscover.txt"
    path.write_bytes(content)
    argv = ["topology", "--from-ibnetdiscover", str(path)]
    got = _same_as_the_cli(argv)
    assert got[0] == code and (got[2] == b"") == (code == 0), got
    if taken:
        conf = compiled_tree_conf(content.decode())
        assert conf is not None and _shortcut(argv, capsys) == (0, conf) and got[1] == conf.encode()
    else:
        assert _shortcut(argv, capsys) == (None, "")


def test_missing_files_directories_and_fifos_get_the_clis_answer(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Nothing but a regular file is opened by the shortcut: a FIFO (or ``<(...)``'s pipe) can
    be read only once, so the CLI reads it."""
    import os
    import subprocess
    import sys
    import time

    for path in (tmp_path / "nope.txt", tmp_path):
        argv = ["topology", "--from-ibnetdiscover", str(path)]
        assert _shortcut(argv, capsys) == (None, "")
        code, out, err = _same_as_the_cli(argv)
        assert code == 2 and out == b"" and err.startswith(b"railyard topology: error: ")
    fifo = tmp_path / "capture.fifo"  # text the writer declines: the CLI must be able to read it
    os.mkfifo(fifo)
    argv = ["topology", "--from-ibnetdiscover", str(fifo)]
    text = (FIXTURES / "ibnetdiscover__ibtopotool__3.txt").read_bytes()
    with subprocess.Popen(
        [sys.executable, *ENTRY, *argv],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    ) as child:
        try:
            deadline = time.monotonic() + 60
            while True:  # the FIFO opens for writing once the child opened it for reading
                try:
                    writer = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
                    break
                except OSError:  # ENXIO: no reader yet
                    assert child.poll() is None and time.monotonic() < deadline
                    time.sleep(0.01)
            os.set_blocking(writer, True)
            with os.fdopen(writer, "wb") as handle:
                handle.write(text)
            out, err = child.communicate(timeout=30)  # a FIFO read twice: a second open waits
        finally:
            if child.poll() is None:
                child.kill()
    path = tmp_path / "capture.txt"
    path.write_bytes(text)
    assert (child.returncode, out, err) == _process(FULL_CLI, [*argv[:2], str(path)])


@pytest.mark.parametrize("unbuffered", [True, False])
def test_a_closed_stdout_is_the_clis_answer(unbuffered: bool, tmp_path: Path) -> None:
    """The reader of stdout went away (``| head``) before the text was written: the same exit
    code and stderr as the full CLI, buffered (the error at exit) or not (a quiet exit 0)."""
    import os
    import subprocess

    path = tmp_path / "lab.txt"
    path.write_bytes((FIXTURES / "ibnetdiscover__ibsim_lab__1.txt").read_bytes())
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    if unbuffered:
        env["PYTHONUNBUFFERED"] = "1"
    results = []
    for prefix in (ENTRY, FULL_CLI):
        read, write = os.pipe()
        os.close(read)
        try:
            argv = ["topology", "--from-ibnetdiscover", str(path)]
            results.append(_process(prefix, argv, env, stdout=write, stderr=subprocess.PIPE))
        finally:
            os.close(write)
    assert results[0] == results[1]
    assert results[0] == (0, b"", b""), results[0]


def test_the_shortcut_loads_neither_argparse_nor_the_cli() -> None:
    """What makes it fast: from the interpreter's own start (``-S``: no site packages, no
    editable finder) the shortcut loads the writer's package and nothing of the CLI,
    ``pathlib``, ``typing`` or ``re``."""
    import subprocess
    import sys

    probe = (
        "import os, sys\n"
        "sys.stdout = open(os.devnull, 'w')\n"
        "from fabric.__main__ import fast_topology\n"
        f"code = fast_topology(['topology', '--from-ibnetdiscover', {str(FIXTURES / 'ibnetdiscover__ibsim_lab__1.txt')!r}])\n"
        "sys.stdout = sys.__stdout__\n"
        "print(code, sorted(m for m in sys.modules if m.startswith('fabric')),"
        " sorted({'argparse', 'pathlib', 'typing', 're', 'enum', 'gettext', 'shutil'}"
        " & set(sys.modules)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-S", "-c", probe],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO_ROOT,
        check=True,
    )
    assert done.stdout.splitlines()[-1] == (
        "0 ['fabric', 'fabric.__main__', 'fabric.parsers', 'fabric.parsers.errors',"
        " 'fabric.parsers.ibnetdiscover',"
        " 'fabric.parsers.ibnetdiscover._ibnetdiscover_scan',"
        " 'fabric.parsers.ibnetdiscover.tree'] []"
    ), done.stdout[-800:]


def test_the_shortcut_reads_less_than_the_clis_cap() -> None:
    """A file the shortcut reads is one the CLI's default ``--max-mb`` would read too; the cap
    is parse's and import's (bad input, round 3)."""
    from fabric.__main__ import FAST_MAX_BYTES
    from fabric.cli.topology import DEFAULT_MAX_MB
    from fabric.parsers.text import DEFAULT_LIMIT_MIB, MIB

    assert DEFAULT_MAX_MB == DEFAULT_LIMIT_MIB
    assert 0 < FAST_MAX_BYTES == DEFAULT_MAX_MB * MIB
