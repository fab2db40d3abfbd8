"""railyard's Slurm HealthCheckProgram: the node's declared fabric ports, checked in well under
a second, draining the node (and resuming only what it drained) through ``scontrol``.

Installed on every compute node by ``roles/node_health`` with ``fabric/verify/counters.py`` and
``health_gpu.py`` beside it (and the GPU parsers it needs, as ``fabric/parsers/`` there), and
run by slurmd every ``HealthCheckInterval`` (``health.interval`` in the spec).
The same program is the rolling driver upgrade's gate (``--check``: judge, touch nothing).
Standard library only: railyard's Python dependencies are not installed on compute nodes.

It reads its expectations from a JSON file the hand-off writes from the spec
(``fabric.handoff.health.health_configs``): per declared HCA port the CA to query, the expected width, speed and
active MTU, and the cable's switch end. Per port it runs ``smpquery portinfo`` (state, width,
speed, MTU, SM LID), ``perfquery`` on the port and on the switch port at the other end of its
cable, and once ``sminfo`` (an SM answers); on GPU hardware (``/proc/driver/nvidia``) it
checks that a GPUDirect RDMA path is there (``nvidia_peermem``, or dma-buf), and the GPUs' fitness (``health_gpu.check_fitness``:
XIDs in the kernel log since boot, uncorrectable ECC, a row remap pending or failed, retired
pages pending, a downed NVLink, fewer GPUs than the configuration's ``gpu.gpus``; a failure
drains, a warning such as persistence mode off is printed only). Counter rises are judged
against the reading the previous run saved (``fabric.verify.counters``), so no run waits
between two readings.

A subnet manager failover is routine: the MASTER stops, a STANDBY notices after its polling
timeout x retries and sweeps as the new MASTER. Meanwhile no SM answers. So an SM absence is
judged against the configuration's ``sm_failover_s`` (the declared failover window, from
``fabric.handoff.health.sm_failover_seconds``): the state file keeps when the absence began,
and while it is shorter than the window the run is a harness error (nothing drained, nothing
resumed); only an absence past the window fails the node. The new MASTER then re-sweeps: it
re-programs the switches' forwarding tables while ports pass through Init and Armed, and switch
ports drop what they cannot forward yet. So PortXmitDiscards that rose in a run counted from
within the window after the MASTER went or changed (the state file keeps its GUID and when it
last went or changed) are a warning; every other counter is judged as ever.

``--if-drained`` (what a converge runs on every compute node, ``roles/node_health``) does
nothing unless railyard's health check drained the node; then it is a normal run, which
resumes the node when the repair made it healthy, instead of waiting for the next
``HealthCheckInterval``.

Every tool call has a timeout, and the whole run an alarm: never a hang. A tool that answers
is judged. A tool that could not be run or did not finish in its time (exit 124/127: a hung
driver, or in the lab a tool queued for one of ibsim's client slots), and a local port whose
PortInfo cannot be read at all (``ibwarn: mad_rpc: _do_madrpc failed``: the MAD layer, not the
cable), are **harness errors**: reported as such (stdout, ``--json``, exit 3; Slurm is not
told, since ``scontrol`` can only set a reason with a drain), and the node is neither drained
nor resumed for them, however long they last, since nothing was learnt about the fabric. A
failure drains the node with
``railyard: <first failure>``, e.g. ``railyard: mlx5_0/1 Down (leaf01 p3)``; a healthy run
resumes the node only when it is drained with a reason railyard's health check wrote (starting
``railyard:``), never an operator's drain nor the rolling upgrade's.

On cloud instances (no declared HCA ports) the configuration names what the instance type has
instead: ``efa`` (AWS: the EFA PCI devices the catalog gives the type, read from sysfs) and
``gpu_nics`` (GCP A3: the GPU NICs, one IPv4 address in each declared subnet at the declared
MTU, from ``ip -j -4 addr``); ``gpudirect`` lists the peer-memory paths any one of which
serves (``dma-buf``: the NVIDIA open kernel module on Linux >= 5.12, ``efa_nv_peermem``,
``nvidia_peermem``; empty: none needed, as GPUDirect-TCPX(O) on A3 High and Mega). Without it
(InfiniBand, RoCE), a GPU node must have ``nvidia_peermem`` or dma-buf.

With a ``kubernetes`` section in the configuration (``api_server``, ``token_file``,
``ca_file``), a run that drains or resumes also sets or lifts the node's
``railyard.dev/fabric-unhealthy:NoSchedule`` taint (other taints kept) and its
``RailyardFabricHealthy`` condition on the API server (``mark_kubernetes``; every call
bounded by ``KUBE_TIMEOUT``). A call that fails is a harness error (reported, exit 3 on a
healthy verdict, never a traceback), never a drain. With ``"slurm": false`` (``orchestrator:
kubernetes``: no slurmd, a systemd timer of ``roles/node_health`` runs the program every
``health.interval``) ``scontrol`` is never run: the taint is the only action, and
``--if-drained`` is a normal run.

Exit codes: 0 healthy, 1 a check failed, 2 bad configuration (one line naming the field),
3 a check could not be made (harness error; nothing changed).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

try:  # installed side by side on the node; a package import on the controller
    import counters  # type: ignore[import-not-found]
    import health_gpu  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover - the controller side
    from fabric.verify import counters, health_gpu

#: The prefix of every drain reason the health check writes (and the only ones it resumes).
REASON_PREFIX = "railyard:"
CONFIG = Path("/etc/railyard/health.json")
STATE = Path("/var/lib/railyard/health-counters.json")
#: Seconds for one tool call; milliseconds for one MAD; seconds for the whole run.
CALL_TIMEOUT = 3.0
#: Seconds a tool that overran gets between SIGTERM and SIGKILL.
STOP_GRACE = 1.0
MAD_TIMEOUT_MS = 500
RUN_TIMEOUT = 20
#: PortInfo lane signalling rate (Gb/s) -> IBTA speed name.
SPEEDS = {
    2.5: "SDR",
    5.0: "DDR",
    10.0: "QDR",
    10.3125: "FDR10",
    14.0625: "FDR",
    25.78125: "EDR",
    53.125: "HDR",
    106.25: "NDR",
    212.5: "XDR",
}
_FIELD = re.compile(r"^(?P<name>[A-Za-z0-9]+):\.+(?P<value>.*?)\s*$")


class ConfigError(ValueError):
    """The health check's configuration is unusable (names the field)."""


