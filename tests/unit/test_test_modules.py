"""Test modules have unique basenames: ``pytest tests roles`` (rootdir imports, no packages)
refuses to collect two modules of the same name ("import file mismatch")."""

from collections import Counter

from fabric.state import REPO_ROOT


def test_no_two_test_modules_share_a_basename() -> None:
    modules = [
        p
        for root in ("tests", "roles")
        for p in (REPO_ROOT / root).rglob("test_*.py")
        if "molecule" not in p.parts
    ]
    assert len(modules) > 100
    twice = sorted(n for n, c in Counter(p.name for p in modules).items() if c > 1)
    assert twice == [], f"rename one of each: {twice}"
