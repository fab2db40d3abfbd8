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


def test_day2_check_reports_go_with_the_handoff(tmp_path: Path) -> None:
    """rolling-driver-upgrade.yml's per-node check reports; the suite's own reports stay (the
    verification step removes those)."""
    base = tmp_path / "lab"
    upgrade = base / "reports" / "upgrade-gpu03"
    upgrade.mkdir(parents=True)
    (upgrade / "junit.xml").write_text("<testsuites/>")
    (base / "reports" / "junit.xml").write_text("<testsuites/>")
    removed = remove_handoff_files("lab", tmp_path)
    assert [p.relative_to(base).as_posix() for p in removed] == ["reports/upgrade-gpu03/junit.xml"]
    assert sorted(p.relative_to(base).as_posix() for p in base.rglob("*")) == [
        "reports",
        "reports/junit.xml",
    ]
    (base / "reports" / "junit.xml").unlink()
    upgrade.mkdir()
    remove_handoff_files("lab", tmp_path)
    assert not (base / "reports").exists()