#: Where Kubernetes looks (``fabric.kube_client``'s taint and condition): the configuration's
#: optional ``kubernetes`` section (``api_server``, ``token_file``, ``ca_file``) turns it on.
KUBE_TAINT = "railyard.dev/fabric-unhealthy"
KUBE_CONDITION = "RailyardFabricHealthy"
KUBE_KEYS = ("api_server", "token_file")
#: Seconds for one API server call (at most three per run, inside RUN_TIMEOUT).
KUBE_TIMEOUT = 4.0
#: How a mark that could not be made begins: a harness error (exit 3 on a healthy verdict).
KUBE_NOT_MARKED = "kubernetes: not marked:"


def _kube_call(
    kube: dict[str, Any], method: str, path: str, body: Any = None, kind: str = ""
) -> Any:
    """One API server call (no proxy; the token from its file, never printed)."""
    import ssl
    import urllib.request

    token = Path(kube["token_file"]).read_text().strip()
    context = ssl.create_default_context(cafile=kube.get("ca_file") or None)
    opener = urllib.request.build_opener(
        urllib.request.ProxyHandler({}), urllib.request.HTTPSHandler(context=context)
    )
    headers = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
    if kind:
        headers["Content-Type"] = f"application/{kind}+json"
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(
        kube["api_server"].rstrip("/") + path, data=data, headers=headers, method=method
    )
    with opener.open(request, timeout=KUBE_TIMEOUT) as reply:
        return json.loads(reply.read() or b"{}")


