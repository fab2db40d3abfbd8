"""Judging NCCL: did it use the declared network, with GPUDirect RDMA, at the expected bandwidth?

Plain functions over parsed output (:mod:`fabric.parsers.nccl`, :mod:`fabric.parsers.nccl_tests`)
and the catalog's targets (:mod:`fabric.catalog`); the checks (``checks/test_nccl.py``) and the
local harness (:mod:`fabric.verify.nccl_run`) call them. A verdict names every problem found,
each with its cause, so a Socket fallback reads as "no RDMA device visible to NCCL", not as a
low number.

:func:`locate` bisects a failing multi-node run to the slow nodes (or rails): a pure function
over the results of the subsets run so far, which says which subsets to run next;
:func:`bisect` is the driver that runs them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field

from fabric.catalog import BusBwTarget
from fabric.parsers.nccl import NcclLog
from fabric.parsers.nccl_tests import NcclTestsReport

#: NCCL's InfiniBand-verbs transport (IB and RoCE), built in or from the SHARP plugin
#: (``IBext``, ``IBext_v6`` ...).
IB_NETWORKS = ("IB", "IBext")

#: What NCCL must report per fabric kind (and GCP transport): the network names it may choose.
#: GCP's plugins name themselves: GPUDirect-TCPX ``GPUDirectTCPX``, TCPXO ``FasTrak``, A3 Ultra's
#: RoCE plugin ``gIB``; aws-ofi-nccl ``Libfabric`` (``AWS Libfabric`` in releases before 1.0).
GCP_NETWORKS = {
    "gpudirect-tcpx": ("GPUDirectTCPX",),
    "gpudirect-tcpxo": ("FasTrak",),
    "rdma-roce": ("gIB", *IB_NETWORKS),
}

#: The cause of a Socket fallback: what NCCL needs to use an RDMA device.
NO_RDMA_DEVICE = (
    "NET/IB : No device found: no RDMA device visible to NCCL (rdma-core/libibverbs, the HCA "
    "driver (mlx5_ib), or the container's /dev/infiniband)"
)


@dataclass(frozen=True)
class NetworkExpectation:
    """What NCCL's log must show for the declared fabric."""

    fabric: str
    networks: tuple[str, ...]
    link_layer: str | None = None  # "IB" or "RoCE" for the verbs transport
    gdr: bool = False  # GPUDirect RDMA required on every HCA NCCL uses
    provider: str | None = None  # aws-ofi-nccl's libfabric provider
    hcas: tuple[str, ...] = ()  # the declared RDMA devices NCCL must use
    plugin_version: str | None = None  # the declared aws-ofi-nccl release (aws.ofi_nccl_version)

    @property
    def label(self) -> str:
        """How messages name what was expected."""
        what = "/".join(self.networks)
        if self.link_layer:
            what += f" over {self.link_layer}"
        if self.gdr:
            what += " with GPUDirect RDMA"
        if self.provider:
            what += f" (provider {self.provider})"
        return what


def expectation(
    kind: str,
    *,
    transport: str | None = None,
    gdr: bool = True,
    hcas: Iterable[str] = (),
    plugin_version: str | None = None,
) -> NetworkExpectation:
    """The network NCCL must use on a fabric of ``kind`` (``fabric.kind`` of the spec); for GCP
    the catalog's ``transport``; ``gdr`` False where the spec turned GPUDirect RDMA off;
    ``plugin_version`` the aws-ofi-nccl release an EFA node must load."""
    hcas = tuple(hcas)
    if kind == "infiniband":
        return NetworkExpectation(kind, IB_NETWORKS, "IB", gdr, hcas=hcas)
    if kind == "roce":
        return NetworkExpectation(kind, IB_NETWORKS, "RoCE", gdr, hcas=hcas)
    if kind == "efa":
        return NetworkExpectation(
            kind, ("Libfabric", "AWS"), provider="efa", gdr=False, plugin_version=plugin_version
        )
    if kind == "gcp-gpudirect":
        return NetworkExpectation(kind, GCP_NETWORKS.get(transport or "", ("GPUDirectTCPX",)))
    raise ValueError(f"no NCCL network is defined for fabric.kind {kind!r}")


