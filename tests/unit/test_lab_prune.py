"""``_prune``: empty state directories go after their last file, and parallel deletes do not fail."""

from __future__ import annotations

from pathlib import Path

from fabric.targets.lab.dynamic_lab import _prune


def test_removes_empty_parents_up_to_and_including_root(tmp_path: Path) -> None:
    root = tmp_path / "state"
    leaf = root / "ssh" / "id_ed25519"
    leaf.parent.mkdir(parents=True)
    _prune(leaf, root)
    assert not root.exists() and tmp_path.exists()


def test_stops_at_a_directory_that_still_holds_files(tmp_path: Path) -> None:
    root = tmp_path / "state"
    (root / "ssh").mkdir(parents=True)
    (root / "inventory.yml").write_text("all: {}\n")
    _prune(root / "ssh" / "id_ed25519", root)
    assert not (root / "ssh").exists() and (root / "inventory.yml").exists()


def test_directory_removed_by_a_parallel_delete_is_not_an_error(tmp_path: Path) -> None:
    root = tmp_path / "state"
    _prune(root / "ssh" / "id_ed25519", root)  # neither directory exists any more
    assert not root.exists()