def mark_kubernetes(kube: dict[str, Any], node: str, failures: list[str]) -> str:
    """Set (a failure) or lift (healthy) the ``NoSchedule`` taint on the Node, other taints
    kept, and its ``RailyardFabricHealthy`` condition; what was done, or why not."""
    import urllib.error

    missing = [k for k in KUBE_KEYS if not kube.get(k)]
    if missing:
        return f"{KUBE_NOT_MARKED} no '{missing[0]}' in the kubernetes section"
    path = f"/api/v1/nodes/{node.lower()}"
    reason = "FabricUnhealthy" if failures else "FabricHealthy"
    message = reason_of(failures) if failures else "every declared fabric port healthy"
    try:
        current = _kube_call(kube, "GET", path)
        before = (current.get("spec") or {}).get("taints") or []
        taints = [t for t in before if t.get("key") != KUBE_TAINT]
        if failures:
            taints.append({"key": KUBE_TAINT, "value": reason, "effect": "NoSchedule"})
        if taints != before:
            version = current["metadata"]["resourceVersion"]
            patch = {"metadata": {"resourceVersion": version}, "spec": {"taints": taints or None}}
            _kube_call(kube, "PATCH", path, patch, "merge-patch")
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        conditions = (current.get("status") or {}).get("conditions") or []
        old = next((c for c in conditions if c.get("type") == KUBE_CONDITION), None)
        status = "False" if failures else "True"
        if old is None or (old.get("status"), old.get("message")) != (status, message):
            since = old["lastTransitionTime"] if old and old.get("status") == status else now
            condition = {
                "type": KUBE_CONDITION,
                "status": status,
                "reason": reason,
                "message": message,
                "lastHeartbeatTime": now,
                "lastTransitionTime": since,
            }
            body = {"status": {"conditions": [condition]}}
            _kube_call(kube, "PATCH", path + "/status", body, "strategic-merge-patch")
    except urllib.error.HTTPError as exc:
        return f"{KUBE_NOT_MARKED} {exc.code} {exc.reason} from {path}"
    except (OSError, ValueError, KeyError) as exc:
        return f"{KUBE_NOT_MARKED} {type(exc).__name__}: {str(exc)[:120]}"
    verb = "tainted" if failures else "untainted"
    return f"kubernetes: {verb}" if taints != before else "kubernetes: taint as it was"


