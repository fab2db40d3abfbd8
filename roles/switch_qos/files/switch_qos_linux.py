#!/usr/bin/python3
"""railyard switch_qos, linux switch OS: lossless RoCE QoS with iproute2 on a Linux switch
(switchdev/mlxsw as NVIDIA Spectrum switches run it, or a software bridge).

    switch_qos_linux.py apply SETTINGS.json   configure every port; print a JSON report
    switch_qos_linux.py show SETTINGS.json    print the live per-port state as JSON
    switch_qos_linux.py verify SETTINGS.json  exit 1 naming each port and value that differs

Per port: ``ip link`` MTU; a scheduler with three classes (CNP strict, RDMA with its share,
the rest) as ``tc qdisc ets`` where the kernel has ets, else ``htb`` classes; DSCP
classification by ``dcb app`` where the driver has DCB, else ``tc`` u32 filters on the DSCP;
ECN marking by ``tc qdisc red ... ecn`` on the RDMA class where the kernel has red; PFC by
``dcb pfc`` where the driver has DCB. What cannot be applied is reported as skipped or
unavailable with the reason, never as applied. Every command has a timeout.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

TIMEOUT = 20
#: Class minor numbers of the three traffic classes, for htb (1:10 ...) and ets bands (1:1 ...).
HTB = {"cnp": 10, "rdma": 20, "other": 30}
ETS = {"cnp": 1, "rdma": 2, "other": 3}
#: u32 filters (pref 10): one fixed handle per DSCP rule, so a re-run replaces, never adds:
#: 800::10 CNP and 800::20 RDMA, then 800::11.. / 800::21.. for a transition's old DSCPs.
FILTER_PRIO = "10"
FILTER_BASE = {"cnp": 0x10, "rdma": 0x20}
RED_HANDLE = "12:"
UNKNOWN_KIND = "Specified qdisc kind is unknown"


def run(*argv: str) -> subprocess.CompletedProcess[str]:
    """Run one command with a timeout; its output, never an exception for a failure."""
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT, check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        return subprocess.CompletedProcess(argv, 127, "", f"{argv[0]}: {error}")


def reason(proc: subprocess.CompletedProcess[str]) -> str:
    """The first line of a failed command's message."""
    text = (proc.stderr or proc.stdout).strip().splitlines()
    return text[0] if text else f"exit status {proc.returncode}"


def link_rate_mbit(port: str, fallback: int) -> int:
    """The port's speed (sysfs), else ``fallback``: what the scheduler's classes share."""
    try:
        speed = int(Path(f"/sys/class/net/{port}/speed").read_text().strip())
    except (OSError, ValueError):
        speed = -1
    return speed if speed > 0 else fallback


def dscp_rules(settings: dict[str, Any]) -> dict[str, tuple[int, str, int]]:
    """u32 handle -> (DSCP, traffic kind, priority): the spec's DSCPs, then a transition's."""
    out: dict[str, tuple[int, str, int]] = {}
    kinds = (
        ("rdma", settings["pfc_priority"], settings["rdma_dscp"], "transition_rdma_dscp"),
        ("cnp", settings["cnp_priority"], settings["cnp_dscp"], "transition_cnp_dscp"),
    )
    for kind, prio, dscp_now, transition in kinds:
        dscps = [dscp_now, *settings.get(transition, [])]
        for index, dscp in enumerate(dict.fromkeys(dscps)):
            out[f"800::{FILTER_BASE[kind] + index:x}"] = (dscp, kind, prio)
    return out


def filter_handles(port: str) -> list[str]:
    """Handles of the u32 rules railyard owns (pref 10 on the root qdisc)."""
    return list(filter_dscps(port))