@dataclass
class Verdict:
    """The judgement of one NCCL run: ``ok`` only when ``problems`` is empty."""

    ok: bool
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    network: str | None = None
    busbw: float | None = None
    min_busbw: float | None = None
    algorithm: str | None = None

    def summary(self) -> str:
        """One line: PASS or FAIL, the network, the bandwidth against its floor, the first
        problem."""
        head = "PASS" if self.ok else "FAIL"
        bw = f"busbw {self.busbw:g} GB/s" if self.busbw is not None else "no busbw"
        if self.min_busbw is not None:
            bw += f" (floor {self.min_busbw:g}, {self.algorithm})"
        parts = [head, f"network {self.network or 'unknown'}", bw]
        if self.problems:
            parts.append(self.problems[0])
        return "; ".join(parts)

    def as_dict(self) -> dict[str, object]:
        """JSON-ready."""
        return asdict(self)


def chosen_network(log: NcclLog) -> str | None:
    """The network NCCL chose: its ``Using network`` line, or for releases that print none
    (before 2.12), Socket when IB found no device and sockets were set up."""
    if log.networks:
        return log.networks[-1]
    if log.ib_no_device and log.socket_devices:
        return "Socket"
    if log.ib_devices:
        return "IB"
    return None


def _matches(network: str, accepted: Sequence[str]) -> bool:
    return any(network == name or network.startswith(name) for name in accepted)


#: The NET plugin each plugin-carried fabric needs, as the fix names it.
PLUGINS = {
    "efa": "aws-ofi-nccl (libnccl-net.so from the EFA installer, /opt/amazon/ofi-nccl/lib)",
    "gcp-gpudirect": "GCP's NCCL net plugin (gIB for RDMA, GPUDirect-TCPX/TCPXO: libnccl-net.so)",
}


def _env_cause(log: NcclLog, kind: str | None) -> str | None:
    """A variable NCCL says was ``set by environment`` that turns the expected network off."""
    ib = log.env.get("NCCL_IB_DISABLE")
    if ib is not None and ib not in ("0", "") and kind in ("infiniband", "roce", None):
        return (
            f"NCCL_IB_DISABLE set by environment to {ib}: NCCL was told not to use "
            "InfiniBand/RoCE (unset it in the job's environment, container or /etc/nccl.conf)"
        )
    return None


def _plugin_cause(log: NcclLog, kind: str) -> str:
    """Why a fabric carried by a NET plugin (EFA, GCP) ran on sockets: NCCL's own words."""
    plugin = PLUGINS[kind]
    failed = [w for w in log.warnings if w.startswith(("NET/OFI", "NET/GPUDirectTCPX", "NET/gIB"))]
    failed = [w for w in failed if "fail" in w.lower()] or failed
    if failed:
        return f"the NET plugin failed to initialize ({failed[-1]}): {plugin}"
    if log.net_plugins_missing:
        return (
            f"NET/Plugin: could not find {', '.join(log.net_plugins_missing)}: {plugin} is not "
            "installed, or not on LD_LIBRARY_PATH (NCCL_NET_PLUGIN names another file)"
        )
    return f"NCCL loaded no NET plugin (its log shows none): {plugin}"


def fallback_cause(log: NcclLog, expect: NetworkExpectation | None = None) -> str:
    """Why NCCL used Socket rather than the fabric's transport, read from NCCL's own lines: a
    variable set by environment, the fabric's NET plugin not found or failed (EFA, GCP), no
    RDMA device, libibverbs missing. ``expect`` None: an InfiniBand/RoCE reading."""
    kind = expect.fabric if expect else None
    if cause := _env_cause(log, kind):
        return cause
    if kind in PLUGINS:
        return _plugin_cause(log, kind)
    if log.ib_no_device:
        return NO_RDMA_DEVICE
    libverbs = next((w for w in log.warnings if "libibverbs" in w), None)
    if libverbs:
        return f"NCCL could not load libibverbs ({libverbs}): install rdma-core"
    if "IB" in log.plugins_failed:
        return "NCCL's IB transport failed to initialize (see its NET/IB lines)"
    return "NCCL chose Socket, and its log says no why (NCCL_DEBUG_SUBSYS needs INIT,NET,ENV)"


#: libmlx5's dma-buf registration: without it (rdma-core before the MLX5_1.25 symbols) NCCL
#: has no dma-buf path to GPU memory, and needs nvidia-peermem for GPUDirect RDMA.
DMABUF_SYMBOL = "mlx5dv_reg_dmabuf_mr"


