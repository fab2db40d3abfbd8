"""A playbook run on the controller itself through ``fabric.handoff.runner.run_playbook``: a
stack ``t`` whose inventory is one local host, with ``out`` (a file the play may write) set."""

from __future__ import annotations

from pathlib import Path


def local_stack(tmp_path: Path, playbook: str) -> tuple[Path, Path]:
    """Write stack ``t``'s inventory under ``tmp_path/state`` and ``playbook`` to a file; return
    (playbook file, the ``out`` file the play is told about)."""
    (tmp_path / "state" / "t").mkdir(parents=True)
    out = tmp_path / "seen.txt"
    (tmp_path / "state" / "t" / "inventory.yml").write_text(
        "all:\n  hosts:\n    a: {}\n  vars:\n    ansible_connection: local\n"
        '    ansible_python_interpreter: "{{ ansible_playbook_python }}"\n'
        f"    out: {out}\n"
    )
    book = tmp_path / "book.yml"
    book.write_text(playbook)
    return book, out
