"""``fabric watch``: one scrape from real tool output (ibsim captures of the lab's declared
fabric, healthy and with faults), its Prometheus exposition, the textfile mode, and the
command run as a real process: scrape errors, SIGTERM/SIGINT, bad input."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
import yaml
from conftest import junit_of
from prometheus_client.parser import text_string_to_metric_families

from fabric.parsers.ibnetdiscover import parse as parse_ibnetdiscover
from fabric.spec import load_spec
from fabric.state import REPO_ROOT
from fabric.verify.plan import CheckPlan
from fabric.watch.collect import cable_samples, collect, family_samples, owner_of
from fabric.watch.metrics import SnapshotCollector, registry_for, write_textfile
from fabric.watch.remote import Remote, RemoteError

FIXTURES = REPO_ROOT / "tests" / "fixtures"


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text()


@pytest.fixture(scope="module")
def plan() -> CheckPlan:
    spec = load_spec(REPO_ROOT / "Pulumi.lab.yaml")
    return CheckPlan(spec=spec, hosts=list(spec.hosts))


def replay(outputs: dict[str, str]):  # type: ignore[no-untyped-def]
    """A ``run`` that answers each command with a captured real output."""

    def run(host: str, command: str, timeout: float) -> tuple[int, str]:
        del host, timeout
        for tool, text in outputs.items():
            if command.startswith(tool):
                return 0, text
        raise RemoteError(f"no capture for {command!r}")

    return run


def samples(text: str, plan: CheckPlan) -> dict[str, object]:
    assert plan.expected_graph is not None
    cables, extra = cable_samples(plan.expected_graph, parse_ibnetdiscover(text))
    return {"extra": extra, **{c.cable: c for c in cables}}


def test_healthy_lab_capture_has_every_declared_cable_up_as_declared(plan: CheckPlan) -> None:
    found = samples(fixture("ibnetdiscover__ibsim_lab__1.txt"), plan)
    cables = [v for k, v in found.items() if k != "extra"]
    assert len(cables) == 18 and found["extra"] == 0
    assert all(c.up and c.as_declared for c in cables)  # type: ignore[attr-defined]
    gpu03 = found["leaf01/3-gpu03/mlx5_0/1"]
    assert (gpu03.a, gpu03.b) == ("leaf01/3", "gpu03/mlx5_0/1")  # type: ignore[attr-defined]
    assert gpu03.rate_gbps == gpu03.declared_rate_gbps == 200.0  # type: ignore[attr-defined]


def test_faulty_capture_names_each_faulty_cable_and_no_other(plan: CheckPlan) -> None:
    found = samples(fixture("ibnetdiscover__ibsim_lab__2.txt"), plan)
    bad = {
        k: (c.up, c.as_declared, c.rate_gbps, c.width_lanes)  # type: ignore[attr-defined]
        for k, c in found.items()
        if k != "extra" and not c.as_declared  # type: ignore[attr-defined]
    }
    assert bad == {
        "leaf01/2-gpu02/mlx5_0/1": (False, False, None, None),  # moved to leaf01 port 7
        "leaf01/4-gpu04/mlx5_0/1": (True, False, 50.0, 1),  # 1xHDR
        "leaf01/5-gpu05/mlx5_0/1": (True, False, 100.0, 4),  # 4xEDR
        "leaf02/2-gpu07/mlx5_0/1": (False, False, None, None),  # unplugged
    }
    assert found["extra"] == 1  # leaf01[20] - leaf02[20]


def test_master_sm_is_named_by_the_host_owning_its_port_guid(plan: CheckPlan) -> None:
    graph = parse_ibnetdiscover(fixture("ibnetdiscover__ibsim_lab__1.txt"))
    # "Initiated from node 0002c90302000020 port 0002c90302000021": sm1's port
    assert owner_of(graph, "0x0002c90302000021") == "sm1"
    assert owner_of(graph, "0x00000000deadbeef") is None


def test_scrape_errors_are_their_own_metric_never_a_cable_down(plan: CheckPlan) -> None:
    snap = collect(plan, replay({"sminfo": fixture("sminfo__ibsimparse__3.txt")}), None)
    assert set(snap.errors) == {"ibnetdiscover", "sminfo", "slurm"}
    assert "no capture for 'scontrol show node -o'" in snap.errors["slurm"]
    assert snap.nodes == []
    assert "no capture" in snap.errors["ibnetdiscover"]
    assert "iberror: failed: query" in snap.errors["sminfo"]
    assert snap.cables == [] and snap.master is None
    text = exposition(snap)
    assert 'railyard_watch_scrape_error{source="ibnetdiscover",stack="lab"} 1.0' in text
    assert "railyard_cable_up" not in text.replace("# HELP railyard_cable_up", "").replace(
        "# TYPE railyard_cable_up", ""
    )
    assert "railyard_node_drained" not in text  # unread is not "none drained"
    assert set(collect(plan, replay({}), None, slurm=False).sources) == {"ibnetdiscover", "sminfo"}


def exposition(snap) -> str:  # type: ignore[no-untyped-def]
    from prometheus_client import generate_latest

    collector = SnapshotCollector("lab")
    collector.update(snap)
    return generate_latest(registry_for(collector)).decode()


def values(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def test_exposition_of_a_scrape_with_a_pulled_cable(plan: CheckPlan, tmp_path: Path) -> None:
    (tmp_path / "test_fake.py").write_text(
        "def test_port_state_active():\n    assert False, 'gpu07 down'\n\n"
        "def test_sm_answers():\n    pass\n"
    )
    junit = junit_of(tmp_path / "test_fake.py")
    run = replay(
        {
            "ibnetdiscover": fixture("ibnetdiscover__ibsim_lab__2.txt"),
            "sminfo": fixture("sminfo__ibsimparse__1.txt"),
            "scontrol show node -o": fixture("scontrol_show_node__railyard_drain__1.txt"),
        }
    )
    snap = collect(plan, run, junit)
    assert snap.errors == {}
    got = values(exposition(snap))
    gpu07 = (
        ("a", "leaf02/2"),
        ("b", "gpu07/mlx5_0/1"),
        ("cable", "leaf02/2-gpu07/mlx5_0/1"),
        ("stack", "lab"),
    )
    assert got[("railyard_cable_up", gpu07)] == 0.0
    assert ("railyard_cable_rate_gbps", gpu07) not in got
    assert got[("railyard_cable_declared_rate_gbps", gpu07)] == 200.0
    assert got[("railyard_undeclared_cables", (("stack", "lab"),))] == 1.0
    # the capture's master (priority 14, lid 1) owns no GUID of the lab fabric: host unknown
    assert got[("railyard_sm_master_priority", (("host", ""), ("stack", "lab")))] == 14.0
    fam = {k[1]: v for k, v in got.items() if k[0] == "railyard_check_family_ok"}
    assert fam == {  # the port state of a declared cable is the sweep's
        (("family", "sweep"), ("stack", "lab")): 0.0,
        (("family", "sm"), ("stack", "lab")): 1.0,
    }
    assert got[("railyard_watch_scrape_error", (("source", "checks"), ("stack", "lab")))] == 0.0
    # Slurm's drains (a real slurmctld's scontrol show node -o, SOURCES.md): all three nodes,
    # railyard's own drain with its reason, the operator's drain not railyard's
    drained = {dict(k[1])["node"]: v for k, v in got.items() if k[0] == "railyard_node_drained"}
    assert drained == {"gpu01": 0.0, "gpu02": 1.0, "gpu03": 1.0}
    ours = [dict(k[1]) for k, v in got.items() if k[0] == "railyard_node_drained_by_railyard"]
    assert ours == [
        {"node": "gpu02", "reason": "railyard: mlx5_0/1 Down (leaf01 p2)", "stack": "lab"}
    ]


def test_scontrol_output_that_is_not_a_node_line_is_refused_naming_the_line() -> None:
    from fabric.watch.slurm import parse_nodes

    text = fixture("scontrol_show_node__railyard_drain__1.txt")
    nodes = parse_nodes(text)
    assert [(n.node, n.state, n.drained, n.by_railyard) for n in nodes] == [
        ("gpu01", "UNKNOWN", False, False),
        ("gpu02", "UNKNOWN+DRAIN", True, True),
        ("gpu03", "UNKNOWN+DRAIN", True, False),
    ]
    assert nodes[2].reason == "operator maintenance"
    cut = text.splitlines()[1][:40]  # a line cut before its State
    with pytest.raises(ValueError, match="line 2 is not a node's"):
        parse_nodes(text.splitlines()[0] + "\n" + cut)


def test_raw_counters_are_monotonic_total_series_per_cable_end() -> None:
    """Real perfquery readings (ibsim, SOURCES.md) of both ends of one cable as ``_total``
    counters labelled with the HCA port and its switch port; the rises are left to PromQL."""
    from fabric.parsers.perfquery import parse as parse_perfquery
    from fabric.verify.counters import thresholds
    from fabric.watch.collect import Snapshot
    from fabric.watch.counters import PortReading

    def reading(name: str) -> dict[str, int]:
        return dict(parse_perfquery(fixture(name)).blocks[0].counters)

    switch = reading("perfquery__ibsimparse__2.txt") | reading("perfquery__ibsimparse__3.txt")
    hca = reading("perfquery__ibsimparse__1.txt")
    ends = {"host": "gpu01", "device": "mlx5_0", "port": 1, "switch": "leaf01", "switch_port": 4}
    snap = Snapshot(
        taken=0.0,
        sources=["perfquery"],
        port_counters=[
            PortReading(**ends, end="switch", values=switch, allowed=thresholds(200)),
            PortReading(**ends, end="hca", values=hca, allowed=thresholds(200)),
        ],
    )
    text = exposition(snap)
    assert "# TYPE railyard_port_symbol_errors_total counter" in text
    got = values(text)
    labels = (("device", "mlx5_0"), ("host", "gpu01"), ("port", "1"), ("stack", "lab"),
              ("switch", "leaf01"), ("switch_port", "4"))  # fmt: skip
    at = {end: tuple(sorted((*labels, ("end", end)))) for end in ("switch", "hca")}
    assert got[("railyard_port_symbol_errors_total", at["switch"])] == 37.0
    assert got[("railyard_port_link_downed_total", at["switch"])] == 2.0
    assert got[("railyard_port_port_rcv_errors_total", at["switch"])] == 5.0
    assert got[("railyard_port_symbol_errors_total", at["hca"])] == 0.0
    # traffic: the extended reading's 576 words are 2,304 octets
    assert got[("railyard_port_xmit_data_bytes_total", at["switch"])] == 576 * 4
    assert got[("railyard_port_xmit_packets_total", at["switch"])] == 8.0
    names = {k[0] for k in got}
    assert {
        "railyard_port_port_xmit_discards_total",
        "railyard_port_port_xmit_wait_total",
        "railyard_port_link_error_recovery_total",
    } <= names
    assert not any(n.startswith("railyard_cable_counter_increase") for n in names)
    # the spec's thresholds beside them, for the alert rules (HDR: 12 symbol errors a minute)
    allowed = {
        (dict(k[1])["end"], dict(k[1])["counter"]): v
        for k, v in got.items()
        if k[0] == "railyard_port_counter_allowed_per_minute"
    }
    assert allowed[("switch", "symbol_errors")] == allowed[("hca", "symbol_errors")] == 12.0
    assert allowed[("switch", "link_downed")] == 0.0
    assert ("switch", "port_xmit_wait") not in allowed  # congestion: not judged by default


def test_counter_rises_between_two_real_readings_are_judged_per_end() -> None:
    from fabric.parsers.perfquery import parse as parse_perfquery
    from fabric.verify.counters import thresholds
    from fabric.watch.counters import _deltas

    def reading(name: str) -> dict[str, int]:
        return parse_perfquery(fixture(name)).blocks[0].counters

    # ibsim's console set leaf01 port 4's counters between the two readings (SOURCES.md)
    before, after = reading("perfquery__ibsimparse__1.txt"), reading("perfquery__ibsimparse__2.txt")
    got = _deltas(
        "c", "leaf01/4", "h/d/1", "leaf01/4", (0.0, before), (30.0, after), thresholds(200)
    )
    rose = {d.counter: (d.increase, d.allowed, d.failing) for d in got if d.increase}
    assert rose == {
        "SymbolErrorCounter": (37, 12, True),
        "LinkDownedCounter": (2, 0, True),
        "PortRcvErrors": (5, 0, True),
    }
    assert {d.counter for d in got} >= {"PortXmitDiscards", "PortXmitWait"}


def test_family_samples_count_outcomes_per_family(tmp_path: Path) -> None:
    from fabric.verify.results import read_junit

    (tmp_path / "test_fake.py").write_text(
        "import pytest\n\n@pytest.mark.parametrize('p', [1, 2, 3])\n"
        "def test_port_rate(p):\n    assert p != 2\n\ndef test_unknown_check():\n    pass\n"
    )
    got = family_samples(read_junit(junit_of(tmp_path / "test_fake.py")))
    assert [(f.family, f.passed, f.failed) for f in got] == [("ports", 2, 1)]


def test_textfile_is_written_whole_and_replaced_atomically(plan: CheckPlan, tmp_path: Path) -> None:
    collector = SnapshotCollector("lab")
    registry = registry_for(collector)
    run = replay({"ibnetdiscover": fixture("ibnetdiscover__ibsim_lab__1.txt")})
    collector.update(collect(plan, run, None))
    target = tmp_path / "railyard.prom"
    target.write_text("old\n")
    inode = target.stat().st_ino
    write_textfile(target, registry)
    assert target.stat().st_ino != inode  # renamed over, never rewritten in place
    assert sorted(p.name for p in tmp_path.iterdir()) == ["railyard.prom"]
    got = values(target.read_text())
    assert sum(v for (n, _), v in got.items() if n == "railyard_cable_up") == 18


def test_remote_uses_the_inventory_connection_with_host_keys_checked() -> None:
    inventory = {
        "all": {
            "vars": {
                "ansible_user": "root",
                "ansible_ssh_private_key_file": "/k/id",
                "ansible_ssh_common_args": "-o UserKnownHostsFile=/k/known "
                "-o StrictHostKeyChecking=yes",
            },
            "hosts": {"sm1": {"ansible_host": "198.18.0.11"}},
        }
    }
    argv = Remote(inventory).argv("sm1", "sminfo")
    assert argv[-2:] == ["root@198.18.0.11", "sminfo"]
    assert "StrictHostKeyChecking=yes" in argv and "UserKnownHostsFile=/k/known" in argv
    with pytest.raises(RemoteError, match="not in the inventory"):
        Remote(inventory).argv("gpu99", "sminfo")


# -- the command, as a real process -------------------------------------------------------------


def stack_dir(tmp_path: Path) -> tuple[dict[str, str], Path]:
    """A stack ``wt`` whose hosts' addresses answer nothing (a closed loopback port)."""
    spec = load_spec(REPO_ROOT / "Pulumi.lab.yaml")
    state = tmp_path / "state" / "wt"
    state.mkdir(parents=True)
    hosts = {h: {"ansible_host": "127.0.0.1", "ansible_port": 9} for h in spec.hosts}
    inventory = {
        "all": {
            "vars": {
                "ansible_user": "root",
                "ansible_ssh_common_args": f"-o UserKnownHostsFile={state / 'known_hosts'} "
                "-o StrictHostKeyChecking=yes",
            },
            "hosts": hosts,
        }
    }
    (state / "inventory.yml").write_text(yaml.safe_dump(inventory))
    env = {
        **os.environ,
        "RAILYARD_STATE_DIR": str(tmp_path / "state"),
        "PYTHONPATH": str(REPO_ROOT),
    }
    return env, state


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(tmp_path: Path, *extra: str) -> tuple[subprocess.Popen[str], int]:
    env, _ = stack_dir(tmp_path)
    port = free_port()
    argv = [sys.executable, "-m", "fabric", "watch", "--stack", "wt"]
    argv += ["--spec", str(REPO_ROOT / "Pulumi.lab.yaml"), "--port", str(port), *extra]
    proc = subprocess.Popen(
        argv, env=env, cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    return proc, port


def scrape(port: int, timeout: float = 30.0) -> str:
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
                text = r.read().decode()
            if "railyard_watch_scrapes" in text:
                return text
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise AssertionError(f"no metrics on 127.0.0.1:{port} within {timeout} s")
        time.sleep(0.2)


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGTERM, 0), (signal.SIGINT, 130)])
def test_served_unreachable_hosts_are_scrape_errors_and_a_signal_ends_it(
    tmp_path: Path, signum: int, code: int
) -> None:
    proc, port = start(tmp_path, "--interval", "60")
    try:
        got = values(scrape(port))
    finally:
        proc.send_signal(signum)
        rc = proc.wait(timeout=30)
    assert rc == code, proc.stderr.read() if proc.stderr else ""
    err = {dict(k[1])["source"]: v for k, v in got.items() if k[0] == "railyard_watch_scrape_error"}
    assert err == {
        "ibnetdiscover": 1.0,
        "sminfo": 1.0,
        "perfquery": 1.0,
        "slurm": 1.0,
        "checks": 0.0,
    }
    assert not any(k[0] == "railyard_cable_up" for k in got)


