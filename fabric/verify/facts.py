"""Tool outputs gathered on the nodes over SSH, parsed by ``fabric.parsers``, cached per run.

No false failures: every MAD tool runs under ``timeout`` and is judged only once it ran to its
end for reasons the fabric could cause. A run that failed for the harness's reasons (the
simulator's "Empty fd_data or fd_data_enqueue failed", a refused ibsim slot, the tool stopped
by its timeout or a signal, output no parser reads) or whose answer is a MAD timeout under
load is run again, at most ``TOOL_ATTEMPTS`` times; a tool that kept failing for the
harness's reasons is a ``HarnessError`` (reported as such, never as a port).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from fabric.model.ports import SIM_DEVICE, HcaPort
from fabric.parsers import PARSERS
from fabric.parsers.errors import ParseError
from fabric.parsers.ibstat import IbstatPort, IbstatReport
from fabric.parsers.smpquery import PortInfoReport
from fabric.topology.ibsim import simulated_device
from fabric.verify.plan import CheckPlan

Connect = Callable[[str], Any]

#: Runs of a MAD tool before its failure is judged (or reported as a harness error).
TOOL_ATTEMPTS = 3
#: The shell's bound on one MAD tool run on a host (s), and the pause before a rerun (s,
#: times the attempt).
TOOL_TIMEOUT_S = 30
TOOL_PAUSE_S = 0.5
#: Exit statuses of a tool that did not run to its end: stopped by ``timeout`` (124), not
#: runnable (126, 127), killed by a signal (128 + SIGABRT, SIGKILL, SIGSEGV, SIGTERM).
HARNESS_RCS = frozenset({124, 126, 127, 134, 137, 139, 143})
#: What a tool prints when the lab's simulator or its client library, not the fabric, failed
#: it (umad2sim, ibsim, the lab's umad shim).
HARNESS_SIGNS = (
    "Empty fd_data",
    "fd_data_enqueue failed",
    "can't open new connection",
    "sim_init:",
    "sim_ctl:",
    "umad2sim",
)


def harness_trouble(rc: int, text: str) -> str | None:
    """Why a tool run says nothing about the fabric (None when it ran to its end)."""
    if rc in HARNESS_RCS:
        last = (text.strip().splitlines() or ["no output"])[-1].strip()
        return f"exit {rc} (stopped or could not run): {last[:200]}"
    for line in text.splitlines():
        if any(sign in line for sign in HARNESS_SIGNS):
            return line.strip()[:200]
    return None


#: Seconds each subnet-manager query (saquery, smpquery) may take.
SM_TOOL_TIMEOUT = 30


def keep_255(command: str) -> str:
    """``command``, with its exit status 255 reported as 254.

    infiniband-diags tools exit 255 when a query fails (``sminfo``, ``ibping``, ``perfquery``),
    and testinfra's SSH backend takes 255 for a failed SSH connection and raises instead of
    returning the output; the check must see the tool's own failure text.
    """
    return f"{command}; rc=$?; [ $rc -ne 255 ] || rc=254; exit $rc"


T = TypeVar("T")
R = TypeVar("R")

#: Tool runs one check's facts make at once (threads, each its own SSH command). In the lab each
#: MAD tool is one of ibsim's 10 client slots, two of them the OpenSMs'.
AT_ONCE = 3


def at_once(work: Callable[[T], R], items: Sequence[T]) -> list[R]:
    """``[work(i) for i in items]``, up to :data:`AT_ONCE` at a time, in order; the first
    exception raised is raised."""
    if len(items) < 2:
        return [work(item) for item in items]
    with ThreadPoolExecutor(min(AT_ONCE, len(items))) as pool:
        return list(pool.map(work, items))


class Facts:
    """Runs each read-only tool at most once per host (or per port) and keeps the parse."""

    def __init__(self, plan: CheckPlan, connect: Connect) -> None:
        self.plan = plan
        self.connect = connect
        self._cache: dict[tuple[str, ...], Any] = {}

    def _once(self, key: tuple[str, ...], make: Callable[[], Any]) -> Any:
        if key not in self._cache:
            self._cache[key] = make()
        return self._cache[key]

    def output(self, host: str, command: str) -> tuple[int, str]:
        """Run ``command`` on ``host``; return (exit code, stdout + stderr)."""
        result = self.connect(host).run(keep_255(command))
        return result.rc, result.stdout + result.stderr

    def shell(self, host: str) -> Callable[[str], tuple[int, str, str]]:
        """A command on ``host`` over the check's SSH connection: (exit code, stdout, stderr),
        a tool's exit 255 kept apart from an SSH failure (:func:`keep_255`)."""

        def run(command: str) -> tuple[int, str, str]:
            result = self.connect(host).run(keep_255(command))
            return result.rc, result.stdout, result.stderr

        return run

    def parsed(self, host: str, tool: str, command: str) -> Any:
        """Run ``command`` on ``host`` once (retried as the module says) and parse its output
        as ``tool``; cached per host and command."""
        return self._once((host, command), lambda: self.judged(host, tool, command))

    def judged(
        self,
        host: str,
        tool: str,
        command: str,
        done: Callable[[Any], bool] = lambda report: bool(getattr(report, "ok", True)),
        attempts: int = TOOL_ATTEMPTS,
    ) -> Any:
        """``command``'s parsed output once it ran to its end and ``done(report)`` holds, or
        its last judgeable report when it never did in ``attempts`` runs (the check judges
        it: a MAD timeout every time is the fabric's); a ``HarnessError`` when no run could
        be judged."""
        last: Any = None
        why = "not run"
        for attempt in range(1, attempts + 1):
            rc, text = self.output(host, f"timeout {TOOL_TIMEOUT_S} {command}")
            trouble = harness_trouble(rc, text)
            if trouble is None:
                try:
                    last = PARSERS[tool](text)
                except ParseError as err:
                    trouble = f"unreadable output: {err}"
                else:
                    if done(last):
                        return last
            why = trouble or why
            if attempt < attempts:
                time.sleep(TOOL_PAUSE_S * attempt)
        if last is None:
            from fabric.verify.harness import HarnessError  # pytest's hook lives beside it

            raise HarnessError(
                f"{host}: {command.split()[0]} failed {attempts} times for reasons the fabric "
                f"did not cause: {why}"
            )
        return last

    def ibstat(self, host: str) -> IbstatReport:
        """``ibstat`` on ``host``."""
        return self.parsed(host, "ibstat", "ibstat")

    def port(self, want: HcaPort) -> tuple[str, IbstatPort] | None:
        """The (device name, ibstat port) of a declared HCA port, or None when absent.

        In the lab every simulated HCA is named ``ibsim0`` and stands for the node's first
        InfiniBand HCA (``fabric.topology.ibsim.simulated_device``), whatever its GUID (a
        replaced HCA has another); elsewhere the device is matched by name.
        """
        simulated = self.plan.simulated and want.device == simulated_device(
            self.plan.spec, want.host
        )
        for dev in self.ibstat(want.host).devices:
            if dev.name == want.device or (simulated and dev.name == SIM_DEVICE):
                for port in dev.ports:
                    if port.port == want.port:
                        return dev.name, port
        return None

    def lid(self, host: str) -> int | None:
        """Base LID of ``host``'s first active InfiniBand port."""
        for dev in self.ibstat(host).devices:
            for port in dev.ports:
                if port.link_layer == "InfiniBand" and port.base_lid:
                    return port.base_lid
        return None

    def port_guid(self, host: str) -> str | None:
        """Port GUID of ``host``'s first InfiniBand port."""
        for dev in self.ibstat(host).devices:
            for port in dev.ports:
                if port.link_layer == "InfiniBand":
                    return port.port_guid
        return None

    def neighbour_link(self, want: HcaPort) -> Any:
        """The iblinkinfo link (on the neighbouring switch) whose peer is this HCA port."""
        found = self.port(want)
        if found is None:
            return None
        device, port = found
        cmd = f"iblinkinfo -l -C {device} -P {want.port} -D 0,{want.port}"
        report = self.parsed(want.host, "iblinkinfo", cmd)
        for node in report.nodes:
            for link in node.links:
                if port.port_guid and link.peer_guid == port.port_guid:
                    return node.name.strip(), link
        return None

    def port_rate(self, want: HcaPort) -> tuple[float, str]:
        """(rate Gb/s, where it came from): ibstat, or PortInfo via iblinkinfo in the lab."""
        found = self.port(want)
        if found is None:
            return 0.0, "port not found"
        if not self.plan.simulated or want.link_layer != "InfiniBand":
            return float(found[1].rate_gbps), "ibstat"
        neighbour = self.neighbour_link(want)
        if neighbour is None or not neighbour[1].width or not neighbour[1].speed:
            return 0.0, "no active link in iblinkinfo"
        from fabric.graph import link_rate

        link = neighbour[1]
        return link_rate(
            link.width.lower(), link.speed
        ), f"PortInfo {link.width}{link.speed} via iblinkinfo"

    def portinfo(self, want: HcaPort) -> PortInfoReport:
        """``smpquery portinfo`` of this HCA port (direct route 0: the local node)."""
        found = self.port(want)
        device = found[0] if found else want.device
        return self.parsed(
            want.host, "smpquery", f"smpquery -C {device} -P {want.port} -D portinfo 0 {want.port}"
        )

    def sminfo_at(self, observer: str, lid: int) -> Any:
        """``sminfo <lid>``: the SMInfo an SM port answers, queried from ``observer``."""
        return self.parsed(observer, "sminfo", f"sminfo {lid}")

    def sminfo(self, host: str) -> Any:
        """``sminfo``: the master SM as ``host`` sees it."""
        return self.parsed(host, "sminfo", "sminfo")

    def sm_ports(self, observer: str) -> Any:
        """``saquery -s`` from ``observer``: every port with the IsSM bit, as the SA lists them."""
        return self.parsed(observer, "saquery", f"timeout {SM_TOOL_TIMEOUT} saquery -s")

    def node_at(self, observer: str, lid: int) -> tuple[Any, Any]:
        """(``smpquery nodeinfo``, ``smpquery nodedesc``) of the node at ``lid``."""
        t = SM_TOOL_TIMEOUT
        return (
            self.parsed(observer, "smpquery", f"timeout {t} smpquery nodeinfo {lid}"),
            self.parsed(observer, "smpquery", f"timeout {t} smpquery nodedesc {lid}"),
        )

    def seen_sms(self, observer: str) -> Any:
        """Every port with the IsSM bit as ``fabric.verify.sm.SeenSm`` (its SMInfo and its
        node's identity), and the master ``sminfo`` names: in the lab the SA once listed the
        other IsSM ports but not the master's own (an external OpenSM beside ibsim, every
        check of it otherwise passing). A failed ``saquery`` (no SA: no master) raises
        RuntimeError."""

        def run() -> Any:
            ports = self.sm_ports(observer)
            if not ports.ok:
                raise RuntimeError(f"saquery -s on {observer}: {ports.reason}")
            master = self.sminfo(observer)
            lids = [*ports.sm_lids, *([master.sm_lid] if master.ok and master.sm_lid else [])]
            return self._seen_at(observer, list(dict.fromkeys(lids)))

        return self._once(("seen_sms", observer), run)

    def sm_candidates(self, observer: str) -> Any:
        """The ports a declared SM may answer on, as ``SeenSm``: the IsSM ports the SA lists
        when it answers, the master ``sminfo`` names, and each managed SM host's own port (the
        lab's SA has left a live standby's port out of ``saquery -s``). Unlike
        :meth:`seen_sms` a silent SA raises nothing: a stopped SM is then judged by its own
        port's (missing) SMInfo answer."""
        from fabric.verify.harness import HarnessError

        def run() -> Any:
            lids: list[int] = []
            try:
                ports = self.sm_ports(observer)
                lids += ports.sm_lids if ports.ok else []
            except HarnessError:
                pass  # judged below through each SM's own port
            try:
                master = self.sminfo(observer)
                lids += [master.sm_lid] if master.ok and master.sm_lid else []
            except HarnessError:
                pass  # no master named: each SM is judged by its own port

            def own_lid(host: str) -> int | None:
                try:
                    return self.lid(host)
                except HarnessError:
                    return None

            lids += [lid for lid in at_once(own_lid, sorted(self.plan.sm_hosts)) if lid]
            return self._seen_at(observer, list(dict.fromkeys(lids)))

        return self._once(("sm_candidates", observer), run)

    def _seen_at(self, observer: str, lids: list[int]) -> list[Any]:
        """The ``SeenSm`` of each SM port at ``lids`` (its SMInfo, node info and description),
        asked from ``observer`` a few at a time."""
        from fabric.verify.sm import seen_sm

        def one(lid: int) -> Any:
            return seen_sm(lid, self.sminfo_at(observer, lid), *self.node_at(observer, lid))

        return at_once(one, lids)

    def seen_master(self, observer: str) -> Any:
        """The master SM ``sminfo`` names from ``observer``, as a ``SeenSm``; a failed
        ``sminfo`` raises RuntimeError."""
        from fabric.verify.sm import seen_sm

        info = self.sminfo(observer)
        if not info.ok or info.sm_lid is None:
            raise RuntimeError(f"sminfo on {observer}: {info.reason or 'no master SM named'}")
        return seen_sm(info.sm_lid, info, *self.node_at(observer, info.sm_lid))

    def host_guids(self, hosts: list[str]) -> dict[str, str | None]:
        """Host -> the port GUID of its first InfiniBand port (ibstat), None when unread."""
        out: dict[str, str | None] = {}
        for host in hosts:
            try:
                out[host] = self.port_guid(host)
            except Exception:  # noqa: BLE001 - an unreachable host: recognised by description
                out[host] = None
        return out

    def discovered(self) -> Any:
        """The fabric ``ibnetdiscover`` finds from the discovery host, as a FabricGraph."""
        host = self.plan.discovery_host
        if host is None:
            raise RuntimeError("no SM host selected to run ibnetdiscover on")

        def run() -> Any:
            from fabric.verify.routing import read_fabric
            from fabric.verify.sweep import shell_runner

            try:
                return read_fabric(shell_runner(self.shell(host)), timeout_s=TOOL_TIMEOUT_S)
            except RuntimeError as err:
                raise RuntimeError(f"on {host}: {err}") from None

        return self._once(("discovered",), run)
