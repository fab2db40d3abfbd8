"""The hand-off's own files are removed with it (so `make down` leaves nothing)."""

from pathlib import Path

from fabric.handoff.runner import HANDOFF_FILES, remove_handoff_files


def test_remove_handoff_files_deletes_what_the_handoff_wrote(tmp_path: Path) -> None:
    base = tmp_path / "lab"
    (base / "inventory.yml").parent.mkdir(parents=True)
    (base / "inventory.yml").write_text("all: {}\n")
    for rel in HANDOFF_FILES:
        (base / rel).parent.mkdir(parents=True, exist_ok=True)
        (base / rel).write_text("x")
    removed = remove_handoff_files("lab", tmp_path)
    assert sorted(p.relative_to(base).as_posix() for p in removed) == sorted(HANDOFF_FILES)
    assert sorted(p.relative_to(base).as_posix() for p in base.rglob("*")) == ["inventory.yml"]
