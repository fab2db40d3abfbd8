"""The check suite's SSH socket folders: a run's leftover empty folder goes, nothing else."""

from __future__ import annotations

import os
import time
from pathlib import Path

from fabric.verify.checks.conftest import STALE_CONTROL_DIR_S, remove_stale_control_dirs


def test_only_old_empty_socket_folders_are_removed(tmp_path: Path) -> None:
    old = time.time() - STALE_CONTROL_DIR_S - 60
    stale, busy, fresh, other = (tmp_path / n for n in ("ry-cp-a", "ry-cp-b", "ry-cp-c", "x"))
    for folder in (stale, busy, fresh, other):
        folder.mkdir()
    (busy / "socket").write_text("")
    for folder in (stale, busy, other):
        os.utime(folder, (old, old))
    assert remove_stale_control_dirs(tmp_path) == [stale]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ry-cp-b", "ry-cp-c", "x"]
