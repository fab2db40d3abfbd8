"""A RoCE lab with its switch, through ``pulumi up``; then day 2: ``playbooks/qos-change.yml``
applies changed lossless-Ethernet settings to the switch and the hosts.

The lab (``pulumi up`` through :mod:`labkit`, with the hand-off): two compute nodes and a Slurm
controller, and the spec's managed ``linux`` switch ``leaf1`` (``fabric.lab.switch``, the
``LabSwitch`` resource): a container on the management network only, its host key pinned, one
port per compute node (``swp1``, ``swp2``: veth pairs whose other ends are the nodes' ``fab0``
at MTU 9000); no podman fabric network. The hand-off runs ``switch_qos`` on it over SSH; the
whole check suite then passes, the RoCE consistency hops and path-MTU pairs crossing the
switch; a second ``pulumi up`` changes nothing. The spec's ``fabric.roce`` then changes
(lossless priority 3 -> 4, RDMA DSCP 26 -> 24, ToS 106 -> 98) and
``python -m fabric run playbooks/qos-change.yml`` applies it, switch first (widened, then
narrowed), and the consistency checks pass on the new settings; a second run changes nothing.
A ToS that does not carry the DSCP is refused first, naming the field and the value to use,
with nothing changed. The lab's netdevs are veth, not ConnectX: the host role applies MTU and
the settings file and reports the ConnectX-only knobs as skipped; the switch has htb and u32
but no sch_ets/sch_red on this kernel (docs/roce.md).

Its own stack name, subnets (198.19.16-25, 32-41 and 48-57) and ports.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest

from fabric.lab.switch import veth_names
from fabric.state import REPO_ROOT
from tests.integration.labkit import OwnLab, own_lab

pytestmark = pytest.mark.integration

SETTINGS = "/etc/railyard/roce-qos.env"
SWITCH_FACT = "/etc/ansible/facts.d/switch_qos.fact"
#: Measured numbers, printed at the end of the module (pytest -s) for the report.
MEASURED: dict[str, Any] = {}


def _spec(tag: int, pfc: int = 3, dscp: int = 26, tos: int | None = None) -> dict[str, Any]:
    hca = {"device": "mlx5_0", "link_layer": "Ethernet", "netdev": "fab0", "rate_gbps": 100}
    return {
        "name": "ryqos",
        "target": "lab",
        "nodes": [
            {"names": "q[1-2]", "role": "compute", "hcas": [hca]},
            {"names": "qctl", "role": "controller"},
        ],
        "fabric": {
            "kind": "roce",
            "mtu": 9000,
            "roce": {
                "pfc_priority": pfc,
                "rdma_dscp": dscp,
                "roce_tos": dscp << 2 | 2 if tos is None else tos,
            },
            "switches": [
                {
                    "name": "leaf1",
                    "os": "linux",
                    "manage": True,
                    "ssh_user": "root",
                    "ports": [{"name": "swp1", "host": "q1"}, {"name": "swp2", "host": "q2"}],
                }
            ],
        },
        "management": {"subnet": f"198.19.{16 + tag}.0/24"},
        "bmc": {"subnet": f"198.19.{32 + tag}.0/24"},
        "slurm": {
            "cluster_name": "ryqos",
            "controller": "qctl",
            "partitions": [{"name": "p", "nodes": "q[1-2]", "default": True}],
        },
        "lab": {
            "bmc_port": 19500 + 2 * tag,
            "ibsim_port": 18700 + 16 * tag,
            "roce_subnet": f"198.19.{48 + tag}.0/24",
        },
    }


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OwnLab]:
    with own_lab(tmp_path_factory, "ryqos", _spec, tags=10, handoff=True) as lab:
        MEASURED["first_up_s"] = round(lab.up_seconds, 1)
        yield lab
    print(f"\nroce lab with switch measured: {json.dumps(MEASURED, indent=1)}")
    assert lab.leftovers == {}, lab.leftovers
    stem = veth_names(f"{lab.name}-leaf1", 0)[0][:-2]  # ryk + the switch's hash
    veths = subprocess.run(
        ["ip", "-o", "link", "show"], capture_output=True, text=True, check=True, timeout=30
    ).stdout
    assert stem not in veths, f"veths of the lab switch left behind: {veths}"


def _switch_ssh(lab: OwnLab, command: str) -> str:
    """Run ``command`` on the lab switch over SSH (its address from the ``switches`` output,
    its host key checked against the stack's known_hosts); it must succeed."""
    from fabric.lab.ssh import connect, host_keys_from, run

    with connect(
        lab.outputs["switches"].value["leaf1"]["ansible_host"],
        user="root",
        private_key=(lab.state / "ssh" / "id_ed25519").read_text(),
        host_keys=host_keys_from(lab.state / "known_hosts"),
    ) as client:
        rc, out, err = run(client, command, timeout=60)
    assert rc == 0, f"leaf1: {command!r} exited {rc}: {out}{err}"
    return out


def _qos_change(lab: OwnLab) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "fabric",
            "run",
            "playbooks/qos-change.yml",
            "--stack",
            lab.name,
            "--spec",
            str(lab.stack_file),
        ],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        timeout=900,
        env={**os.environ, **lab.env},
        check=False,
    )