def tool_env(config: dict[str, Any]) -> dict[str, str]:
    """The tools' environment: slurmd runs a health check with almost none, so PATH is set,
    and a config ``env_file`` (the lab's ``/etc/environment``: ibsim's preload) is added."""
    env = dict(os.environ)
    env.setdefault("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
    if "/usr/sbin" not in env["PATH"]:
        env["PATH"] += ":/usr/sbin:/usr/bin:/sbin:/bin"
    if name := config.get("env_file"):
        try:
            for line in Path(name).read_text().splitlines():
                key, eq, value = line.strip().partition("=")
                if eq and key and not key.startswith("#"):
                    env[key] = value.strip('"')
        except OSError as exc:
            raise ConfigError(f"env_file {name}: cannot read it ({exc.strerror})") from None
    return env


def run(
    argv: Sequence[str], timeout: float = CALL_TIMEOUT, env: dict[str, str] | None = None
) -> tuple[int, str]:
    """Run a tool with a timeout: (exit code, stdout + stderr); 124 when it timed out.

    A tool that overran is sent SIGTERM first and SIGKILL only ``STOP_GRACE`` seconds later:
    a process killed outright cannot detach from anything (in the lab, its ibsim client slot
    stays taken until the lab's reaper drops it)."""
    try:
        proc = subprocess.Popen(
            list(argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
        )
    except OSError as exc:
        return 127, f"{argv[0]}: {exc.strerror or exc}"
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.terminate()
        try:
            proc.communicate(timeout=STOP_GRACE)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
        return 124, f"{argv[0]} timed out after {timeout:g}s"
    return proc.returncode, out + err


#: ``run``'s exit codes for a tool that did not finish in time or could not be started.
HARNESS_RCS = (124, 127)


def fields(text: str) -> dict[str, str]:
    """``Name:....value`` lines of smpquery/sminfo-style output."""
    out = {}
    for line in text.splitlines():
        if match := _FIELD.match(line):
            out.setdefault(match["name"], match["value"])
    return out


def _last(text: str, rc: int) -> str:
    """The last line a tool printed, or its exit code."""
    lines = text.strip().splitlines()
    return lines[-1].strip()[:120] if lines else f"exit {rc}"


def _gbps(value: str | None) -> float:
    try:
        return float((value or "").split()[0])
    except (ValueError, IndexError):
        return 0.0


def speed_name(info: dict[str, str]) -> str:
    """The active speed's IBTA name from PortInfo (extended speed when one is active)."""
    lane = _gbps(info.get("LinkSpeedExtActive")) or _gbps(info.get("LinkSpeedActive"))
    return SPEEDS.get(lane, f"{lane:g} Gb/s")


def load_config(path: Path) -> dict[str, Any]:
    """The JSON configuration, checked enough to name a missing field."""
    try:
        config = json.loads(path.read_text())
    except OSError as exc:
        raise ConfigError(
            f"{path}: cannot read it ({exc.strerror}); run roles/node_health"
        ) from None
    except ValueError as exc:
        raise ConfigError(f"{path}: not JSON ({exc}); run roles/node_health") from None
    for key in ("node", "ports"):
        if key not in config:
            raise ConfigError(f"{path}: no '{key}' field; run roles/node_health")
    for i, port in enumerate(config["ports"]):
        for key in ("ca", "device", "port", "width", "speed", "mtu", "cable"):
            if key not in port:
                raise ConfigError(f"{path}: ports[{i}] has no '{key}' field")
    return config


class Checker:
    """One run: every declared port, an SM, counters, peer memory; failures in order."""

    def __init__(self, config: dict[str, Any], state: Path, now: float | None = None) -> None:
        self.config, self.state = config, state
        self.now = time.time() if now is None else now
        self.env = tool_env(config)
        self.failures: list[str] = []
        self.harness_errors: list[str] = []
        self.warnings: list[str] = []
        self.readings: dict[str, dict[str, int]] = {}
        try:
            self.saved: dict[str, Any] = json.loads(self.state.read_text())
        except (OSError, ValueError):
            self.saved = {}
        #: When the current SM absence began (epoch seconds), None while an SM answers.
        since = self.saved.get("sm_absent_since")
        self.sm_absent_since: float | None = float(since) if since is not None else None
        #: The MASTER SM's GUID the last answer named, and when a run last found it gone or
        #: changed (the new MASTER's re-sweep follows).
        self.sm_guid: str | None = self.saved.get("sm_guid")
        changed = self.saved.get("sm_changed_at")
        self.sm_changed_at: float | None = float(changed) if changed is not None else None

    def fail(self, text: str) -> None:
        self.failures.append(text)

    def judged(self, rc: int, text: str, what: str) -> bool:
        """True when the tool ran to its end (its answer can be judged); a tool that did not
        finish or start is recorded as a harness error about ``what``."""
        if rc in HARNESS_RCS:
            self.harness_errors.append(f"{what}: {_last(text, rc)}")
            return False
        return True

    def _run(self, argv: Sequence[str]) -> tuple[int, str]:
        return run(argv, env=self.env)

    def check(self) -> list[str]:
        """Run every check; return the failures (empty: healthy)."""
        for port in self.config["ports"]:
            self._port(port)
        if self.config["ports"] and not self.failures and not self.harness_errors:
            self._sm()
        else:
            # sminfo was not asked this run, so an absence seen before is not known to have
            # lasted: a later gap is timed afresh, not from a start runs ago (a failover, then
            # a pulled cable that skipped sminfo, then one unanswered sminfo in the converge's
            # re-sweep, would otherwise read as an absence past the window and drain).
            self.sm_absent_since = None
        self._counters()
        self._efa()
        self._gpu_nics()
        self._peermem()
        self._gpu()
        return self.failures

    def _port(self, port: dict[str, Any]) -> None:
        name = f"{port['device']}/{port['port']}"
        cable = f"({port['cable']})"
        ca, num = str(port["ca"]), str(port["port"])
        rc, text = self._run(
            ["smpquery", "-C", ca, "-P", num, "-t", str(MAD_TIMEOUT_MS), "-D", "portinfo", "0", num]
        )
        if not self.judged(rc, text, f"{name} {cable}"):
            return
        info = fields(text)
        if rc != 0 or "LinkState" not in info:
            # The local port's own PortInfo (direct route 0) did not come back: the MAD layer
            # failed ("ibwarn: mad_rpc: _do_madrpc failed"), not the cable. Nothing was learnt
            # about the port, so it is a harness error however long it lasts: never a drain.
            self.harness_errors.append(f"{name} not readable {cable}: {_last(text, rc)}")
            return
        state = info["LinkState"]
        if state != "Active":
            self.fail(f"{name} {state} {cable}")
            return
        width, speed = info.get("LinkWidthActive", "?"), speed_name(info)
        if width.upper() != str(port["width"]).upper() or speed != port["speed"]:
            self.fail(f"{name} {width} {speed}, declared {port['width']} {port['speed']} {cable}")
        mtu = info.get("NeighborMTU", "?")
        if mtu != str(port["mtu"]):
            self.fail(f"{name} MTU {mtu}, declared {port['mtu']} {cable}")
        self._read_counters(port, ca, num, name)

    def _read_counters(self, port: dict[str, Any], ca: str, num: str, name: str) -> None:
        local = ["-C", ca, "-P", num]
        ends = [(name, local)]
        rc, text = self._run(
            ["smpquery", *local, "-t", str(MAD_TIMEOUT_MS), "-D", "portinfo", f"0,{num}", "0"]
        )
        switch_lid = fields(text).get("Lid")
        if rc == 0 and switch_lid and port.get("switch_port"):
            ends.append((str(port["cable"]), [*local, switch_lid, str(port["switch_port"])]))
        for label, address in ends:
            values: dict[str, int] = {}
            for flag in (["-x"], []):
                rc, text = self._run(["perfquery", *flag, "-t", str(MAD_TIMEOUT_MS), *address])
                if rc == 0:
                    values = counters.perfquery_values(text) | values
                if "SymbolErrorCounter" in values:
                    break
            if values:
                self.readings[f"{name}|{label}"] = values

    def _sm(self) -> None:
        port = self.config["ports"][0]
        rc, text = self._run(
            ["sminfo", "-C", str(port["ca"]), "-P", str(port["port"]), "-t", str(MAD_TIMEOUT_MS)]
        )
        if not self.judged(rc, text, "sminfo"):
            return
        if rc == 0 and "sminfo:" in text:
            self.sm_absent_since = None
            guid = sm_guid(text)
            if guid is not None and self.sm_guid is not None and guid != self.sm_guid:
                self.sm_changed_at = self.now
            self.sm_guid = guid or self.sm_guid
            return
        self.sm_absent(_last(text, rc))

    def sm_absent(self, said: str) -> None:
        """No SM answered: a harness error within the failover window, a failure past it."""
        window = float(self.config.get("sm_failover_s", 0) or 0)
        self.sm_changed_at = self.now
        if self.sm_absent_since is None or self.sm_absent_since > self.now:
            self.sm_absent_since = self.now
        absent = self.now - self.sm_absent_since
        if absent < window:
            self.harness_errors.append(
                f"no subnet manager answers for {absent:.0f}s, within the {window:g}s failover "
                f"window (not judged yet): {said}"
            )
        elif window:
            self.fail(
                f"no subnet manager answers: {said} (for {absent:.0f}s, past the {window:g}s "
                "failover window)"
            )
        else:
            self.fail(f"no subnet manager answers: {said}")

    def _counters(self) -> None:
        now, saved = self.now, self.saved
        before, then = saved.get("readings", {}), float(saved.get("time", now))
        rates = {
            f"{p['device']}/{p['port']}": float(p.get("rate_gbps", 0)) for p in self.config["ports"]
        }
        overrides = self.config.get("thresholds", {})
        resweep = self._resweep(then)
        for key, after in self.readings.items():
            if key not in before:
                continue
            name, _, label = key.partition("|")
            limits = counters.thresholds(rates.get(name, 0.0), overrides)
            bad = counters.failing(counters.judge(before[key], after, now - then, limits))
            where = label if label != name else f"{name} ({self._cable(name)})"
            if resweep:
                if held := [b for b in bad if b.counter in RESWEEP_COUNTERS]:
                    self.warnings.append(
                        f"{where}: {', '.join(b.text() for b in held)}, while a new MASTER SM "
                        f"re-sweeps ({resweep}): not judged"
                    )
                bad = [b for b in bad if b.counter not in RESWEEP_COUNTERS]
            if bad:
                self.fail(f"{where} errors: {', '.join(b.text() for b in bad)}")
        try:
            self.state.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.state.with_suffix(".tmp")
            kept: dict[str, Any] = {"time": now, "readings": self.readings}
            if self.sm_absent_since is not None:
                kept["sm_absent_since"] = self.sm_absent_since
            if self.sm_guid is not None:
                kept["sm_guid"] = self.sm_guid
            if self.sm_changed_at is not None:
                kept["sm_changed_at"] = self.sm_changed_at
            tmp.write_text(json.dumps(kept))
            tmp.replace(self.state)
        except OSError as exc:
            self.fail(f"cannot save counter readings to {self.state}: {exc.strerror}")

    def _resweep(self, then: float) -> str:
        """Why the counters read since ``then`` may hold a subnet manager change's discards (the
        MASTER went or changed within the failover window before or during that time), or ""."""
        window = float(self.config.get("sm_failover_s", 0) or 0)
        changed = self.sm_changed_at
        if not window or changed is None or then > changed + window:
            return ""
        return f"the MASTER went or changed {self.now - changed:.0f}s ago, {window:g}s window"

    def _cable(self, name: str) -> str:
        for port in self.config["ports"]:
            if f"{port['device']}/{port['port']}" == name:
                return str(port["cable"])
        return "?"

    def _efa(self) -> None:
        """The EFA PCI devices (vendor 0x1d0f, device 0xefa*) against the type's count."""
        efa = self.config.get("efa")
        if not efa:
            return
        root = Path(str(efa.get("sysfs", "/sys"))) / "bus/pci/devices"
        found, unreadable = 0, []
        for dev in sorted(root.glob("*")):
            try:
                vendor = (dev / "vendor").read_text().strip()
                device = (dev / "device").read_text().strip()
            except OSError as exc:
                unreadable.append(f"{dev.name}: {exc.strerror or exc}")
                continue
            found += vendor == "0x1d0f" and device.startswith("0xefa")
        if found < int(efa["devices"]) and unreadable:
            # a device file that cannot be read may be a missing EFA: nothing learnt, no drain
            self.harness_errors.append(
                f"{found} EFA devices readable, the instance type has {efa['devices']}; "
                f"sysfs not readable for {', '.join(unreadable[:3])}"
            )
        elif found != int(efa["devices"]):
            self.fail(f"{found} EFA devices, the instance type has {efa['devices']}")

    def _gpu_nics(self) -> None:
        """Each declared GPU subnet has one address on a NIC at the declared MTU."""
        import ipaddress

        nics = self.config.get("gpu_nics")
        if not nics:
            return
        rc, text = self._run(["ip", "-j", "-4", "addr", "show"])
        if not self.judged(rc, text, "ip addr"):
            return
        try:
            links = json.loads(text)
        except ValueError:
            self.harness_errors.append(f"ip -j addr printed no JSON: {_last(text, rc)}")
            return
        seen: dict[str, tuple[str, int]] = {}
        for link in links if isinstance(links, list) else []:
            for info in link.get("addr_info", []):
                address = ipaddress.ip_address(str(info.get("local", "0.0.0.0")))
                for subnet in nics["subnets"]:
                    if address in ipaddress.ip_network(subnet):
                        seen[subnet] = (str(link.get("ifname")), int(link.get("mtu", 0)))
        for subnet in nics["subnets"]:
            if subnet not in seen:
                self.fail(f"no GPU NIC has an address in {subnet}")
            elif seen[subnet][1] != int(nics["mtu"]):
                name, mtu = seen[subnet]
                self.fail(f"{name} MTU {mtu}, declared {nics['mtu']} ({subnet})")

    def _gpu_run(self, argv: Sequence[str], timeout: float) -> tuple[int, str]:
        return run(argv, timeout, env=self.env)

    def _gpu(self) -> None:
        """The GPUs' fitness, on GPU hardware or where the configuration declares GPUs."""
        gpu = self.config.get("gpu")
        if gpu is None and not Path("/proc/driver/nvidia").exists():
            return
        failures, harness, warnings = health_gpu.check_fitness(gpu or {}, self._gpu_run)
        self.failures += failures
        self.harness_errors += harness
        self.warnings += warnings

    def _peermem(self) -> None:
        if not NVIDIA_PROC.exists():
            return
        paths = self.config.get("gpudirect")
        if paths is None:  # InfiniBand/RoCE: nvidia_peermem, or dma-buf (the open kernel module)
            paths = list(IB_GPUDIRECT_PATHS)
            if not any(gpudirect_path(p) for p in paths):
                self.fail(
                    "no GPUDirect RDMA path: nvidia_peermem not loaded and no dma-buf "
                    "(the NVIDIA open kernel module on Linux >= 5.12)"
                )
            return
        if paths and not any(gpudirect_path(p) for p in paths):
            self.fail(f"no GPUDirect RDMA path ({', '.join(paths)}): EFA/RDMA cannot reach GPUs")


#: The NVIDIA driver's /proc folder: its ``version`` names the kernel module (open or not).
NVIDIA_PROC = Path("/proc/driver/nvidia")


def kernel_release() -> str:
    """``uname -r``."""
    return os.uname().release


#: The GPUDirect RDMA paths an InfiniBand or RoCE node may have, any one of which serves: the
#: peer-memory module, or dma-buf (NCCL and perftest register GPU memory through it, with no
#: module, where the driver is the open kernel module and the kernel 5.12 or later).
IB_GPUDIRECT_PATHS = ("nvidia_peermem", "dma-buf")


def dmabuf_capable(version: str, kernel_release: str) -> bool:
    """Whether ``/proc/driver/nvidia/version``'s text and ``uname -r`` allow dma-buf: the
    NVIDIA open kernel module ("NVIDIA UNIX Open Kernel Module") on Linux >= 5.12."""
    release = tuple(int(p) for p in re.findall(r"\d+", kernel_release)[:2])
    return "Open Kernel Module" in version and release >= (5, 12)


def gpudirect_path(path: str) -> bool:
    """Whether one GPUDirect RDMA path is there: a peer-memory module loaded, or ``dma-buf``
    (the NVIDIA open kernel module on Linux >= 5.12, where RDMA maps dma-buf memory)."""
    if path != "dma-buf":
        return Path(f"/sys/module/{path}").exists()
    try:
        version = (NVIDIA_PROC / "version").read_text()
    except OSError:
        return False
    return dmabuf_capable(version, kernel_release())


#: Counters a subnet manager change raises on healthy ports: while a new MASTER re-sweeps, it
#: re-programs every switch's forwarding table and the ports pass through Init and Armed, and a
#: switch port drops what it cannot forward yet (PortXmitDiscards; seen in the lab's failover
#: drill as +3 on a never-faulted node's switch port). Within the failover window after the
#: MASTER went or changed they are a warning; every other counter is judged as ever.
RESWEEP_COUNTERS = frozenset({"PortXmitDiscards"})

_SM_GUID = re.compile(r"\bsm guid (0x[0-9a-fA-F]+)")


def sm_guid(text: str) -> str | None:
    """The MASTER's GUID in ``sminfo`` output (the node-side reader; ``fabric.parsers.sminfo``
    is the parser, and a unit test holds both to the same GUID)."""
    match = _SM_GUID.search(text)
    return match[1].lower() if match else None


def reason_of(failures: list[str]) -> str:
    """The Slurm drain reason: the first failure, and how many more."""
    more = f" (+{len(failures) - 1} more)" if len(failures) > 1 else ""
    return f"{REASON_PREFIX} {failures[0]}{more}"[:250]


def node_state(node: str, env: dict[str, str]) -> tuple[str, str] | None:
    """(State, Reason) of ``node`` from ``scontrol show node -o``, or None."""
    rc, text = run(["scontrol", "show", "node", "-o", node], env=env)
    if rc != 0:
        return None
    state = re.search(r"\bState=(\S+)", text)
    reason = re.search(r"\bReason=(.*?)(?: \[[^\]]*\])?(?= \w+=|$)", text)
    return (state[1] if state else "", reason[1] if reason else "")


def act(node: str, failures: list[str], env: dict[str, str]) -> str:
    """Drain ``node`` on failure; resume it when healthy and drained by this check."""
    found = node_state(node, env)
    if found is None:
        return "slurmctld not reachable: nothing changed"
    state, reason = found
    drained = "DRAIN" in state
    if failures:
        if drained and not reason.startswith(REASON_PREFIX):
            return f"already drained by someone else ({reason}): left alone"
        want = reason_of(failures)
        if drained and reason == want:
            return "already drained with this reason"
        rc, text = run(
            ["scontrol", "update", f"nodename={node}", "state=DRAIN", f"reason={want}"], env=env
        )
        return f"drained: {want}" if rc == 0 else f"drain failed: {text.strip()}"
    if drained and reason.startswith(REASON_PREFIX):
        rc, text = run(["scontrol", "update", f"nodename={node}", "state=RESUME"], env=env)
        return "resumed" if rc == 0 else f"resume failed: {text.strip()}"
    return "healthy"


def _alarm(_signum: int, _frame: object) -> None:
    print(f"{REASON_PREFIX} health check exceeded {RUN_TIMEOUT}s", file=sys.stderr)
    os._exit(1)


def main(argv: Sequence[str] | None = None) -> int:
    """The program: ``railyard-health [--check] [--json] [--config FILE] [--state FILE]``."""
    parser = argparse.ArgumentParser(prog="railyard-health", description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="judge only: never drain or resume")
    parser.add_argument(
        "--slow",
        action="store_true",
        help="also the GPU measurements of the configuration's 'slow' section (single-node "
        "NCCL busbw, per-rail GPUDirect ib_write_bw); needs the GPUs idle: a Slurm prolog",
    )
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.add_argument(
        "--if-drained",
        action="store_true",
        help="do nothing unless railyard's health check drained this node (a converge after a "
        "repair: the node is resumed now, not at the next HealthCheckInterval)",
    )
    parser.add_argument("--config", type=Path, default=CONFIG)
    parser.add_argument("--state", type=Path, default=STATE)
    args = parser.parse_args(argv)
    signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(health_gpu.SLOW_RUN_TIMEOUT if args.slow else RUN_TIMEOUT)
    start = time.monotonic()
    try:
        config = load_config(args.config)
        checker = Checker(config, args.state)
        if args.slow and not config.get("slow"):
            raise ConfigError(
                f"{args.config}: no 'slow' section (no GPU floor for this node in "
                "fabric/catalog.py); run without --slow"
            )
    except ConfigError as exc:
        print(f"railyard-health: {exc}", file=sys.stderr)
        return 2
    slurm = config.get("slurm", True) is not False
    if args.if_drained and not args.check and slurm:
        found = node_state(str(config["node"]), checker.env)
        if found is None or "DRAIN" not in found[0] or not found[1].startswith(REASON_PREFIX):
            why = "slurmctld not reachable" if found is None else f"state {found[0]}"
            print(f"railyard-health: not drained by railyard ({why}): nothing to do")
            return 0
    failures = checker.check()
    harness = checker.harness_errors
    if args.slow:
        slow_failures, slow_harness = health_gpu.check_slow(
            config["slow"], lambda argv, timeout: run(argv, timeout, env=checker.env)
        )
        failures += slow_failures
        harness += slow_harness
    if args.check:
        action = "checked only"
    elif harness and not failures:
        action = "harness error: nothing changed"
    else:
        node = str(config["node"])
        action = act(node, failures, checker.env) if slurm else "no slurm"
        if config.get("kubernetes"):
            marked = mark_kubernetes(config["kubernetes"], node, failures)
            action += "; " + marked
            if marked.startswith(KUBE_NOT_MARKED):  # the API server, not the fabric
                harness.append(marked)
    seconds = time.monotonic() - start
    if args.json:
        print(
            json.dumps(
                {
                    "failures": failures,
                    "harness_errors": harness,
                    "warnings": checker.warnings,
                    "action": action,
                    "seconds": round(seconds, 3),
                }
            )
        )
    else:
        for failure in failures:
            print(f"{REASON_PREFIX} {failure}")
        for error in harness:
            print(f"railyard-health: harness error: {error}")
        for warning in checker.warnings:
            print(f"railyard-health: warning: {warning}")
        print(
            f"railyard-health: {len(failures)} failure(s), {len(harness)} harness error(s), "
            f"{action}, {seconds:.3f}s"
        )
    return 1 if failures else 3 if harness else 0


if __name__ == "__main__":
    sys.exit(main())
