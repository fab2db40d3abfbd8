"""README.md's tour as a test walks it: the lines of the block between ``<!-- tour -->`` and
``<!-- /tour -->``, each a ``railyard`` command and a comment saying what it shows.

A comment's ``exit N`` is the exit code the command must end with (0 when it names none) and
each ``"quoted"`` phrase must appear in its output. :func:`walk` runs the commands as a user
types them, on a lab of a test module's own: the README's node names become the lab's,
``--stack`` names the lab and ``check`` gets the lab's stack file (``--spec``), since that
lab's stack file is not in the checkout. A ``check`` is run again, as a user would, until it
gives the exit code the README promises or ``settle_s`` pass (a pulled cable is seen at
once; a restored one after OpenSM's next sweep).
"""

from __future__ import annotations

import re
import shlex
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from fabric.state import REPO_ROOT

README = REPO_ROOT / "README.md"
BEGIN, END = "<!-- tour -->", "<!-- /tour -->"


@dataclass(frozen=True)
class Step:
    """One line of the tour: the command, its exit code, the phrases its output shows."""

    argv: list[str]
    exit_code: int
    shows: list[str]
    line: str


def steps(readme: str) -> list[Step]:
    """The tour's steps, in order; ValueError when README.md has no tour block."""
    if BEGIN not in readme or END not in readme:
        raise ValueError(f"README.md has no {BEGIN} ... {END} block")
    block = readme.split(BEGIN, 1)[1].split(END, 1)[0]
    found = []
    for line in block.splitlines():
        if not line.startswith("railyard "):
            continue
        command, _, comment = line.partition("#")
        code = re.search(r"\bexit (\d+)", comment)
        found.append(
            Step(
                argv=shlex.split(command),
                exit_code=int(code[1]) if code else 0,
                shows=re.findall(r'"([^"]+)"', comment),
                line=line.strip(),
            )
        )
    if not found:
        raise ValueError("README.md's tour block has no railyard command")
    return found


@dataclass
class Ran:
    """What one step printed and how it ended."""

    step: Step
    argv: list[str]
    code: int
    out: str
    ok: bool  #: the exit code the README says, and every phrase it quotes (with the lab's names)

    def why(self) -> str:
        """What went wrong, for an assertion message."""
        return (
            f"{' '.join(self.argv)} exited {self.code}; README says: {self.step.line}\n"
            f"{self.out[-4000:]}"
        )


def walk(
    stack: str,
    stack_file: Path,
    names: dict[str, str],
    env: dict[str, str],
    settle_s: float = 120.0,
    readme: Path = README,
) -> list[Ran]:
    """Run every step of the tour on stack ``stack``; ``names``: README node -> lab node."""
    ran = []
    for step in steps(readme.read_text()):
        argv = [names.get(a, a) for a in step.argv]
        argv = [
            *argv,
            "--stack",
            stack,
            *(["--spec", str(stack_file)] if argv[1] == "check" else []),
        ]
        shows = [_rename(s, names) for s in step.shows]

        def run(argv: list[str] = argv) -> tuple[int, str]:
            proc = subprocess.run(
                [str(REPO_ROOT / ".venv" / "bin" / argv[0]), *argv[1:]],
                capture_output=True,
                text=True,
                cwd=REPO_ROOT,
                timeout=600,
                env={**env, "COLUMNS": "250"},
                check=False,
            )
            return proc.returncode, proc.stdout + proc.stderr

        def done(code: int, out: str, step: Step = step, shows: list[str] = shows) -> bool:
            return code == step.exit_code and all(s in out for s in shows)

        code, out = _until(run, done, settle_s if argv[1] == "check" else 0.0)
        ran.append(Ran(step, argv, code, out, done(code, out)))
        if not ran[-1].ok:
            break
    return ran


def _rename(text: str, names: dict[str, str]) -> str:
    for old, new in names.items():
        text = re.sub(rf"\b{re.escape(old)}\b", new, text)
    return text


def _until(
    run: Callable[[], tuple[int, str]], done: Callable[[int, str], bool], seconds: float
) -> tuple[int, str]:
    deadline = time.monotonic() + seconds
    while True:
        code, out = run()
        if done(code, out) or time.monotonic() > deadline:
            return code, out
        time.sleep(5)