def _changed(stdout: str) -> dict[str, int]:
    table = stdout.split("succeeded\n", 1)[1].splitlines()
    assert table[0].split() == ["host", "ok", "changed", "failed", "unreachable", "skipped"], stdout
    return {
        row.split()[0]: int(row.split()[2])
        for row in table[1:]
        if row.split() and row.split()[0] in ("q1", "q2", "leaf1")
    }


def _settings(lab: OwnLab, node: str) -> dict[str, str]:
    text = lab.ssh(node, f"cat {SETTINGS}")
    return dict(
        line.split("=", 1) for line in text.splitlines() if "=" in line and not line.startswith("#")
    )


def test_handoff_applied_the_declared_settings(lab: OwnLab) -> None:
    rows = {
        line.split()[0]: line.split()[1:] for line in lab.outputs["handoff"].value.splitlines()[1:]
    }
    rows.pop("localhost", None)  # the hand-off's play on the controller (metrics service)
    assert set(rows) == {"q1", "q2", "qctl", "leaf1"} and all(
        r[2] == "0" and r[3] == "0" for r in rows.values()
    )
    port = json.loads(_switch_ssh(lab, f"cat {SWITCH_FACT}"))["ports"]["swp2"]
    MEASURED["switch_report_swp2"] = port
    assert port["mtu"] == "applied: 9000", port
    assert port["classification"].startswith("applied: tc u32 DSCP filters"), port
    for node in ("q1", "q2"):
        settings = _settings(lab, node)
        assert (
            settings["ROCE_QOS_PFC_PRIORITY"],
            settings["ROCE_QOS_RDMA_DSCP"],
            settings["ROCE_QOS_TOS"],
        ) == ("3", "26", "106")
        assert lab.ssh(node, "cat /sys/class/net/fab0/mtu").strip() == "9000"


def test_switch_ports_are_the_nodes_fabric_netdevs(lab: OwnLab) -> None:
    switch = lab.outputs["switches"].value["leaf1"]
    assert switch["switch_qos_apply"] is True and switch["ansible_user"] == "root"
    assert switch["ansible_host"].startswith(f"198.19.{16 + lab.tag}.")
    known = (lab.state / "known_hosts").read_text()
    assert any(line.startswith(f"leaf1,{switch['ansible_host']} ") for line in known.splitlines())
    ports = _switch_ssh(lab, "ip -o link show master br0")
    assert "swp1" in ports and "swp2" in ports and "mtu 9000" in ports, ports
    for node in ("q1", "q2"):
        fabric = lab.hosts()[node]["fabric_address"]
        assert fabric.startswith(f"198.19.{48 + lab.tag}."), fabric
        link = json.loads(lab.ssh(node, "ip -j addr show dev fab0"))[0]
        assert link["mtu"] == 9000 and [
            a["local"] for a in link["addr_info"] if a["family"] == "inet"
        ] == [fabric]
    assert "fab0" not in lab.ssh("qctl", "ip -o link show")  # no RoCE HCA: no port
    from fabric.lab.podman import exists

    assert not exists("network", f"{lab.name}-fabric")  # no podman bridge for the fabric


