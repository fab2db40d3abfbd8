"""Fold ansible-runner events into progress lines, per-host counts and a failure report.

Progress is one line per play and one line per task, written when the task has finished on
every host: ``  <task>: changed gpu[01-08],ctl1; ok 2`` (host lists compressed, tasks
skipped everywhere left out), plus an immediate ``    FAILED: <host>: <message>`` line
per failure. ``PlaybookResult.summary()`` is the recap table and the failed tasks.

A pure consumer of event dicts (the ``job_events/*.json`` documents ansible-runner
writes and passes to ``event_handler``), so it is tested on recorded events without
running Ansible.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fabric.hostlist import compress
from fabric.topology.slurm import natural_key

#: How much of a failed task's message the summary keeps.
MESSAGE_LIMIT = 300


@dataclass
class HostCounts:
    """Task results of one host, as the PLAY RECAP counts them."""

    ok: int = 0
    changed: int = 0
    failed: int = 0
    unreachable: int = 0
    skipped: int = 0


@dataclass(frozen=True)
class TaskFailure:
    """One failed (or unreachable) task on one host."""

    host: str
    play: str
    task: str
    message: str
    unreachable: bool = False


@dataclass(frozen=True)
class PlaybookResult:
    """The outcome of one playbook run."""

    playbook: str
    status: str
    rc: int
    hosts: dict[str, HostCounts]
    failures: list[TaskFailure]
    artifacts: Path

    @property
    def ok(self) -> bool:
        """True when the run succeeded and no host failed or was unreachable."""
        return self.rc == 0 and self.status == "successful" and not self.failures

    def recap(self) -> str:
        """The per-host counts as a small table. A host on which every task was skipped (the
        control node when an opt-in play of it is off) is left out: nothing ran there."""
        hosts = {
            h: c
            for h, c in self.hosts.items()
            if c.ok or c.changed or c.failed or c.unreachable or not c.skipped
        }
        if not hosts:
            return "no hosts ran"
        width = max(len(h) for h in hosts)
        head = f"{'host'.ljust(width)}  ok  changed  failed  unreachable  skipped"
        rows = [
            f"{h.ljust(width)}  {c.ok:>2}  {c.changed:>7}  {c.failed:>6}  {c.unreachable:>11}  {c.skipped:>7}"
            for h, c in sorted(hosts.items())
        ]
        return "\n".join([head, *rows])

    def summary(self) -> str:
        """A short report: verdict, counts, failed hosts and tasks, where the artifacts are."""
        verdict = "succeeded" if self.ok else f"FAILED (status {self.status}, rc {self.rc})"
        lines = [f"{self.playbook}: {verdict}", self.recap()]
        if self.failures:
            lines.append("failed tasks:")
            for f in self.failures:
                what = "unreachable" if f.unreachable else "failed"
                lines.append(f"  {f.host}: [{f.play}] {f.task} {what}: {f.message}")
        lines.append(f"artifacts: {self.artifacts}")
        return "\n".join(lines)


def _hosts(hosts: list[str]) -> str:
    """A host list as Slurm writes it (gpu[01-08],ctl1); names compress() refuses stay as is."""
    hosts = sorted(hosts, key=natural_key)
    try:
        return compress(hosts)
    except ValueError:
        return ",".join(hosts)


def _message(res: Mapping[str, Any]) -> str:
    """The useful part of a failed task's result, one line, bounded."""
    parts = []
    for key in ("msg", "stderr", "stdout", "reason"):
        value = res.get(key)
        if isinstance(value, str) and value.strip():
            parts.append(value.strip())
            break
    if not parts and res.get("results"):
        for item in res["results"]:
            if isinstance(item, Mapping) and item.get("failed"):
                parts.append(_message(item))
                break
    text = " ".join(" ".join(parts).split()) or "no message"
    return text if len(text) <= MESSAGE_LIMIT else text[: MESSAGE_LIMIT - 1] + "…"


