"""site.yml lets the slurm role's wait skip exactly the nodes railyard's health check drained."""

from __future__ import annotations

import yaml

from fabric.state import REPO_ROOT
from fabric.verify.health import REASON_PREFIX


def test_site_passes_the_health_checks_drain_reason_to_the_slurm_wait() -> None:
    plays = yaml.safe_load((REPO_ROOT / "playbooks" / "site.yml").read_text())
    slurm = [
        role
        for play in plays
        for role in play.get("roles", [])
        if isinstance(role, dict) and role.get("role") == "slurm"
    ]
    assert len(slurm) == 1
    assert slurm[0]["vars"]["slurm_wait_skip_drain_reason"] == REASON_PREFIX
    resume = [play for play in plays if "resume.yml" in str(play.get("tasks", ""))]
    assert resume and plays.index(resume[0]) > plays.index(
        next(p for p in plays if slurm[0] in p.get("roles", []))
    ), "the play that resumes drained nodes must run after Slurm is up"
