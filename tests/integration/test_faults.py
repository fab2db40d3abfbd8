"""Fault injection: each fault makes the right check fail, naming the right host, HCA, switch
and port, and restoring it makes the check pass again.

The tests bring up their own small lab (two compute nodes and two SMs on one leaf) through
the Automation API, without the hand-off; the ``subnet_manager`` role alone then starts the
OpenSMs (sm1 priority 14, sm2 priority 10). Each fault is injected once per module fixture;
the check suite (``run_checks`` with a ``-k`` selection) runs while it is in place and again
after it is restored.

The link checks are the fabric sweep's (``checks/test_sweep.py``: one vantage host, sm1,
judges every cable), so a fault on n1's cable is named from the switch port it faces.

What is simulated: link faults are ibsim console commands (``Unlink``/``Link``), the speed
fault is real SMP Sets (``ibportstate espeed``) that ibsim answers, the SM fault stops the
real OpenSM unit. The MTU of a RoCE netdev is not covered here: the InfiniBand lab has no
fabric netdev; ``test_fault_mtu.py`` covers it on a RoCE lab of its own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from fabric.lab.faults import set_link_speed, start_sm, stop_sm
from fabric.topology.ibsim_clients import bound_udp_ports
from fabric.topology.ibsim_console import IbsimConsole
from fabric.verify.report import RED
from tests.integration.labkit import OwnLab, own_lab

pytestmark = pytest.mark.integration

SETTLE_SECONDS = 90

LINK_CHECKS = (
    "test_port_state_active or test_port_physical_state_linkup or test_declared_link_discovered"
)
SM_CHECKS = "test_sm_answers or test_single_master or test_host_sees_master"
#: The sweep judges a cable's speed by discovering it (``checks/test_sweep.py``): no per-host
#: rate check runs where the sweep judges the port.
SPEED_CHECKS = "test_declared_link_discovered"


def _spec(tag: int) -> dict[str, Any]:
    return {
        "name": "ryfault",
        "target": "lab",
        "nodes": [
            {"names": "n[1-2]", "role": "compute", "hcas": [{"device": "mlx5_0"}]},
            {"names": "sm[1-2]", "role": "sm", "hcas": [{"device": "mlx5_0"}]},
        ],
        "fabric": {
            "kind": "infiniband",
            "mtu": 4096,
            "topology": {
                "kind": "fat-tree",
                "leaves": 1,
                "nodes_per_leaf": 4,
                "ports_per_switch": 8,
            },
            "infiniband": {
                "sweep_interval": 5,
                "subnet_managers": [
                    {"host": "sm1", "priority": 14},
                    {"host": "sm2", "priority": 10},
                ],
            },
        },
        "management": {"subnet": f"198.18.{160 + tag}.0/24"},
        "bmc": {"subnet": f"198.18.{180 + tag}.0/24"},
        "slurm": {"controller": "sm1"},
        "lab": {"bmc_port": 19200 + 2 * tag, "ibsim_port": 17800 + 16 * tag},
    }


SM_PLAYBOOK = """---
- name: Run the InfiniBand subnet managers (fault-test lab).
  hosts: subnet_managers
  gather_facts: true
  roles:
    - role: subnet_manager
