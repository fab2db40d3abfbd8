"""Slurm's node states as ``fabric watch`` reads them: ``scontrol show node -o`` on the Slurm
controller, one line per node, and which drains railyard's health check wrote (a reason
starting ``railyard:``, ``fabric.verify.health.REASON_PREFIX``)."""

from __future__ import annotations

import re

from pydantic import BaseModel

from fabric.verify.health import REASON_PREFIX

#: The command, read-only, run on the controller.
COMMAND = "scontrol show node -o"

_NAME = re.compile(r"^NodeName=(\S+)")
_STATE = re.compile(r"\bState=(\S+)")
#: The reason up to slurmctld's ``[user@time]`` stamp, as the health program reads it.
_REASON = re.compile(r"\bReason=(.*?)(?: \[[^\]]*\])?(?= \w+=|$)")


class NodeSample(BaseModel):
    """One Slurm node: its state (``IDLE``, ``UNKNOWN+DRAIN``, ...) and drain reason."""

    node: str
    state: str
    reason: str = ""

    @property
    def drained(self) -> bool:
        """Drained or draining, whoever drained it."""
        return "DRAIN" in self.state

    @property
    def by_railyard(self) -> bool:
        """Drained by railyard's health check (only those it resumes)."""
        return self.drained and self.reason.startswith(REASON_PREFIX)


def parse_nodes(text: str) -> list[NodeSample]:
    """``scontrol show node -o`` -> one sample per node; raises ValueError on a line that is
    not a node's (scontrol's error text, a cut-short line)."""
    out = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        name, state = _NAME.match(line), _STATE.search(line)
        if name is None or state is None:
            raise ValueError(
                f"{COMMAND}: line {number} is not a node's (NodeName=... State=...): "
                f"{line.strip()[:120]!r}"
            )
        reason = _REASON.search(line)
        out.append(NodeSample(node=name[1], state=state[1], reason=reason[1] if reason else ""))
    return out