def gdr_off_cause(log: NcclLog) -> str:
    """What to fix when NCCL reports GPU Direct RDMA disabled: its ``dlvsym failed`` line first."""
    if DMABUF_SYMBOL in log.missing_symbols:
        return (
            f"rdma-core is too old for dma-buf (dlvsym failed on {DMABUF_SYMBOL}): upgrade "
            "rdma-core/libmlx5, or load nvidia-peermem; and check that ACS is off and the NIC "
            "shares a PCIe switch with its GPU"
        )
    return (
        "load nvidia-peermem (or a DMA-BUF capable driver and kernel), and check that ACS is "
        "off and the NIC shares a PCIe switch with its GPU"
    )


def judge_network(log: NcclLog, expect: NetworkExpectation) -> list[str]:
    """Every way the log departs from ``expect``: the wrong network (a Socket fallback with
    its cause), the wrong link layer, an HCA not used, GPUDirect RDMA off, the wrong provider."""
    network = chosen_network(log)
    if network is None:
        return ["the log names no network (run with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET)"]
    if network == "Socket" and "Socket" not in expect.networks:
        return [
            f"NCCL fell back to TCP sockets instead of {expect.label}: "
            f"{fallback_cause(log, expect)}"
        ]
    if not _matches(network, expect.networks):
        return [f"NCCL used network {network}, not {expect.label}"]
    problems: list[str] = []
    if expect.link_layer:
        wrong = [d.name for d in log.ib_devices if d.link_layer != expect.link_layer]
        if wrong:
            problems.append(f"{', '.join(wrong)} run over the wrong link layer for {expect.label}")
        used = {d.name for d in log.ib_devices}
        missing = [h for h in expect.hcas if h not in used]
        if missing and used:
            problems.append(
                f"NCCL does not use {', '.join(missing)} (it uses {', '.join(sorted(used))}): "
                "NCCL_IB_HCA, or the port down"
            )
    if expect.gdr:
        off = [g.name or f"HCA {g.index}" for g in log.gdr if g.net != "Socket" and not g.enabled]
        plain = [c for c in log.channels if c.net in ("IB", "IBext") and not c.gdr]
        if off:
            problems.append(f"GPU Direct RDMA disabled for {', '.join(off)}: {gdr_off_cause(log)}")
        elif plain and not any(c.gdr for c in log.channels):
            problems.append(
                "network channels run without GDRDMA (via NET/IB/N, not NET/IB/N/GDRDMA): "
                "GPUDirect RDMA is not in use"
            )
    if expect.provider and log.ofi_provider and log.ofi_provider != expect.provider:
        problems.append(f"aws-ofi-nccl selected provider {log.ofi_provider}, not {expect.provider}")
    problems += plugin_version_problems(log, expect.plugin_version)
    return problems


def plugin_version_problems(log: NcclLog, declared: str | None) -> list[str]:
    """The aws-ofi-nccl release NCCL loaded (``1.9.1-aws``: the release, then AWS's build tag)
    against the declared one; a log without the plugin's version line is a problem too, since
    the plugin always prints it at NCCL_DEBUG=INFO."""
    if not declared:
        return []
    got = log.ofi_nccl_version
    if got is None:
        return [
            f"the log shows no aws-ofi-nccl version (declared {declared}, aws.ofi_nccl_version): "
            "NCCL did not load the plugin (NCCL_NET_PLUGIN, LD_LIBRARY_PATH /opt/amazon/ofi-nccl)"
        ]
    release = re.match(r"v?(\d+(?:\.\d+)*)", got)
    if release and release.group(1) == declared:
        return []
    return [
        f"NCCL loaded aws-ofi-nccl {got}, declared {declared} (aws.ofi_nccl_version): install "
        "the EFA installer or AMI that carries it, or declare the one in use"
    ]


