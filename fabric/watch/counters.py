"""Each declared cable end's raw port counters per scrape of ``fabric watch`` (exported as
``_total`` counters, ``fabric.watch.metrics``), and their rises between two scrapes.

Each scrape reads both ends of every declared InfiniBand cable (``CheckPlan.counter_ports``)
with ``perfquery`` (parsed by ``fabric.parsers.perfquery``, extended counters where the port
reports its error counters in them), the HCA end on its host and the switch end through it,
as the health program does (the check suite's counters are the fabric sweep's). The rise since the previous scrape is judged by
``fabric.verify.counters.judge`` against the spec's thresholds. Only the previous reading of
each end is kept, so memory is bounded by the number of declared cables.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, NamedTuple

from pydantic import BaseModel

from fabric.verify import counters
from fabric.verify.facts import Facts, keep_255
from fabric.verify.plan import CheckPlan, HcaPort

#: The bound on one perfquery call (s).
CALL_TIMEOUT = 10.0
#: Hosts read at the same time.
WORKERS = 8

Run = Callable[[str, str, float], tuple[int, str]]


class CounterDelta(BaseModel):
    """One counter's rise at one end of a cable since the previous scrape."""

    cable: str
    a: str
    b: str
    end: str
    counter: str
    increase: int
    allowed: int | None
    failing: bool


class PortReading(BaseModel):
    """One cable end's raw counters as perfquery read them (perfquery names -> value): the
    HCA port ``host``/``device``/``port``, cabled to ``switch`` port ``switch_port``; ``end``
    says which end was read (``hca`` or ``switch``); ``allowed``: the spec's thresholds for
    the cable (short name -> rise allowed per minute, None: not judged)."""

    host: str
    device: str
    port: int
    switch: str
    switch_port: int | None
    end: str
    values: dict[str, int]
    allowed: dict[str, int | None] = {}


class Scrape(NamedTuple):
    """One scrape's counters: the rises since the previous scrape, the raw readings, and
    one message per end that could not be read."""

    deltas: list[CounterDelta]
    readings: list[PortReading]
    errors: list[str]


class _Result(NamedTuple):
    rc: int
    stdout: str
    stderr: str


class _Host:
    """A testinfra-like host (``run``) over ``Run``, for ``Facts``."""

    def __init__(self, run: Run, name: str) -> None:
        self._run, self.name = run, name

    def run(self, command: str) -> _Result:
        rc, text = self._run(self.name, command, CALL_TIMEOUT)
        return _Result(rc, text, "")


def cable_of(port: HcaPort) -> tuple[str, str, str]:
    """(cable id, a, b) as ``fabric.watch.collect.cable_samples`` names the same cable."""
    a = f"{port.switch}/{port.switch_port}"
    b = f"{port.host}/{port.device}/{port.port}"
    return f"{a}-{b}", a, b


def read(run: Run, host: str, address: str) -> dict[str, int]:
    """One port's counters (perfquery names -> value); raises RuntimeError when unreadable."""
    return counters.read_port(lambda cmd: run(host, keep_255(cmd), CALL_TIMEOUT), host, address)


class CounterWatch:
    """Reads every declared cable's two ends per scrape; keeps only the previous reading."""

    def __init__(self, plan: CheckPlan) -> None:
        self.plan = plan
        self.previous: dict[tuple[str, str], tuple[float, dict[str, int]]] = {}

    def _ends(self, facts: Facts, port: HcaPort) -> list[tuple[str, str]]:
        found = facts.port(port)
        if found is None:
            return []  # the port is gone: the cable metrics say so, no counters to read
        neighbour = facts.neighbour_link(port)
        local = f"-C {found[0]} -P {port.port}"
        ends = [(f"{port.host}/{port.device}/{port.port}", local)]
        if neighbour is not None:
            ends.insert(0, (f"{port.switch}/{port.switch_port}", f"{local} {neighbour[1].lid} "
                            f"{neighbour[1].port}"))  # fmt: skip
        return ends

    def _read_host(
        self, facts: Facts, run: Run, ports: list[HcaPort]
    ) -> list[tuple[HcaPort, str, float, dict[str, int]] | str]:
        """Both ends of each of one host's cables: readings, or what could not be read."""
        out: list[tuple[HcaPort, str, float, dict[str, int]] | str] = []
        for port in ports:
            cable = cable_of(port)[0]
            try:
                ends = self._ends(facts, port)
            except (RuntimeError, ValueError) as exc:
                out.append(f"{cable}: {exc}")
                continue
            for end, address in ends:
                try:
                    out.append((port, end, time.monotonic(), read(run, port.host, address)))
                except (RuntimeError, ValueError) as exc:
                    out.append(f"{cable} {end}: {exc}")
        return out

    def scrape(self, run: Run) -> Scrape:
        """The deltas since the previous scrape, this scrape's readings and what could not be
        read.

        Hosts are read in parallel (``WORKERS`` at a time), each host's cables in turn."""
        facts = Facts(self.plan, lambda host: _Host(run, host))
        by_host: dict[str, list[HcaPort]] = {}
        for port in self.plan.counter_ports:
            by_host.setdefault(port.host, []).append(port)
        pool = ThreadPoolExecutor(max_workers=max(1, min(WORKERS, len(by_host))))
        try:
            found = [
                r
                for rs in pool.map(lambda ps: self._read_host(facts, run, ps), by_host.values())
                for r in rs
            ]
        finally:
            pool.shutdown(wait=False, cancel_futures=True)
        deltas: list[CounterDelta] = []
        readings: list[PortReading] = []
        errors: list[str] = []
        overrides = self.plan.spec.health.counters.model_dump(exclude_none=True)
        seen: set[tuple[str, str]] = set()
        for item in found:
            if isinstance(item, str):
                errors.append(item)
                continue
            port, end, now, values = item
            cable, a, b = cable_of(port)
            key = (cable, end)
            seen.add(key)
            limits = counters.thresholds(port.rate_gbps, overrides)
            readings.append(_reading(port, end, values, limits))
            before = self.previous.get(key)
            self.previous[key] = (now, values)
            if before is not None:
                deltas += _deltas(cable, a, b, end, before, (now, values), limits)
        for key in set(self.previous) - seen:
            del self.previous[key]  # an end not read this time starts afresh
        return Scrape(deltas, readings, errors)


def _reading(
    port: HcaPort, end: str, values: dict[str, int], limits: dict[str, int | None]
) -> PortReading:
    return PortReading(
        host=port.host,
        device=port.device,
        port=port.port,
        switch=port.switch or "",
        switch_port=port.switch_port,
        end="hca" if end == f"{port.host}/{port.device}/{port.port}" else "switch",
        values=values,
        allowed=limits,
    )


def _deltas(
    cable: str,
    a: str,
    b: str,
    end: str,
    before: tuple[float, dict[str, int]],
    after: tuple[float, dict[str, int]],
    limits: dict[str, Any],
) -> list[CounterDelta]:
    seconds = after[0] - before[0]
    breaches = {x.counter: x for x in counters.judge(before[1], after[1], seconds, limits)}
    out = []
    for counter in counters.COUNTERS:
        if counter.name not in before[1] or counter.name not in after[1]:
            continue
        old, new = before[1][counter.name], after[1][counter.name]
        breach = breaches.get(counter.name)
        out.append(
            CounterDelta(
                cable=cable,
                a=a,
                b=b,
                end=end,
                counter=counter.name,
                increase=new - old if new >= old else new,
                allowed=counters.allowed_in(limits.get(counter.short), seconds),
                failing=bool(breach and breach.failing),
            )
        )
    return out