def filter_dscps(port: str) -> dict[str, int | None]:
    """Handle -> the DSCP it matches, of the u32 rules railyard owns (pref 10 on the root
    qdisc); None for a rule matching something else."""
    proc = run("tc", "-j", "filter", "show", "dev", port, "parent", "1:")
    rules = json.loads(proc.stdout or "[]") if proc.returncode == 0 else []
    out: dict[str, int | None] = {}
    for rule in rules:
        options = rule.get("options", {})
        if rule.get("pref") != int(FILTER_PRIO) or not options.get("flowid"):
            continue
        match = options.get("match", {})
        dscp = int(match["value"], 16) >> 18 if match.get("mask") == "fc0000" else None
        out[options["fh"]] = dscp
    return out


def kernel_has_ets() -> tuple[bool, str]:
    """Whether this kernel has sch_ets, probed on a throwaway veth pair (touching no port):
    (answer, the kernel's message when not)."""
    probe = f"rysq{os.getpid() % 100000}"
    made = run("ip", "link", "add", probe, "type", "veth", "peer", "name", f"{probe}p")
    if made.returncode != 0:
        return False, f"cannot probe: {reason(made)}"
    try:
        proc = run("tc", "qdisc", "add", "dev", probe, "root", "ets", "bands", "2")
        return proc.returncode == 0, reason(proc)
    finally:
        run("ip", "link", "del", probe)


def root_qdisc(port: str) -> dict[str, Any]:
    proc = run("tc", "-j", "qdisc", "show", "dev", port)
    for qdisc in json.loads(proc.stdout or "[]") if proc.returncode == 0 else []:
        if qdisc.get("root"):
            return qdisc
    return {}


def snapshot(port: str) -> tuple[str, str, str, str]:
    """The port's configuration as the kernel reports it (no counters): MTU, qdiscs, classes,
    filters. ``apply`` reports a change exactly when this differs before and after."""
    mtu = Path(f"/sys/class/net/{port}/mtu").read_text().strip()
    return (
        mtu,
        run("tc", "qdisc", "show", "dev", port).stdout,
        run("tc", "class", "show", "dev", port).stdout,
        run("tc", "filter", "show", "dev", port).stdout,
    )