def judge_table(report: NcclTestsReport, target: BusBwTarget | None) -> tuple[list[str], list[str]]:
    """(problems, notes) of an nccl-tests table: wrong results, the tool's own failure, and
    the peak bus bandwidth against ``target`` (None: reported, not judged)."""
    problems: list[str] = []
    notes: list[str] = []
    if not report.ok:
        problems.append(f"nccl-tests failed: {report.reason}")
    if report.wrong:
        problems.append(f"{report.wrong} wrong elements: results corrupted in transit")
    if report.out_of_bounds:
        problems.append(f"{report.out_of_bounds} out-of-bounds values")
    if not report.rows:
        problems.append("nccl-tests printed no result row")
        return problems, notes
    peak = report.peak_busbw
    if peak is not None and not math.isfinite(peak):  # no bandwidth: the harness failed
        problems.append(
            f"peak busbw {peak} GB/s is not a measurement (a zero or failed timing): a harness "
            "error, not a pass; rerun nccl-tests"
        )
        return problems, notes
    if target is None:
        notes.append(f"peak busbw {peak} GB/s: no cited floor for this hardware, not judged")
    elif peak is None or peak < target.min_busbw:
        largest = max(r.size for r in report.rows)
        problems.append(
            f"peak busbw {peak} GB/s below {target.min_busbw:g} GB/s ({target.algorithm}, "
            f"{target.source}); largest message {largest} B"
            + (f", read the floor at {target.size}" if largest < _bytes(target.size) else "")
        )
    return problems, notes


@dataclass(frozen=True)
class RunShape:
    """What the job asked for: ``nodes`` hosts and ``ranks`` ranks in all (one per GPU)."""

    nodes: int
    ranks: int


def judge_shape(report: NcclTestsReport, shape: RunShape | None) -> list[str]:
    """A run that did not measure what was asked: fewer ranks or hosts in nccl-tests' header
    than the job launched, or bus bandwidth 0 on a run of several ranks. Each is a failure
    (the node set is not proven), and its cause is the launch, not the fabric: nccl-tests built
    without MPI (``MPI=1``) runs each process as its own one-rank job, and ``srun --mpi`` must
    match the MPI nccl-tests was built against."""
    if shape is None or shape.ranks <= 1:
        return []
    problems: list[str] = []
    ranks, hosts = report.rank_count, report.rank_hosts
    if report.ranks and (ranks < shape.ranks or len(hosts) < shape.nodes):
        alone = len(report.ranks) > ranks
        problems.append(
            f"nccl-tests reports {ranks} rank{'s' if ranks != 1 else ''} on {len(hosts)} "
            f"host{'s' if len(hosts) != 1 else ''} ({', '.join(hosts)}); the job asked for "
            f"{shape.ranks} ranks on {shape.nodes} nodes: "
            + (
                f"{len(report.ranks)} processes each ran alone (nccl-tests built without "
                "MPI=1, or srun --mpi not matching its MPI)"
                if alone
                else "ranks missing from the job (srun's tasks per node, or its GPUs)"
            )
            + "; the fabric was not measured (a launch problem, not the fabric's)"
        )
    peak = report.peak_busbw
    if peak is not None and math.isfinite(peak) and peak == 0:
        problems.append(
            f"busbw 0 GB/s on a {shape.ranks}-rank run: nothing crossed between ranks, "
            "the run measured nothing"
        )
    return problems


def _finite(value: float | None) -> bool:
    """A number JSON can carry (no NaN or Infinity)."""
    return value is not None and math.isfinite(value)


def _bytes(size: str) -> int:
    """``16G`` -> 17179869184 (nccl-tests' suffixes)."""
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(size[:-1]) * units[size[-1]] if size[-1:] in units else int(size)


def judge(
    log: NcclLog | None,
    report: NcclTestsReport | None,
    expect: NetworkExpectation | None,
    target: BusBwTarget | None,
    shape: RunShape | None = None,
) -> Verdict:
    """One verdict from an NCCL log (None: not captured) and an nccl-tests table; ``expect``
    None for a single-node run (NVLink: no network to judge, but a log still shows a
    fallback's cause as a note); ``shape`` the nodes and ranks the job asked for (a run of
    fewer, or at busbw 0 over several ranks, measured nothing: :func:`judge_shape`)."""
    problems: list[str] = []
    notes: list[str] = []
    network = chosen_network(log) if log else None
    if log is not None and expect is not None:
        problems += judge_network(log, expect)
        if expect.gdr and not log.gdr and not log.channels and not problems:
            notes.append(
                "the log shows no GPU Direct RDMA line and no network channel: GPUDirect RDMA "
                "not confirmed (NCCL_DEBUG_SUBSYS needs INIT,NET)"
            )
    elif log is not None and network == "Socket":
        notes.append(f"NCCL's network is Socket: {fallback_cause(log)}")
    elif log is None and expect is not None:
        problems.append("no NCCL INFO log to judge the network by")
    if report is not None:
        problems += judge_shape(report, shape)
        more, extra = judge_table(report, target)
        problems += more
        notes += extra
    return Verdict(
        ok=not problems,
        problems=problems,
        notes=notes,
        network=network,
        busbw=report.peak_busbw if report and _finite(report.peak_busbw) else None,
        min_busbw=target.min_busbw if target else None,
        algorithm=target.algorithm if target else None,
    )


