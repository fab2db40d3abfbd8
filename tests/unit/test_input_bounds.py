"""Bad input, round 4 (issue 44, items 1 and 5): every input path of every command goes through
one bounded reader, so an endless file (/dev/zero) is refused at the cap with one line and exit
2, in bounded memory, and Ctrl-C stops a read (exit 130); ``--max-mb`` and the other numeric
flags take only values in range. (``kubernetes --from-ibnetdiscover /dev/zero`` grew to 23.9
GB; ``--max-mb 99999999999999999999`` raised OverflowError, ``--max-mb 30000`` MemoryError.)"""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
import threading
import time
import tracemalloc
from pathlib import Path

import pytest

from fabric.cli import main
from fabric.cli.errors import port_number, seconds
from fabric.parsers.text import MAX_LIMIT_MIB, MIB, InputError, read_text
from fabric.spec.load import MAX_SPEC_BYTES
from fabric.state import REPO_ROOT

FIXTURES = REPO_ROOT / "tests" / "fixtures"
KUBERNETES = str(REPO_ROOT / "tests" / "unit" / "specs" / "valid" / "kubernetes.yaml")
IBSTAT = str(FIXTURES / "ibstat__gpud__1.txt")
CAPTURE = str(FIXTURES / "ibnetdiscover__ibsim_lab__1.txt")
#: What a spec file over the spec's own cap is told.
SPEC_CAP = f"/dev/zero: larger than {MAX_SPEC_BYTES >> 20} MiB: not a cluster spec"
#: The address space a command may use here: the issue's bound, 1 GiB.
MEMORY_BOUND = 1 << 30


def _bounded() -> None:  # in the child, before exec: no regression can eat the machine
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BOUND, MEMORY_BOUND))


def run(*argv: str, stdin: int | None = subprocess.DEVNULL) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "fabric", *argv],
        capture_output=True,
        text=True,
        check=False,
        cwd=REPO_ROOT,
        stdin=stdin,
        timeout=120,
        preexec_fn=_bounded,  # noqa: PLW1509 - no threads in the child before exec
    )


def one_line(done: subprocess.CompletedProcess[str], command: str) -> str:
    err = done.stderr
    assert err.startswith(f"railyard {command}: error: "), err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err


# -- /dev/zero on every input path --------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["parse", "ibstat", "/dev/zero"], "/dev/zero: larger than the input cap of 64 MiB"),
        (["import", "/dev/zero"], "/dev/zero: larger than the input cap of 64 MiB"),
        (
            ["import", CAPTURE, "--sminfo", "/dev/zero"],
            "/dev/zero: larger than the input cap of 64 MiB",
        ),
        (
            ["topology", "--from-ibnetdiscover", "/dev/zero"],
            "/dev/zero: larger than the input cap of 64 MiB",
        ),
        (
            ["topology", "--from-gce-instances", "/dev/zero"],
            "/dev/zero: larger than the input cap of 64 MiB",
        ),
        (
            ["kubernetes", "--spec", KUBERNETES, "--from-ibnetdiscover", "/dev/zero"],
            "/dev/zero: larger than the input cap of 64 MiB",
        ),
        (
            ["kubernetes", "--spec", KUBERNETES, "--from-ibnetdiscover", "/dev/zero"]
            + ["--max-mb", "2"],
            "/dev/zero: larger than the input cap of 2 MiB",
        ),
        (["kubernetes", "--spec", "/dev/zero"], SPEC_CAP),
        (["check", "--plan", "--spec", "/dev/zero"], SPEC_CAP),
    ],
    ids=lambda value: " ".join(value) if isinstance(value, list) else "",
)
def test_dev_zero_is_refused_at_the_cap(argv: list[str], message: str) -> None:
    done = run(*argv)
    assert done.returncode == 2 and done.stdout == "", done.stderr
    assert message in one_line(done, argv[0])


def test_dev_zero_on_stdin_is_refused_at_the_cap() -> None:
    with open("/dev/zero", "rb") as zero:
        done = run(
            "kubernetes", "--spec", KUBERNETES, "--from-ibnetdiscover", "-", stdin=zero.fileno()
        )
    assert done.returncode == 2
    assert "stdin: larger than the input cap of 64 MiB" in one_line(done, "kubernetes")


def test_validate_refuses_dev_zero_naming_the_cap() -> None:
    """validate lists spec problems itself (exit 1), the size cap among them."""
    done = run("validate", "--spec", "/dev/zero")
    assert done.returncode == 1 and SPEC_CAP in done.stdout
    assert "Traceback" not in done.stderr


