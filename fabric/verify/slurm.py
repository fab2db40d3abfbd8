"""Slurm command output readers (``sinfo -h -N -o '%N %T'``, ``scontrol show topology``)."""

from __future__ import annotations


def parse_sinfo_states(text: str) -> dict[str, str]:
    """Node -> state from ``sinfo -h -N -o '%N %T'`` (a node in two partitions appears twice)."""
    states: dict[str, str] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 2:
            states.setdefault(parts[0], parts[1].lower())
    return states


def parse_show_topology(text: str) -> dict[str, dict[str, str]]:
    """SwitchName -> its ``Key=Value`` fields from ``scontrol show topology``."""
    switches: dict[str, dict[str, str]] = {}
    for line in text.splitlines():
        fields = dict(tok.split("=", 1) for tok in line.split() if "=" in tok)
        if "SwitchName" in fields:
            switches[fields["SwitchName"]] = fields
    return switches