def test_every_check_passes_through_the_switch(lab: OwnLab) -> None:
    started = time.monotonic()
    results = lab.checks("")
    MEASURED["checks_s"] = round(time.monotonic() - started, 1)
    outcomes: dict[str, int] = {}
    for r in results.values():
        outcomes[r.outcome] = outcomes.get(r.outcome, 0) + 1
    MEASURED["checks"] = outcomes
    bad = {k: r.message for k, r in results.items() if r.outcome not in ("passed", "skipped")}
    assert bad == {}, bad
    for hop in ("q1/fab0-leaf1/swp1", "q2/fab0-leaf1/swp2"):
        for check in ("test_hop_mtu", "test_hop_dscp_map", "test_hop_lossless_class"):
            assert results[f"{check}[{hop}]"].outcome == "passed", (check, hop)
    assert results["test_path_mtu[q1->q2]"].outcome == "passed"
    assert results["test_path_mtu[q2->q1]"].outcome == "passed"
    skipped = {k: r.message for k, r in results.items() if r.outcome == "skipped"}
    MEASURED["skipped"] = skipped
    ecn = results["test_hop_ecn[q2/fab0-leaf1/swp2]"]
    assert ecn.outcome == "skipped" and "sch_red" in ecn.message, ecn


def test_second_up_changes_nothing(lab: OwnLab) -> None:
    started = time.monotonic()
    result = lab.stack.up(on_output=lambda _: None, expect_no_changes=True)
    MEASURED["second_up_s"] = round(time.monotonic() - started, 1)
    changes = {k: v for k, v in (result.summary.resource_changes or {}).items() if k != "same"}
    assert changes == {}, changes


def test_inconsistent_tos_is_refused_before_anything_changes(lab: OwnLab) -> None:
    lab.set_spec(_spec(lab.tag, pfc=4, dscp=24, tos=106))
    proc = _qos_change(lab)
    assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "fabric.roce.roce_tos" in proc.stderr and "use 98" in proc.stderr, proc.stderr
    assert _settings(lab, "q1")["ROCE_QOS_PFC_PRIORITY"] == "3"


def test_changed_settings_are_applied_then_idempotent(lab: OwnLab) -> None:
    lab.set_spec(_spec(lab.tag, pfc=4, dscp=24))
    started = time.monotonic()
    first = _qos_change(lab)
    MEASURED["qos_change_first_s"] = round(time.monotonic() - started, 1)
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    assert all(n > 0 for n in _changed(first.stdout).values()), first.stdout
    assert "Apply the RoCE QoS settings through the systemd unit.: changed q[1-2]" in first.stderr
    for node in ("q1", "q2"):
        settings = _settings(lab, node)
        assert (
            settings["ROCE_QOS_PFC_PRIORITY"],
            settings["ROCE_QOS_RDMA_DSCP"],
            settings["ROCE_QOS_TOS"],
        ) == ("4", "24", "98")
    MEASURED["qos_change_first_changed"] = _changed(first.stdout)
    started = time.monotonic()
    second = _qos_change(lab)
    MEASURED["qos_change_second_s"] = round(time.monotonic() - started, 1)
    assert second.returncode == 0, second.stdout[-3000:] + second.stderr[-3000:]
    assert _changed(second.stdout) == {"q1": 0, "q2": 0, "leaf1": 0}, second.stdout
    hops = lab.checks("test_hop_ or test_path_mtu")
    bad = {k: r.message for k, r in hops.items() if r.outcome not in ("passed", "skipped")}
    assert bad == {}, bad
    assert hops["test_hop_dscp_map[q2/fab0-leaf1/swp2]"].outcome == "passed"


def test_a_recreated_node_gets_its_port_again(lab: OwnLab) -> None:
    """A node container gone: ``pulumi up --refresh`` creates it again and the switch wires
    its port again (the veth pair went with the old container's namespace)."""
    from fabric.lab.node import remove_node

    remove_node(lab.hosts()["q2"]["container"])
    assert "swp2" not in _switch_ssh(lab, "ip -o link show master br0")
    started = time.monotonic()
    lab.stack.up(on_output=lambda _: None, refresh=True)
    MEASURED["recreate_node_up_s"] = round(time.monotonic() - started, 1)
    assert "swp2" in _switch_ssh(lab, "ip -o link show master br0")
    target = lab.hosts()["q2"]["fabric_address"]
    # q1 still has q2's old MAC (a new veth): until its neighbour entry is found stale and
    # resolved again (seconds), its first frames go nowhere, as after a real NIC swap.
    lab.ssh("q1", f"ping -c 1 -w 30 {target}")
    out = lab.ssh("q1", f"ping -M do -s 8972 -c 3 -W 2 {target}")
    assert " 0% packet loss" in out, out
