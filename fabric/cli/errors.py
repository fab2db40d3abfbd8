"""How every command fails: one set of exit codes, one error line, one JSON error shape.

A handler returns ``Exit.OK`` or ``Exit.FAILED`` (the thing checked is wrong) and raises
:class:`CommandError` when it cannot do its job; the project's own exceptions (a bad spec,
a hand-off or check context that is not there, tool output that does not parse, ...) may
simply propagate. :func:`fabric.cli.main` turns every one of them into :func:`fail`'s single
line, never a traceback. ``describe`` looks the exception classes up in ``sys.modules`` only,
so nothing heavy is imported to classify an error (``--help`` stays fast).
"""

from __future__ import annotations

import sys
from enum import IntEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable

    from fabric.parsers.text import Source

#: The command's name in every usage line, error line and hint: the ``railyard`` console
#: script (``python -m fabric`` runs the same entry point, ``fabric.__main__.main``).
PROG = "railyard"


class Exit(IntEnum):
    """The exit codes of every ``railyard`` command (see :data:`EXIT_CODES_HELP`)."""

    OK = 0
    FAILED = 1
    USAGE = 2
    NOT_MARKED = 3
    INTERRUPTED = 130


#: The exit-code table, shown by ``railyard --help`` and in README.md.
EXIT_CODES_HELP = """\
exit codes (the same for every command):
  0    ok
  1    what was checked is wrong: validate found problems in the spec, check had a
       failed check, run's playbook failed on a host, lab status found the lab
       unhealthy or not up, lab image could not build the image, lab fault: the lab
       refused the fault (nothing recorded)
  2    bad usage or input: a bad option or argument, a retired spelling (e.g.
       --from-spec: use --spec FILE), an unknown --stack, an unreadable or missing
       file, a spec with problems given to any command but validate, tool output that
       parse (or topology --from-ibnetdiscover) cannot read, a stack without an
       inventory, an unknown playbook
  3    check --mark-nodes: the checks ran, but a call to the Kubernetes API server
       failed, so not every node's taint is as the checks found it
  130  interrupted (Ctrl-C)

a cluster is named the same way everywhere: --spec FILE or --stack NAME.
errors: one line on stderr, "railyard COMMAND: error: WHAT; FIX". With --json
(every command) stdout always holds one JSON document: the result, or
{"error": "WHAT; FIX", "exit_code": N} (plus "problems" for a spec) instead of the line.
"""