def test_ctrl_c_interrupts_a_read(tmp_path: Path) -> None:
    """A FIFO fed slowly and forever: the command is inside the read when SIGINT comes, and
    stops with exit 130 and one line (a read of an endless device used to ignore Ctrl-C)."""
    fifo = tmp_path / "fabric.txt"
    os.mkfifo(fifo)
    written = threading.Event()
    stop = threading.Event()

    def feed() -> None:
        try:
            with open(fifo, "wb") as out:  # opens once the command opens it to read
                while not stop.is_set():
                    out.write(b"x" * 65536)
                    out.flush()
                    written.set()
                    time.sleep(0.05)
        except (BrokenPipeError, OSError):
            pass

    feeder = threading.Thread(target=feed, daemon=True)
    feeder.start()
    proc = subprocess.Popen(
        [sys.executable, "-m", "fabric", "parse", "ibstat", str(fifo)],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_bounded,  # noqa: PLW1509 - no threads in the child before exec
    )
    try:
        assert written.wait(60), "the command never opened the FIFO"
        time.sleep(0.3)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        stop.set()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, err
    assert err.strip().endswith("interrupted") and err.count("\n") == 1, err


# -- the reader itself --------------------------------------------------------------------


def test_the_reader_never_allocates_the_cap_ahead(tmp_path: Path) -> None:
    """A small file read under the largest cap costs its size, not the cap (a whole-cap
    buffer was allocated before the read: --max-mb 30000 was a MemoryError)."""
    path = tmp_path / "small.txt"
    path.write_text("x\n" * 1000)
    tracemalloc.start()
    try:
        source = read_text(path, MAX_LIMIT_MIB)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert source.last_line == 1000 and peak < 4 * MIB, peak


@pytest.mark.parametrize("limit", [0, -1, MAX_LIMIT_MIB + 1, 30000, 10**20, True])
def test_the_reader_refuses_a_cap_out_of_range(tmp_path: Path, limit: int) -> None:
    path = tmp_path / "small.txt"
    path.write_text("x\n")
    with pytest.raises(InputError, match=r"--max-mb .*(above 0|largest input cap)"):
        read_text(path, limit)


# -- --max-mb and the other numeric flags -------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["parse", "ibstat", IBSTAT],
        ["import", CAPTURE],
        ["kubernetes", "--spec", KUBERNETES, "--from-ibnetdiscover", CAPTURE],
    ],
    ids=lambda argv: argv[0],
)
@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("0", "not a whole number of MiB above 0"),
        ("-1", "not a whole number of MiB above 0"),
        ("1.5", "not a whole number of MiB above 0"),
        (str(MAX_LIMIT_MIB + 1), f"is more than {MAX_LIMIT_MIB} MiB"),
        ("30000", f"is more than {MAX_LIMIT_MIB} MiB"),
        ("99999999999999999999", f"is more than {MAX_LIMIT_MIB} MiB"),
        ("9" * 5000, f"is more than {MAX_LIMIT_MIB} MiB"),
    ],
)
def test_max_mb_out_of_range_is_one_line(
    capsys: pytest.CaptureFixture[str], argv: list[str], value: str, says: str
) -> None:
    code = main([*argv, "--max-mb", value])
    out, err = capsys.readouterr()
    assert (code, out) == (2, "")
    assert "argument --max-mb: " in err and says in err and err.count("\n") == 1, err


def test_max_mb_at_the_largest_cap_is_read(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["parse", "ibstat", IBSTAT, "--max-mb", str(MAX_LIMIT_MIB)]) == 0
    assert '"ok": true' in capsys.readouterr().out


@pytest.mark.parametrize("value", ["30000", "99999999999999999999"])
def test_topology_max_mb_out_of_range_is_one_line(
    capsys: pytest.CaptureFixture[str], value: str
) -> None:
    """topology's own --max-mb reaches the reader, which refuses the cap itself."""
    code = main(["topology", "--from-ibnetdiscover", CAPTURE, "--max-mb", value])
    out, err = capsys.readouterr()
    assert (code, out) == (2, "")
    assert f"--max-mb {value}: more than {MAX_LIMIT_MIB} MiB" in err and err.count("\n") == 1


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        (["import", "--ssh", "gpu01", "--timeout", "-5"], "--timeout"),
        (["import", "--ssh", "gpu01", "--timeout", "0"], "--timeout"),
        (["import", "--ssh", "gpu01", "--timeout", "99999999999999999999"], "--timeout"),
        (["run", "site.yml", "--timeout", "-5"], "--timeout"),
        (["run", "site.yml", "--timeout", "86401"], "--timeout"),
        (["check", "-n", "0"], "-n/--workers"),
        (["check", "--workers", "-3"], "-n/--workers"),
        (["check", "-n", "65"], "-n/--workers"),
    ],
    ids=lambda value: " ".join(value) if isinstance(value, list) else value,
)
def test_numeric_flags_out_of_range_are_one_line(
    capsys: pytest.CaptureFixture[str], argv: list[str], flag: str
) -> None:
    code = main(argv)
    out, err = capsys.readouterr()
    assert (code, out) == (2, "")
    assert f"argument {flag}: " in err and err.count("\n") == 1 and "Traceback" not in err


@pytest.mark.parametrize("value", ["0", "-1", "65536", "99999", "http", "99999999999999999999"])
def test_port_number_refuses_what_is_no_tcp_port(value: str) -> None:
    import argparse

    with pytest.raises(argparse.ArgumentTypeError, match="port"):
        port_number(value)


def test_numbers_in_range_are_taken() -> None:
    assert (port_number("1"), port_number("65535"), seconds("1"), seconds("86400")) == (
        1,
        65535,
        1,
        86400,
    )
