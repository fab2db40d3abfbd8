"""Which declared subnet manager is expected to be master (the spec rules and the checks)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol


class _Sm(Protocol):
    @property
    def role(self) -> str | None: ...

    @property
    def priority(self) -> int: ...


def expected_master(sms: Sequence[_Sm]) -> int | None:
    """Index of the SM expected to be master: the one ``role: master``, else the one highest
    priority among those not ``role: standby``; None when that is not exactly one (the spec
    rules refuse it: OpenSM would then pick by port GUID)."""
    masters = [i for i, sm in enumerate(sms) if sm.role == "master"]
    if masters:
        return masters[0] if len(masters) == 1 else None
    open_ = [i for i, sm in enumerate(sms) if sm.role is None]
    if not open_:
        return None
    top = max(sms[i].priority for i in open_)
    best = [i for i in open_ if sms[i].priority == top]
    return best[0] if len(best) == 1 else None


__all__ = ["expected_master"]