# --- bisection -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Finding:
    """Where a failing run's problem lies: ``slow`` items (nodes or rails), or when every half
    passes alone, the ``cut`` between two groups (the links joining them: a spine, an uplink)."""

    slow: tuple[str, ...] = ()
    cut: tuple[tuple[str, ...], tuple[str, ...]] | None = None
    runs: int = 0

    def describe(self, what: str = "node") -> str:
        """One sentence naming the culprit."""
        if self.slow:
            return f"slow {what}{'s' if len(self.slow) > 1 else ''}: {', '.join(self.slow)}"
        if self.cut:
            a, b = self.cut
            return (
                f"each half passes alone ({', '.join(a)} | {', '.join(b)}); together they fail: "
                "the links between them (uplinks, spines)"
            )
        return f"every {what} passes"


class Needed(Exception):
    """:func:`locate` needs these subsets' results before it can go on."""

    def __init__(self, subsets: list[frozenset[str]]) -> None:
        super().__init__(f"{len(subsets)} subsets to run")
        self.subsets = subsets


def _halves(group: Sequence[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    mid = (len(group) + 1) // 2
    return tuple(group[:mid]), tuple(group[mid:])


def locate(
    items: Sequence[str], results: Mapping[frozenset[str], bool], min_run: int = 2
) -> Finding:
    """The slow items of a failing run over ``items`` from the ``results`` (True: passed) of the
    subsets run so far; raises :class:`Needed` naming the subsets to run next.

    Each failing group is halved; a half smaller than ``min_run`` (two nodes for a multi-node
    all-reduce, one rail) runs with items already proven good added. A passing half clears
    its items; a failing half is searched further; a group whose halves both pass is a cut.
    """
    good: set[str] = set()
    for subset, passed in results.items():
        if passed:
            good |= subset
    slow: list[str] = []
    cut = None

    def padded(half: tuple[str, ...]) -> frozenset[str] | None:
        if len(half) >= min_run:
            return frozenset(half)
        helpers = sorted(good - set(half))[: min_run - len(half)]
        return frozenset(half) | set(helpers) if len(helpers) == min_run - len(half) else None

    def search(group: tuple[str, ...]) -> None:
        nonlocal cut
        if len(group) == 1:
            slow.extend(group)
            return
        halves = _halves(group)
        failed = False
        # halves that can run alone first: what they prove good lets a lone item run
        for half in sorted(halves, key=lambda h: len(h) < min_run):
            subset = padded(half)
            if subset is None:  # nothing proven good to run a lone item with
                slow.extend(half)
                failed = True
                continue
            if subset not in results:
                raise Needed([subset])
            if results[subset]:
                good.update(half)
            else:
                failed = True
                search(half)
        if not failed:
            cut = cut or halves

    whole = frozenset(items)
    if whole not in results:
        raise Needed([whole])
    if results[whole]:
        return Finding(runs=len(results))
    search(tuple(items))
    return Finding(slow=tuple(slow), cut=None if slow else cut, runs=len(results))


def bisect(
    items: Sequence[str], run: Callable[[list[str]], bool], min_run: int = 2, max_runs: int = 64
) -> Finding:
    """Run ``run`` (True: the subset passed) on the subsets :func:`locate` asks for until it
    names the slow items; at most ``max_runs`` runs."""
    results: dict[frozenset[str], bool] = {}
    while True:
        try:
            return locate(items, results, min_run)
        except Needed as need:
            for subset in need.subsets:
                if len(results) >= max_runs:
                    raise RuntimeError(
                        f"bisection needs more than {max_runs} runs over {len(items)} items"
                    ) from None
                ordered = [i for i in items if i in subset]
                results[subset] = run(ordered)
