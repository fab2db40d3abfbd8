"""The last ``Snapshot`` as Prometheus metrics (prometheus_client), served or written to a
node_exporter textfile. Only the last snapshot is kept: memory stays bounded. Port counters
are exported raw, as monotonic ``_total`` counters (rates are PromQL's); the alert rules
over these metrics are ``monitoring/railyard-alerts.yml`` (docs/monitoring.md).

A source that could not be read (``Snapshot.errors``) sets ``railyard_watch_scrape_error``
for that source and leaves its own metrics out, so a harness error never looks like a cable
down or a failing check.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

from prometheus_client import CollectorRegistry, write_to_textfile
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from fabric.verify.counters import COUNTERS
from fabric.watch.collect import Snapshot
from fabric.watch.counters import PortReading

CABLE_LABELS = ["cable", "a", "b"]
#: The labels of a cable end's raw counters: the HCA port, the switch port it is cabled to,
#: and which of the two ends was read (``hca`` or ``switch``).
PORT_LABELS = ["host", "device", "port", "switch", "switch_port", "end"]
#: perfquery name -> (metric name without ``_total``, factor, help) of every raw counter
#: exported: the error counters under their ``fabric.verify.counters`` short names, and the
#: traffic counters (PortXmitData and PortRcvData count 4-octet words: times 4 for bytes).
PORT_COUNTERS: dict[str, tuple[str, int, str]] = {
    **{c.name: (f"railyard_port_{c.short}", 1, f"perfquery {c.name}") for c in COUNTERS},
    "PortXmitData": ("railyard_port_xmit_data_bytes", 4, "perfquery PortXmitData x 4 (octets)"),
    "PortRcvData": ("railyard_port_rcv_data_bytes", 4, "perfquery PortRcvData x 4 (octets)"),
    "PortXmitPkts": ("railyard_port_xmit_packets", 1, "perfquery PortXmitPkts"),
    "PortRcvPkts": ("railyard_port_rcv_packets", 1, "perfquery PortRcvPkts"),
}


class SnapshotCollector(Collector):
    """A prometheus_client collector over the last snapshot (thread-safe hand-over)."""

    def __init__(self, stack: str) -> None:
        self.stack = stack
        self._lock = threading.Lock()
        self._last: Snapshot | None = None
        self._scrapes = 0

    def update(self, snapshot: Snapshot) -> None:
        """Replace the snapshot the next collection reports."""
        with self._lock:
            self._last = snapshot
            self._scrapes += 1

    def collect(self) -> Iterator[Metric]:
        """Yield every metric of the last snapshot (nothing before the first one)."""
        with self._lock:
            snap, scrapes = self._last, self._scrapes
        if snap is None:
            return
        yield from snapshot_metrics(snap, self.stack, scrapes)


def _gauge(name: str, doc: str, labels: list[str]) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, doc, labels=["stack", *labels])


def snapshot_metrics(snap: Snapshot, stack: str, scrapes: int = 1) -> list[Metric]:
    """The metric families of one snapshot."""
    up = _gauge(
        "railyard_cable_up", "1 when the declared cable links its declared ports", CABLE_LABELS
    )
    ok = _gauge(
        "railyard_cable_as_declared",
        "1 when the cable is up at the declared width and speed",
        CABLE_LABELS,
    )
    rate = _gauge("railyard_cable_rate_gbps", "rate found (Gb/s), only while up", CABLE_LABELS)
    drate = _gauge("railyard_cable_declared_rate_gbps", "declared rate (Gb/s)", CABLE_LABELS)
    width = _gauge("railyard_cable_width_lanes", "width found (lanes), only while up", CABLE_LABELS)
    dwidth = _gauge("railyard_cable_declared_width_lanes", "declared width (lanes)", CABLE_LABELS)
    for c in snap.cables:
        values = [stack, c.cable, c.a, c.b]
        up.add_metric(values, float(c.up))
        ok.add_metric(values, float(c.as_declared))
        drate.add_metric(values, c.declared_rate_gbps)
        dwidth.add_metric(values, float(c.declared_width_lanes))
        if c.rate_gbps is not None:
            rate.add_metric(values, c.rate_gbps)
        if c.width_lanes is not None:
            width.add_metric(values, float(c.width_lanes))
    out: list[Metric] = [up, ok, rate, drate, width, dwidth]
    if snap.undeclared_cables is not None:
        extra = _gauge(
            "railyard_undeclared_cables", "cables found that the spec does not declare", []
        )
        extra.add_metric([stack], float(snap.undeclared_cables))
        out.append(extra)
    if snap.counter_deltas:
        over = _gauge(
            "railyard_cable_counter_over_threshold",
            "1 when a port counter at one end of the cable rose more than the spec's threshold "
            "since the previous scrape (fabric.verify.counters)",
            [*CABLE_LABELS, "end", "counter"],
        )
        for d in snap.counter_deltas:
            over.add_metric([stack, d.cable, d.a, d.b, d.end, d.counter], float(d.failing))
        out.append(over)
    out += port_counter_metrics(snap.port_counters, stack)
    if snap.master is not None:
        m = snap.master
        host = m.host or ""
        info = _gauge(
            "railyard_sm_master",
            "the master SM (1), by host, GUID and LID",
            ["host", "guid", "lid"],
        )
        info.add_metric([stack, host, m.guid, str(m.lid)], 1.0)
        prio = _gauge("railyard_sm_master_priority", "the master SM's priority (sminfo)", ["host"])
        prio.add_metric([stack, host], float(m.priority))
        out += [info, prio]
        if m.declared_priority is not None:
            dprio = _gauge(
                "railyard_sm_master_declared_priority", "the spec's priority of that SM", ["host"]
            )
            dprio.add_metric([stack, host], float(m.declared_priority))
            out.append(dprio)
    out += node_metrics(snap, stack)
    if snap.families:
        checks = _gauge(
            "railyard_check_family_checks",
            "checks of each family in the last fabric check report, by outcome",
            ["family", "outcome"],
        )
        fam_ok = _gauge(
            "railyard_check_family_ok", "1 when no check of the family failed", ["family"]
        )
        for f in snap.families:
            for outcome in ("passed", "failed", "error", "skipped"):
                checks.add_metric([stack, f.family, outcome], float(getattr(f, outcome)))
            fam_ok.add_metric([stack, f.family], float(f.failed == 0))
        out += [checks, fam_ok]
    if snap.report_time is not None:
        when = _gauge(
            "railyard_check_report_timestamp_seconds", "when the last report was written", []
        )
        when.add_metric([stack], snap.report_time)
        out.append(when)
    err = _gauge(
        "railyard_watch_scrape_error",
        "1 when a source could not be read (a harness error, not a fabric failure)",
        ["source"],
    )
    for source in snap.sources:
        err.add_metric([stack, source], float(source in snap.errors))
    seconds = _gauge("railyard_watch_scrape_duration_seconds", "how long the last scrape took", [])
    seconds.add_metric([stack], snap.seconds)
    taken = _gauge("railyard_watch_last_scrape_timestamp_seconds", "when the last scrape began", [])
    taken.add_metric([stack], snap.taken)
    count = _gauge("railyard_watch_scrapes", "scrapes since watch started", [])
    count.add_metric([stack], float(scrapes))
    return [*out, err, seconds, taken, count]


def node_metrics(snap: Snapshot, stack: str) -> list[Metric]:
    """Slurm's drains: every node's ``railyard_node_drained`` (0 or 1, whoever drained it) and,
    while railyard's health check has it drained, ``railyard_node_drained_by_railyard`` with
    the reason Slurm holds."""
    if "slurm" not in snap.sources or "slurm" in snap.errors:
        return []
    drained = _gauge("railyard_node_drained", "1 when Slurm has the node drained (any reason)",
                     ["node"])  # fmt: skip
    ours = _gauge(
        "railyard_node_drained_by_railyard",
        "1 while the node is drained with a reason railyard's health check wrote",
        ["node", "reason"],
    )
    for n in snap.nodes:
        drained.add_metric([stack, n.node], float(n.drained))
        if n.by_railyard:
            ours.add_metric([stack, n.node, n.reason], 1.0)
    return [drained, ours]


def port_counter_metrics(readings: list[PortReading], stack: str) -> list[Metric]:
    """Each cable end's raw counters as monotonic ``_total`` counters, one series per end:
    rates and increases are left to PromQL (``rate(railyard_port_symbol_errors_total[5m])``),
    as node_exporter's InfiniBand collector does, so a restart or a missed scrape loses
    nothing. A counter the port did not report is left out."""
    families: dict[str, CounterMetricFamily] = {}
    allowed = _gauge(
        "railyard_port_counter_allowed_per_minute",
        "the spec's threshold of each error counter at this cable end: rise allowed per "
        "minute (fabric.verify.counters; absent: not judged)",
        [*PORT_LABELS, "counter"],
    )
    for r in readings:
        values = [stack, r.host, r.device, str(r.port), r.switch, _port(r.switch_port), r.end]
        for short, limit in r.allowed.items():
            if limit is not None:
                allowed.add_metric([*values, short], float(limit))
        for counter, value in r.values.items():
            if counter not in PORT_COUNTERS:
                continue
            name, factor, doc = PORT_COUNTERS[counter]
            family = families.get(name)
            if family is None:
                family = CounterMetricFamily(
                    name, f"{doc}, at one end of a cable", labels=["stack", *PORT_LABELS]
                )
                families[name] = family
            family.add_metric(values, float(value * factor))
    out: list[Metric] = [
        families[name] for name, _, _ in PORT_COUNTERS.values() if name in families
    ]
    return [*out, allowed] if readings else out


def _port(port: int | None) -> str:
    return "" if port is None else str(port)


def registry_for(collector: SnapshotCollector) -> CollectorRegistry:
    """A registry of its own holding only ``collector`` (no process or GC metrics)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)
    return registry


def write_textfile(path: Path, registry: CollectorRegistry) -> None:
    """Write the registry for node_exporter's textfile collector, atomically (a temporary
    file in the same directory, then rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_to_textfile(str(path), registry)