class Port:
    """One switch port and the report of what was applied, skipped or unavailable there."""

    def __init__(self, name: str, settings: dict[str, Any]) -> None:
        self.name = name
        self.s = settings
        self.report: dict[str, str] = {}
        self.failed = False

    def tc(self, *args: str) -> subprocess.CompletedProcess[str]:
        return run("tc", *args[:2], "dev", self.name, *args[2:])

    def must(self, what: str, proc: subprocess.CompletedProcess[str]) -> bool:
        if proc.returncode != 0:
            self.report[what] = f"failed: {reason(proc)}"
            self.failed = True
        return proc.returncode == 0

    def apply(self) -> None:
        self.mtu()
        scheduler = self.ets() or self.htb()
        if scheduler:
            self.classify(scheduler)
            self.ecn(scheduler)
        self.pfc()
        dog = self.s["pfc_watchdog"]
        self.report["pfc_watchdog"] = (
            "skipped: Linux DCB has no PFC watchdog; "
            f"wanted {dog['detection_ms']}/{dog['restore_ms']} ms, {dog['action']}"
            if dog["enabled"]
            else "off in the spec"
        )

    def mtu(self) -> None:
        wanted = str(self.s["mtu"])
        if Path(f"/sys/class/net/{self.name}/mtu").read_text().strip() != wanted:
            if not self.must("mtu", run("ip", "link", "set", "dev", self.name, "mtu", wanted)):
                return
        self.report["mtu"] = f"applied: {wanted}"

    def ets(self) -> dict[str, int] | None:
        """Three ETS bands: CNP strict, RDMA and the rest by quanta; None when no ets."""
        share = self.s["rdma_bandwidth_percent"]
        priomap = [
            str(
                ETS["cnp"] - 1
                if p == self.s["cnp_priority"]
                else ETS["rdma"] - 1
                if p == self.s["pfc_priority"]
                else ETS["other"] - 1
            )
            for p in range(16)
        ]
        args = ["bands", "3", "strict", "1", "quanta", str(share * 1500)]
        args += [str((100 - share) * 1500), "priomap", *priomap]
        has_ets, why = self.s["_ets"]
        if not has_ets:
            self.report["scheduler_ets"] = f"unavailable: this kernel has no sch_ets ({why})"
            return None
        current = root_qdisc(self.name)
        if current.get("kind") == "ets" and current.get("handle") == "1:":
            proc = self.tc("qdisc", "change", "root", "handle", "1:", "ets", *args)
        else:  # first time, or from the htb fallback: the root is replaced once
            self.tc("qdisc", "del", "root")
            proc = self.tc("qdisc", "add", "root", "handle", "1:", "ets", *args)
        if not self.must("scheduler", proc):
            return None
        self.report["scheduler"] = (
            f"applied: ets, CNP priority {self.s['cnp_priority']} strict, RDMA priority "
            f"{self.s['pfc_priority']} {share}%, rest {100 - share}%"
        )
        return ETS

    def htb(self) -> dict[str, int] | None:
        """The fallback: htb with a CNP class first (prio 0), RDMA with its share, the rest."""
        rate = link_rate_mbit(self.name, self.s["link_rate_mbit"])
        share = self.s["rdma_bandwidth_percent"]
        current = root_qdisc(self.name)
        options = current.get("options", {})
        if not (
            current.get("kind") == "htb"
            and current.get("handle") == "1:"
            and options.get("default") == f"0x{HTB['other']}"  # tc reads minors as hex
        ):
            proc = self.tc("qdisc", "replace", "root", "handle", "1:", "htb", "default", "30")
            if not self.must("scheduler", proc):
                return None
        top = f"{rate}mbit"
        classes = [
            ("1:", "1:1", rate, 0),
            ("1:1", f"1:{HTB['cnp']}", max(rate // 100, 1), 0),
            ("1:1", f"1:{HTB['rdma']}", rate * share // 100, 1),
            ("1:1", f"1:{HTB['other']}", rate * (100 - share) // 100, 2),
        ]
        for parent, classid, mbit, prio in classes:
            args = ["parent", parent, "classid", classid, "htb", "rate", f"{mbit}mbit"]
            args += ["ceil", top, "burst", "64k", "cburst", "64k", "quantum", "60000"]
            if classid != "1:1":
                args += ["prio", str(prio)]
            if not self.must("scheduler", self.tc("class", "replace", *args)):
                return None
        self.report["scheduler"] = (
            f"applied: htb fallback (no sch_ets), CNP priority {self.s['cnp_priority']} first, "
            f"RDMA priority {self.s['pfc_priority']} {share}% of {rate} Mb/s, rest {100 - share}%"
        )
        return HTB

    def classify(self, scheduler: dict[str, int]) -> None:
        if self.s["trust"] != "dscp":
            self.report["classification"] = (
                "skipped: trust pcp needs dcb app pcp-prio, which this driver lacks"
            )
            return
        rules = dscp_rules(self.s)
        dcb = run(
            "dcb", "app", "replace", "dev", self.name, "dscp-prio",
            *(f"{dscp}:{prio}" for dscp, _kind, prio in rules.values()),
        )  # fmt: skip
        # u32 keeps a rule's match when it is replaced (only its class changes): a handle
        # that now matches another DSCP is deleted and added again. New handles go first, so
        # a DSCP moving to another handle (a transition) is classified throughout.
        current = filter_dscps(self.name)
        order = sorted(rules, key=lambda h: (h in current, current.get(h) != rules[h][0]))
        for handle in order:
            dscp, kind, _prio = rules[handle]
            if handle in current and current[handle] != dscp:
                proc = self.tc(
                    "filter", "del", "parent", "1:", "protocol", "ip", "prio", FILTER_PRIO,
                    "handle", handle, "u32",
                )  # fmt: skip
                if not self.must("classification", proc):
                    return
            proc = self.tc(
                "filter", "replace", "parent", "1:", "protocol", "ip", "prio", FILTER_PRIO,
                "handle", handle, "u32", "match", "ip", "dsfield", hex(dscp << 2), "0xfc",
                "flowid", f"1:{scheduler[kind]}",
            )  # fmt: skip
            if not self.must("classification", proc):
                return
        for handle in set(filter_handles(self.name)) - set(rules):  # a transition's, now done
            proc = self.tc(
                "filter", "del", "parent", "1:", "protocol", "ip", "prio", FILTER_PRIO,
                "handle", handle, "u32",
            )  # fmt: skip
            if not self.must("classification", proc):
                return
        mapping = ", ".join(f"{d}->1:{scheduler[k]}" for d, k, _p in rules.values())
        self.report["classification"] = (
            f"applied: dcb app dscp-prio and tc u32 DSCP filters {mapping}"
            if dcb.returncode == 0
            else f"applied: tc u32 DSCP filters (dcb app: {reason(dcb)}) {mapping}"
        )

    def ecn(self, scheduler: dict[str, int]) -> None:
        if not self.s["ecn"]:
            self.report["ecn"] = "off in the spec"
            return
        low, high = self.s["ecn_min_threshold"], self.s["ecn_max_threshold"]
        burst = max((2 * low + high) // (3 * 1500), 1)
        proc = self.tc(
            "qdisc", "replace", "parent", f"1:{scheduler['rdma']}", "handle", RED_HANDLE,
            "red", "limit", str(4 * high), "min", str(low), "max", str(high),
            "avpkt", "1500", "burst", str(burst),
            "probability", str(self.s["ecn_probability"] / 100), "ecn",
        )  # fmt: skip
        if UNKNOWN_KIND in proc.stderr:
            self.report["ecn"] = (
                f"unavailable: this kernel has no sch_red ({UNKNOWN_KIND}); "
                f"ECN marking {low}-{high} bytes not applied"
            )
        elif self.must("ecn", proc):
            self.report["ecn"] = f"applied: red ecn {low}-{high} bytes"

    def pfc(self) -> None:
        prio = self.s["pfc_priority"]
        pairs = [f"{p}:{'on' if p == prio else 'off'}" for p in range(8)]
        # The headroom allowance for the cable's round trip, in bits (5 ns/m each way).
        rate = link_rate_mbit(self.name, self.s["link_rate_mbit"])
        delay = max(self.s["cable_length_m"] * rate // 100, 1)
        proc = run("dcb", "pfc", "set", "dev", self.name, "prio-pfc", *pairs, "delay", str(delay))
        self.report["pfc"] = (
            f"applied: dcb pfc on priority {prio}, delay {delay} bits"
            if proc.returncode == 0
            else f"skipped: dcb pfc: {reason(proc)} (driver without DCB)"
        )


_CLASS = re.compile(
    r"^class (?P<kind>\S+) (?P<id>\S+) (?:root|parent (?P<parent>\S+))(?P<rest>.*)$"
)
_SENT = re.compile(r"^\s*Sent (?P<bytes>\d+) bytes (?P<pkts>\d+) pkts? \(dropped (?P<drop>\d+)")


def classes(port: str) -> dict[str, dict[str, Any]]:
    """``tc -s class show``: per class its kind, parent, prio and counters."""
    out: dict[str, dict[str, Any]] = {}
    current: dict[str, Any] | None = None
    for line in run("tc", "-s", "class", "show", "dev", port).stdout.splitlines():
        if m := _CLASS.match(line):
            prio = re.search(r" prio (\d+)", m["rest"])
            current = out[m["id"]] = {
                "kind": m["kind"],
                "parent": m["parent"],
                "prio": int(prio.group(1)) if prio else None,
            }
        elif current is not None and (m := _SENT.match(line)):
            current |= {
                "bytes": int(m["bytes"]),
                "packets": int(m["pkts"]),
                "dropped": int(m["drop"]),
            }
    return out


def dscp_map(port: str) -> dict[int, str]:
    """DSCP -> class of the u32 filters on the root qdisc."""
    proc = run("tc", "-j", "filter", "show", "dev", port, "parent", "1:")
    out: dict[int, str] = {}
    for rule in json.loads(proc.stdout or "[]") if proc.returncode == 0 else []:
        options = rule.get("options", {})
        match = options.get("match", {})
        if options.get("flowid") and match.get("mask") == "fc0000" and match.get("off") == 0:
            out[int(match["value"], 16) >> 18] = options["flowid"]
    return out


def show(settings: dict[str, Any]) -> dict[str, Any]:
    """The live state of every port, with the class each priority maps to."""
    ports: dict[str, Any] = {}
    for name in settings["interfaces"]:
        root = root_qdisc(name)
        kind = root.get("kind")
        minors = ETS if kind == "ets" else HTB
        red = [q for q in json.loads(run("tc", "-j", "qdisc", "show", "dev", name).stdout or "[]")
               if q.get("kind") == "red"]  # fmt: skip
        pfc = run("dcb", "-j", "pfc", "show", "dev", name)
        ports[name] = {
            "mtu": int(Path(f"/sys/class/net/{name}/mtu").read_text()),
            "scheduler": kind,
            "class_of": {k: f"1:{v}" for k, v in minors.items()},
            "classes": classes(name),
            "dscp_map": dscp_map(name),
            "ecn": red[0].get("options", {}) if red else None,
            "pfc": json.loads(pfc.stdout) if pfc.returncode == 0 and pfc.stdout else None,
        }
    return ports


def verify(settings: dict[str, Any], state: dict[str, Any]) -> list[str]:
    """Each way the live state differs from the settings, one line naming port and values."""
    problems = []
    for name, port in state.items():
        if port["mtu"] != settings["mtu"]:
            problems.append(f"{name}: MTU {port['mtu']}, wanted {settings['mtu']}")
        if port["scheduler"] not in ("ets", "htb"):
            problems.append(f"{name}: root qdisc {port['scheduler']}, wanted ets or htb")
            continue
        if settings["trust"] == "dscp":
            for dscp, what, _prio in dscp_rules(settings).values():
                live, wanted = port["dscp_map"].get(dscp), port["class_of"][what]
                if live != wanted:
                    problems.append(
                        f"{name}: DSCP {dscp} goes to class {live}, wanted {wanted} ({what})"
                    )
        if port["class_of"]["rdma"] not in port["classes"]:
            problems.append(f"{name}: no RDMA class {port['class_of']['rdma']}")
    return problems


def main(argv: list[str]) -> int:
    if len(argv) != 3 or argv[1] not in ("apply", "show", "verify"):
        print(__doc__, file=sys.stderr)
        return 2
    settings = json.loads(Path(argv[2]).read_text())
    if argv[1] == "show":
        print(json.dumps(show(settings), indent=1, sort_keys=True))
        return 0
    if argv[1] == "verify":
        problems = verify(settings, show(settings))
        print("\n".join(problems) or "switch_qos: every port matches")
        return 1 if problems else 0
    report: dict[str, Any] = {"changed": False, "failed": False, "ports": {}}
    settings["_ets"] = kernel_has_ets()
    for name in settings["interfaces"]:
        if not Path(f"/sys/class/net/{name}").exists():
            report["ports"][name] = {"port": "failed: no such interface"}
            report["failed"] = True
            continue
        before = snapshot(name)
        port = Port(name, settings)
        port.apply()
        report["changed"] |= snapshot(name) != before
        report["failed"] |= port.failed
        report["ports"][name] = port.report
    print(json.dumps(report, indent=1, sort_keys=True))
    return 1 if report["failed"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