class CommandError(Exception):
    """A command that cannot do its job: ``message`` names the file/field/line and the fix."""

    def __init__(
        self, message: str, code: Exit = Exit.USAGE, *, problems: list[dict[str, str]] | None = None
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.problems = problems


class UsageError(CommandError):
    """Bad command-line usage (argparse's errors): exit 2, with the parser's own prog."""

    def __init__(self, prog: str, message: str) -> None:
        super().__init__(f"{message}; see {prog} --help", Exit.USAGE)
        self.prog = prog


class RetiredSpelling(UsageError):
    """An older spelling of an option (``fabric.cli.options.RETIRED``): exit 2, one line
    naming the flag to use instead."""

    def __init__(self, prog: str, message: str) -> None:
        CommandError.__init__(self, message, Exit.USAGE)
        self.prog = prog


def one_line(text: str) -> str:
    """``text`` on one line: its lines joined with "; ", runs of blanks collapsed."""
    return "; ".join(" ".join(line.split()) for line in str(text).splitlines() if line.strip())


def fail(
    message: str,
    code: Exit | int,
    *,
    json_mode: bool,
    prog: str = PROG,
    problems: list[dict[str, str]] | None = None,
) -> int:
    """Report an error and return ``code``: one line on stderr, or under ``--json`` one JSON
    object on stdout (so stdout always parses as JSON). The only place errors are printed.
    An empty message prints nothing (stdout's reader went away)."""
    if not message:
        return int(code)
    from fabric.redact import redact

    message = redact(one_line(message))  # an error never quotes a secret (fabric.redact)
    if problems:
        problems = [{key: redact(str(text)) for key, text in item.items()} for item in problems]
    if json_mode:
        import json

        doc: dict[str, Any] = {"error": message, "exit_code": int(code)}
        if problems:
            doc["problems"] = problems
        try:
            emit(json.dumps(doc, indent=2))
            return int(code)
        except StdoutError as err:  # no stdout for the JSON: the line on stderr instead
            message, code = err.message, err.code
    print(f"{prog}: error: {message}", file=sys.stderr)
    return int(code)


def _unreadable(path: str | Path, err: OSError, fix: str) -> CommandError:
    return CommandError(f"cannot read {path}: {err.strerror or err}; {fix}")


def read_input(
    path: str, fix: str = "check the path", limit_mib: int = 0, raise_with: str = "--max-mb N"
) -> Source:
    """Tool output from a file (``-`` reads stdin), through the one bounded reader
    (:func:`fabric.parsers.text.read_text`); a CommandError (exit 2) if it is unreadable,
    binary, not UTF-8 or over ``limit_mib`` (0: the default cap; ``raise_with``: the option
    that raises it)."""
    from fabric.parsers.text import DEFAULT_LIMIT_MIB, InputError, read_text

    limit_mib = limit_mib or DEFAULT_LIMIT_MIB
    try:
        return read_text(path, limit_mib, raise_with)
    except OSError as err:
        raise _unreadable(path, err, fix) from err
    except InputError as err:
        raise CommandError(str(err)) from None


def _detach_stdout() -> None:
    """Point stdout at /dev/null: its reader is gone (``| head``), and the interpreter's last
    flush must not raise BrokenPipeError again."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, _raw_stdout().fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # no descriptor: captured in tests, or closed
        if _raw_stdout() is not None:
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - stdout for the process's rest


class StdoutError(CommandError):
    """stdout cannot be written (closed with ``>&-``, a full disk or ``/dev/full``): exit 2,
    reported on stderr. A reader that went away (``| head``) is no error: see :func:`emit`."""

    def __init__(self, err: OSError | None) -> None:
        why = "it is closed" if err is None else (err.strerror or str(err))
        super().__init__(
            f"cannot write the output to stdout: {why}; run it with stdout open and writable "
            "(a terminal, a pipe, or a file on a disk with room)"
        )


class _GuardedStdout:
    """What :func:`fabric.cli.main` puts in ``sys.stdout`` while a command runs: every write
    goes to the real stream; a failed write (or no stream: ``>&-``) raises StdoutError, so any
    ``print`` in any command fails as one error line, never a traceback."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        if self.stream is None:
            raise StdoutError(None)
        try:
            return int(self.stream.write(text))
        except BrokenPipeError:
            raise
        except OSError as err:
            raise StdoutError(err) from None

    def flush(self) -> None:
        if self.stream is None:
            return
        try:
            self.stream.flush()
        except BrokenPipeError:
            raise
        except OSError as err:
            raise StdoutError(err) from None

    def isatty(self) -> bool:
        return self.stream is not None and bool(self.stream.isatty())

    def __getattr__(self, name: str) -> Any:
        if self.stream is None:
            raise AttributeError(name)
        return getattr(self.stream, name)


def guard_stdout() -> Any:
    """Wrap ``sys.stdout`` in a guard (see :class:`_GuardedStdout`); return what it was, for
    :func:`unguard_stdout`."""
    original = sys.stdout
    if not isinstance(original, _GuardedStdout):
        sys.stdout = _GuardedStdout(original)  # type: ignore[assignment]
    return original


def finish_stdout(original: Any, *, quietly: bool = False) -> None:
    """Flush stdout's last buffered output and put back ``original``. Output that cannot be
    written raises StdoutError (``quietly``: when the command already failed, it is dropped
    and the first error is the one reported). After a failure stdout points at /dev/null, so
    the interpreter's own last flush is quiet."""
    try:
        if sys.stdout is not None:
            sys.stdout.flush()
    except BrokenPipeError:
        _detach_stdout()
    except OSError as err:  # StdoutError is a CommandError, not an OSError: one of each
        _detach_stdout()
        if not quietly:
            raise StdoutError(err) from None
    except StdoutError:
        _detach_stdout()
        if not quietly:
            raise
    finally:
        if isinstance(sys.stdout, _GuardedStdout):
            sys.stdout = original


def _raw_stdout() -> Any:
    """The real stdout stream behind the guard (None when closed)."""
    out = sys.stdout
    return out.stream if isinstance(out, _GuardedStdout) else out


def _to_stdout(write: Callable[[Any], None]) -> bool:
    """Run ``write`` on the real stdout stream. A reader that closed the pipe (``| head``)
    ends the output quietly and the command keeps its exit code; False then. A stdout that
    cannot be written (closed, full) raises StdoutError (exit 2)."""
    out = _raw_stdout()
    if out is None:
        raise StdoutError(None)
    try:
        write(out)
    except BrokenPipeError:
        _detach_stdout()
        return False
    except OSError as err:
        _detach_stdout()
        raise StdoutError(err) from None
    return True


def emit(text: str) -> bool:
    """Print ``text`` (and a newline) on stdout and flush it (:func:`_to_stdout`)."""

    def write(out: Any) -> None:
        out.write(text + "\n")
        out.flush()

    return _to_stdout(write)


def emit_bytes(data: bytes) -> bool:
    """:func:`emit` for text already encoded as UTF-8 (a 95 MB plan is not decoded again):
    written to stdout's byte buffer where it has one, else as text."""

    def write(out: Any) -> None:
        buffer = getattr(out, "buffer", None)
        if buffer is None:
            out.write(data.decode() + "\n")
        else:
            out.flush()  # what was written as text comes first
            buffer.write(data)
            buffer.write(b"\n")
            buffer.flush()
        out.flush()

    return _to_stdout(write)


def emit_json(doc: Any) -> bool:
    """:func:`emit` for a JSON document, written as it is encoded (a large result is never
    held as one string)."""
    import json

    return _to_stdout(lambda out: json.dump(doc, out, indent=2)) and emit("")


def whole_number(text: str, low: int, high: int, unit: str, why: str) -> int:
    """``text`` as a whole number from ``low`` to ``high`` (``unit``: what it counts; ``why``:
    the reason for ``high``), or an ArgumentTypeError (exit 2, one line naming the flag)."""
    import argparse

    digits = text.strip()
    if not (digits.isascii() and digits.isdecimal()):
        raise argparse.ArgumentTypeError(
            f"{text[:24]!r} is not a whole number of {unit} from {low} to {high}"
        )
    if len(digits.lstrip("0")) > len(str(high)) or int(digits) > high:  # no 5,000-digit int()
        raise argparse.ArgumentTypeError(
            f"{text[:24]!r} is more than {high} {unit}, the most allowed ({why}); pass at most "
            f"{high}"
        )
    if int(digits) < low:
        raise argparse.ArgumentTypeError(
            f"{text[:24]!r} is not a whole number of {unit} from {low} to {high}"
        )
    return int(digits)


def positive_mib(text: str) -> int:
    """An argparse ``type`` for ``--max-mb``: a whole number of MiB, 1 to the largest input
    cap (``fabric.parsers.text.MAX_LIMIT_MIB``; else exit 2)."""
    import argparse

    from fabric.parsers.text import MAX_LIMIT_MIB

    digits = text.strip()
    if not (digits.isascii() and digits.isdecimal()) or not digits.strip("0"):
        raise argparse.ArgumentTypeError(f"{text[:24]!r} is not a whole number of MiB above 0")
    return whole_number(
        text, 1, MAX_LIMIT_MIB, "MiB", "the largest input cap: a parse holds several times it"
    )


#: The longest wait a ``--timeout`` may ask for: a day (a playbook's default is four hours).
MAX_TIMEOUT_S = 86_400


def seconds(text: str) -> int:
    """An argparse ``type`` for ``--timeout``: 1 to MAX_TIMEOUT_S seconds (else exit 2)."""
    return whole_number(text, 1, MAX_TIMEOUT_S, "seconds", "a day")


def port_number(text: str) -> int:
    """An argparse ``type`` for ``--port``: a TCP port, 1 to 65535 (else exit 2)."""
    return whole_number(text, 1, 65_535, "port", "the largest TCP port")


def check_readable(path: str | Path, fix: str = "check the path") -> None:
    """Raise a CommandError (exit 2) unless ``path`` is a file that can be opened."""
    try:
        with open(path, "rb"):
            pass
    except OSError as err:
        raise _unreadable(path, err, fix) from err


def _spec_message(err: Any) -> tuple[str, list[dict[str, str]]]:
    """A SpecError as one line (its first problem, how many more, where to see them all)."""
    problems = [{"path": p.path, "message": p.message} for p in err.problems]
    source = getattr(err, "source", None)
    if not problems:
        return f"{source or 'the spec'}: not a valid spec", problems
    first = problems[0]
    where = (
        first["path"]
        if source is None or first["path"].startswith(source)
        else f"{source}: {first['path']}"
    )
    message = f"{where}: {first['message']}"
    if len(problems) > 1:
        more = len(problems) - 1
        message += (
            f" (and {more} more problem{'s' if more > 1 else ''}: "
            f"{PROG} validate --spec {source or 'FILE'} lists them all)"
        )
    return message, problems


#: The project's exceptions main() reports as one line: (module, class, exit code). A class is
#: looked up only in an already imported module: an exception cannot come from one not loaded.
KNOWN_ERRORS: tuple[tuple[str, str, Exit], ...] = (
    ("fabric.spec", "SpecError", Exit.USAGE),
    ("fabric.handoff.vars", "HandoffError", Exit.USAGE),
    ("fabric.verify.context", "ContextError", Exit.USAGE),
    ("fabric.parsers", "UnknownToolError", Exit.USAGE),
    ("fabric.parsers", "ParseError", Exit.USAGE),
    ("fabric.parsers.text", "InputError", Exit.USAGE),
    ("fabric.graph", "GraphError", Exit.USAGE),
    ("fabric.hostlist", "HostlistError", Exit.USAGE),
    ("fabric.lab.image", "ImageError", Exit.FAILED),
)


def describe(exc: BaseException) -> CommandError | None:
    """``exc`` as a CommandError if it is one of the project's errors, else None."""
    if isinstance(exc, CommandError):
        return exc
    if isinstance(exc, KeyboardInterrupt):
        return CommandError("interrupted", Exit.INTERRUPTED)
    if isinstance(exc, BrokenPipeError):  # stdout's reader went away (| head): a quiet exit
        _detach_stdout()
        return CommandError("", Exit.OK)
    for module, name, code in KNOWN_ERRORS:
        cls = getattr(sys.modules.get(module), name, None)
        if isinstance(cls, type) and isinstance(exc, cls):
            if name == "SpecError":
                message, problems = _spec_message(exc)
                return CommandError(message, code, problems=problems)
            return CommandError(str(exc), code)
    if isinstance(exc, OSError):
        target = exc.filename if exc.filename is not None else "a file"
        return CommandError(f"cannot access {target}: {exc.strerror or exc}", Exit.USAGE)
    return None


def require_stack(stack: str) -> None:
    """A CommandError (exit 2) naming the known stacks unless ``stack`` is one: this checkout
    has its ``Pulumi.<stack>.yaml`` or the state root a folder for it."""
    from fabric.state import REPO_ROOT, StateLayout, stack_file

    if stack_file(stack).is_file() or StateLayout(stack).dir.is_dir():
        return
    known = sorted(
        path.name.removeprefix("Pulumi.").removesuffix(".yaml")
        for path in REPO_ROOT.glob("Pulumi.*.yaml")
        if not path.name.endswith(".example.yaml")
    )
    raise CommandError(
        f"no stack named {stack!r} (no Pulumi.{stack}.yaml, no state); known stacks: "
        f"{', '.join(known) or 'none'}; pass one with --stack, or a spec file with --spec"
    )


def stack_name(text: str) -> str:
    """An argparse ``type`` for ``--stack``: a name StateLayout accepts (else exit 2)."""
    import argparse

    from fabric.state import StateLayout

    try:
        StateLayout(text, Path("."))
    except ValueError as err:
        raise argparse.ArgumentTypeError(
            f"{err}; use the name of a Pulumi stack, e.g. lab"
        ) from err
    return text