@dataclass
class EventSummary:
    """Consume ansible-runner events; emit progress lines through ``emit``."""

    emit: Callable[[str], None] = lambda line: None
    hosts: dict[str, HostCounts] = field(default_factory=dict)
    failures: list[TaskFailure] = field(default_factory=list)
    _play: str = ""
    _task: str = ""
    _recap_seen: bool = False
    _task_hosts: dict[str, list[str]] = field(default_factory=dict)

    def _note(self, outcome: str, host: str) -> None:
        """Remember ``host``'s ``outcome`` for the task line."""
        hosts = self._task_hosts.setdefault(outcome, [])
        if host and host not in hosts:
            hosts.append(host)

    def _flush_task(self) -> None:
        """Emit the finished task's one line (nothing for a task skipped everywhere)."""
        tally, self._task_hosts = self._task_hosts, {}
        if not self._task or not any(
            tally.get(k) for k in ("changed", "ok", "failed", "unreachable")
        ):
            return
        parts = []
        for outcome in ("failed", "unreachable", "changed"):
            if tally.get(outcome):
                parts.append(f"{outcome} {_hosts(tally[outcome])}")
        if tally.get("ok"):
            parts.append(f"ok {len(tally['ok'])}")
        if tally.get("skipped"):
            parts.append(f"skipped {len(tally['skipped'])}")
        self.emit(f"  {self._task}: {'; '.join(parts)}")

    def _counts(self, host: str) -> HostCounts:
        return self.hosts.setdefault(host, HostCounts())

    def handle(self, event: Mapping[str, Any]) -> bool:
        """Fold one event in; return True (ansible-runner keeps the event)."""
        kind = event.get("event", "")
        data = event.get("event_data") or {}
        host = data.get("host") or ""
        if kind == "playbook_on_play_start":
            self._flush_task()
            self._task = ""
            self._play = data.get("play") or data.get("name") or ""
            self.emit(f"PLAY [{self._play}]")
        elif kind in ("playbook_on_task_start", "playbook_on_handler_task_start"):
            self._flush_task()
            name = data.get("task") or data.get("name") or ""
            self._task = f"HANDLER {name}" if kind == "playbook_on_handler_task_start" else name
        elif kind == "runner_on_ok" and not self._recap_seen:
            counts = self._counts(host)
            if (data.get("res") or {}).get("changed"):
                counts.changed += 1
                self._note("changed", host)
            else:
                counts.ok += 1
                self._note("ok", host)
        elif kind == "runner_on_skipped" and not self._recap_seen:
            self._counts(host).skipped += 1
            self._note("skipped", host)
        elif kind == "runner_on_failed" and not self._recap_seen:
            if data.get("ignore_errors"):
                self._counts(host).ok += 1
                self._note("ok", host)
            else:
                self._failed(host, data, unreachable=False)
        elif kind == "runner_on_unreachable" and not self._recap_seen:
            self._failed(host, data, unreachable=True)
        elif kind == "playbook_on_stats":
            self._flush_task()
            self._task = ""
            self._recap(data)
        return True

    def _failed(self, host: str, data: Mapping[str, Any], *, unreachable: bool) -> None:
        counts = self._counts(host)
        if unreachable:
            counts.unreachable += 1
        else:
            counts.failed += 1
        failure = TaskFailure(
            host=host,
            play=data.get("play") or self._play,
            task=data.get("task") or self._task,
            message=_message(data.get("res") or {}),
            unreachable=unreachable,
        )
        self.failures.append(failure)
        self._note("unreachable" if unreachable else "failed", host)
        self.emit(f"    {'UNREACHABLE' if unreachable else 'FAILED'}: {host}: {failure.message}")

    def _recap(self, data: Mapping[str, Any]) -> None:
        """Take Ansible's own PLAY RECAP counts, which are authoritative."""
        self._recap_seen = True
        keys = {
            "ok": "ok",
            "changed": "changed",
            "failures": "failed",
            "dark": "unreachable",
            "skipped": "skipped",
        }
        recap: dict[str, HostCounts] = {}
        for src, dst in keys.items():
            for h, n in (data.get(src) or {}).items():
                setattr(recap.setdefault(h, HostCounts()), dst, int(n))
        if recap:
            # Ansible's "ok" includes changed results; ours counts them apart.
            for c in recap.values():
                c.ok = max(c.ok - c.changed, 0)
            self.hosts = recap

    def result(self, playbook: str, status: str, rc: int, artifacts: Path) -> PlaybookResult:
        """The typed result of the run."""
        return PlaybookResult(
            playbook=playbook,
            status=status,
            rc=rc,
            hosts=dict(self.hosts),
            failures=list(self.failures),
            artifacts=artifacts,
        )
