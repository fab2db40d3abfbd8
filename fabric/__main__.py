"""Entry point of the ``railyard`` command (``[project.scripts]``) and of ``python -m fabric``.

One shortcut before the CLI: ``topology --from-ibnetdiscover FILE``, exactly that, with FILE a
regular file of plain ASCII text, goes straight to the compiled topology.conf writer
(``fabric.parsers.ibnetdiscover.tree.compiled_tree_conf``) without loading argparse, the CLI,
``pathlib`` or ``typing`` (0.013 s of the command's 0.046 s on a 2,048-host capture before it).
Every other command line, and any file the shortcut does not take (stdin, unreadable, a FIFO or
pipe, not ASCII, a NUL byte, larger than ``FAST_MAX_BYTES``, or text the writer declines), runs
through ``fabric.cli.main`` exactly as without it: the shortcut has written nothing then, so
every message and exit code has one source. A closed stdout and Ctrl-C are reported through
``fabric.cli.errors``, as the CLI reports them.
"""

import sys

#: The largest file the shortcut reads (a 16,384-host capture is about 55 MB): the CLI's default
#: ``--max-mb`` cap (a test keeps them equal); a larger one goes through the CLI, which refuses
#: it at once unless ``--max-mb`` raises the cap.
FAST_MAX_BYTES = 64 * 1024 * 1024


def fast_topology(argv: list[str]) -> int | None:
    """Write topology.conf for ``topology --from-ibnetdiscover FILE`` and return 0 when the
    compiled writer takes FILE's text; None, with nothing written, for anything else."""
    if len(argv) != 3 or argv[:2] != ["topology", "--from-ibnetdiscover"]:
        return None
    path = argv[2]
    if not path or path.startswith("-") or sys.stdout is None:
        return None  # stdin, an option where FILE should be, or no stdout: the CLI's cases
    try:
        conf = _compiled_conf(path)
        if conf is None:
            return None
        sys.stdout.write(conf)
        sys.stdout.flush()
    except (OSError, KeyboardInterrupt) as exc:  # reported as the CLI reports them
        from fabric.cli import PROG
        from fabric.cli.errors import StdoutError, describe, fail

        if isinstance(exc, OSError) and not isinstance(exc, BrokenPipeError):
            exc = StdoutError(exc)  # a full disk or /dev/full: the one line, exit 2
            _drop_stdout()
        error = describe(exc)
        if error is None:  # pragma: no cover - describe knows both
            raise
        return fail(error.message, error.code, json_mode=False, prog=f"{PROG} topology")
    return 0


def _drop_stdout() -> None:
    """Point stdout's descriptor at /dev/null: what is left in its buffer is dropped, and the
    interpreter's last flush does not fail again."""
    import os

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def _compiled_conf(path: str) -> str | None:
    """The compiled writer's topology.conf of the file ``path``, or None: a file the CLI must
    read (unreadable, not a regular file, too large, changed while read, not ASCII, a NUL
    byte) or text the writer declines."""
    import os
    import stat

    try:
        info = os.stat(path)  # before any open: a FIFO or pipe can be read only once
        if not stat.S_ISREG(info.st_mode) or info.st_size > FAST_MAX_BYTES:
            return None
        with open(path, "rb", buffering=0) as handle:
            data = handle.read(info.st_size + 1)
    except OSError:
        return None  # the CLI names the file and the reason
    if len(data) != info.st_size or not data.isascii() or b"\0" in data:
        return None
    from fabric.parsers.ibnetdiscover.tree import compiled_tree_conf

    return compiled_tree_conf(data.decode("ascii"))


def main() -> int:
    """Run the command line in ``sys.argv``: the shortcut when it takes it, else the CLI."""
    code = fast_topology(sys.argv[1:])
    if code is None:
        from fabric.cli import main as cli_main

        code = cli_main()
    return code


if __name__ == "__main__":
    sys.exit(main())