def test_textfile_once(tmp_path: Path) -> None:
    target = tmp_path / "prom" / "railyard.prom"
    target.parent.mkdir()
    proc, _ = start(tmp_path, "--textfile", str(target), "--once")
    assert proc.wait(timeout=60) == 0, proc.stderr.read() if proc.stderr else ""
    assert 'railyard_watch_scrape_error{source="sminfo",stack="wt"} 1.0' in target.read_text()


def test_once_without_textfile_prints_the_metrics_and_serves_nothing(tmp_path: Path) -> None:
    """``watch --once`` alone prints the one reading's metrics on stdout (the text format the
    endpoint serves), exit 0, and opens no port; ``--no-slurm`` leaves Slurm unread."""
    proc, port = start(tmp_path, "--once", "--no-slurm")
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    got = values(out)
    errors = {
        dict(k[1])["source"]: v for k, v in got.items() if k[0] == "railyard_watch_scrape_error"
    }
    assert errors == {"ibnetdiscover": 1.0, "sminfo": 1.0, "perfquery": 1.0, "checks": 0.0}
    assert got[("railyard_watch_scrapes", (("stack", "wt"),))] == 1.0
    with socket.socket() as probe:
        assert probe.connect_ex(("127.0.0.1", port)) != 0, "--once served on its port"


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (("--textfile", "/nonexistent-dir/x.prom"), "directory /nonexistent-dir does not exist"),
        (("--interval", "0"), "give seconds between 1 and 86400"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    tmp_path: Path, extra: tuple[str, ...], message: str
) -> None:
    proc, _ = start(tmp_path, *extra)
    assert proc.wait(timeout=30) == 2
    err = proc.stderr.read() if proc.stderr else ""
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_a_port_in_use_is_bad_input(tmp_path: Path) -> None:
    import socket

    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        env, _ = stack_dir(tmp_path)
        done = subprocess.run(
            [sys.executable, "-m", "fabric", "watch", "--stack", "wt", "--port", str(port)]
            + ["--spec", str(REPO_ROOT / "Pulumi.lab.yaml")],
            env=env,
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    assert done.returncode == 2 and "choose a free port" in done.stderr, done.stderr