"""


class Lab:
    """The fault-test lab (:class:`OwnLab`) and its ibsim console."""

    def __init__(self, own: OwnLab) -> None:
        self.own = own
        self.unlinked_dot = ""
        self.console = IbsimConsole(own.state / "ibsim.console", own.state / "logs" / "ibsim.log")

    def failed(self, select: str) -> dict[str, str]:
        """Run the selected checks; return ``name[param]`` -> failure message of each failed one."""
        return self.own.failed_checks(select)

    def settle(self, select: str, done: Callable[[dict[str, str]], bool]) -> dict[str, str]:
        """Re-run the checks until ``done(failed)`` (bounded); return the last failures."""
        return self.own.settle_checks(select, done, seconds=SETTLE_SECONDS)

    def host(self, name: str) -> Any:
        return self.own.testinfra_host(name)

    def alive_ports(self, name: str, ports: list[int]) -> set[int]:
        return bound_udp_ports(self.host(name).run("ss -Huan").stdout) & set(ports)


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    from fabric.handoff.runner import run_playbook
    from fabric.spec import load_spec

    with own_lab(tmp_path_factory, "ryfault", _spec) as own:
        book = own.root / "sm.yml"
        book.write_text(SM_PLAYBOOK)
        result = run_playbook(
            book,
            stack=own.name,
            spec=load_spec(own.stack_file),
            state_root=own.state_root,
            artifacts_root=own.root / "artifacts",
            emit=lambda _: None,
        )
        assert result.ok, result.summary()
        lab = Lab(own)
        healthy = lab.settle(f"{LINK_CHECKS} or {SM_CHECKS} or {SPEED_CHECKS}", lambda f: not f)
        assert not healthy, f"the fault-test lab is not healthy before any fault: {healthy}"
        yield lab


# -- (a) a pulled cable ------------------------------------------------------------------------

UNLINKED = ("n1", "mlx5_0", 1, "leaf01", 1)


@pytest.fixture(scope="module")
def unlinked(lab: Lab) -> tuple[dict[str, str], dict[str, str]]:
    """(failures with n1's cable pulled, failures after it is cabled again and swept).

    The fabric picture of the run with the cable pulled is kept as ``lab.unlinked_dot``.
    """
    host, device, port, switch, switch_port = UNLINKED
    lab.console.unlink(host, device, port)
    try:
        during = lab.settle(
            LINK_CHECKS, lambda f: any(k.startswith("test_port_state_active[n1/") for k in f)
        )
        lab.unlinked_dot = (lab.own.root / "reports" / lab.own.name / "fabric.dot").read_text()
    finally:
        lab.console.link(host, device, port, switch, switch_port)
    after = lab.settle(LINK_CHECKS, lambda f: not f)
    return during, after


@pytest.mark.parametrize(
    ("check", "named"),
    [
        (
            "test_port_state_active[n1/mlx5_0/1]",
            ["n1", "mlx5_0", "port 1", "leaf01 port 1", "state Down"],
        ),
        (
            "test_port_physical_state_linkup[n1/mlx5_0/1]",
            ["n1", "mlx5_0", "leaf01 port 1", "physical state Polling"],
        ),
        (
            "test_declared_link_discovered[leaf01/1-n1/mlx5_0/1]",
            ["missing link", "n1 mlx5_0 port 1", "leaf01 port 1"],
        ),
    ],
)
def test_unlinked_port_fails_naming_node_hca_switch_and_port(
    unlinked: tuple[dict[str, str], dict[str, str]], check: str, named: list[str]
) -> None:
    during, _ = unlinked
    assert check in during and all(n in during[check] for n in named), (
        f"{check}: {during.get(check)}; all: {during}"
    )


def test_fabric_picture_draws_the_pulled_cable_red(lab: Lab, unlinked: Any) -> None:
    edges = [line for line in lab.unlinked_dot.splitlines() if " -- " in line]
    pulled = [e for e in edges if '"leaf01"' in e and "n1" in e]
    others = [e for e in edges if e not in pulled]
    assert pulled and all(f'color="{RED}"' in e for e in pulled), pulled
    assert others and not any(f'color="{RED}"' in e for e in others), others


def test_unlinked_port_fails_only_its_own_checks(
    unlinked: tuple[dict[str, str], dict[str, str]],
) -> None:
    during, _ = unlinked
    assert all("n1/" in key for key in during), during


def test_relinked_port_passes_after_a_sweep(
    unlinked: tuple[dict[str, str], dict[str, str]],
) -> None:
    _, after = unlinked
    assert after == {}


# -- (b) the master SM stops -------------------------------------------------------------------


@pytest.fixture(scope="module")
def sm_stopped(lab: Lab, unlinked: Any) -> tuple[dict[str, str], dict[str, str], dict[str, str]]:
    """(failures right after sm1's OpenSM stops, after sm2 took over, after sm1 is back)."""
    sm1 = lab.host("sm1")
    # A dead SM-class client (a killed ibping -S) left registered kept the standby's takeover
    # sweep from finishing in the lab; drop any before the master stops.
    for name in ("n1", "n2", "sm1", "sm2"):
        lab.console.reap(name, lab.alive_ports)
    stop_sm(sm1)
    try:
        lab.console.reap("sm1", lab.alive_ports)
        during = lab.failed(SM_CHECKS)
        taken_over = lab.settle(SM_CHECKS, lambda f: set(f) == {"test_sm_answers[sm1]"})
    finally:
        # sm1 comes back beside the MASTER sm2: sm2 hands mastership over to the higher
        # priority (HANDOVER), which completes now that the lab's umad shim times MADs out.
        start_sm(sm1)
    back = lab.settle(SM_CHECKS, lambda f: not f)
    return during, taken_over, back


def test_stopped_master_fails_the_sm_check_naming_it(
    sm_stopped: tuple[dict[str, str], ...],
) -> None:
    during = sm_stopped[0]
    assert "test_sm_answers[sm1]" in during and "SM on sm1" in during["test_sm_answers[sm1]"], (
        during
    )


def test_standby_takes_over_as_the_only_master(sm_stopped: tuple[dict[str, str], ...]) -> None:
    taken_over = sm_stopped[1]
    assert set(taken_over) == {"test_sm_answers[sm1]"}, taken_over


def test_restarted_master_passes_again(sm_stopped: tuple[dict[str, str], ...]) -> None:
    assert sm_stopped[2] == {}


# -- (d) a link trained below its declared speed -----------------------------------------------


@pytest.fixture(scope="module")
def slow_link(lab: Lab, sm_stopped: Any) -> tuple[dict[str, str], dict[str, str]]:
    """(failures with n2's cable held at EDR, failures after HDR is enabled again)."""
    n2 = lab.host("n2")
    set_link_speed(n2, 1, 2, "EDR")
    try:
        during = lab.settle(SPEED_CHECKS, lambda f: bool(f))
    finally:
        set_link_speed(n2, 1, 2, "HDR")
    after = lab.settle(SPEED_CHECKS, lambda f: not f)
    return during, after


@pytest.mark.parametrize(
    ("check", "named"),
    [
        (
            "test_declared_link_discovered[leaf01/2-n2/mlx5_0/1]",
            ["wrong speed", "n2 mlx5_0 port 1", "leaf01 port 2", "4xEDR", "declared 4xHDR"],
        ),
    ],
)
def test_slow_link_fails_naming_host_hca_switch_and_port(
    slow_link: tuple[dict[str, str], dict[str, str]], check: str, named: list[str]
) -> None:
    during, _ = slow_link
    assert check in during and all(n in during[check] for n in named), (
        f"{check}: {during.get(check)}; all: {during}"
    )


def test_slow_link_restored_passes(slow_link: tuple[dict[str, str], dict[str, str]]) -> None:
    assert slow_link[1] == {}
