"""``railyard lab fault``: what it refuses before touching the lab (one line, exit 2), what it
records, and a lab that refuses a fault (exit 1, nothing recorded). The state folder is a
lab's as ``pulumi up`` writes it: ``lab.json``, the inventory's subnet managers and the ibsim
net file rendered from ``Pulumi.lab.yaml``; its ibsim is not running. The faults' effect on a
running lab is proven by README's tour (``tests/integration/test_handoff_lab.py``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from fabric.cli import main
from fabric.lab.faults import Fault, cable_of, load_faults, save_faults
from fabric.spec import load_spec
from fabric.state import REPO_ROOT, StateLayout
from fabric.topology.from_spec import graph_from_spec
from fabric.topology.ibsim import render_net

STACK = "faultlab"
NODES = ("gpu01", "gpu02", "sm1")


@pytest.fixture
def stack(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A lab's state folder (no ibsim running); returns the folder."""
    monkeypatch.setenv("RAILYARD_STATE_DIR", str(tmp_path))
    folder = tmp_path / STACK
    folder.mkdir()
    nodes = [
        {
            "name": name,
            "address": f"198.18.0.{10 + i}",
            "container": f"{STACK}-{name}",
            "sim_host": f"{name}:mlx5_0",
            "bmc_url": "http://198.18.1.1:19000",
            "system_id": "x",
        }
        for i, name in enumerate(NODES)
    ]
    (folder / "lab.json").write_text(json.dumps({"stack": STACK, "nodes": nodes}))
    inventory = {"all": {"children": {"subnet_managers": {"hosts": {"sm1": {}}}}}}
    (folder / "inventory.yml").write_text(yaml.safe_dump(inventory))
    net = render_net(graph_from_spec(load_spec(REPO_ROOT / "Pulumi.lab.yaml")))
    (folder / "ibsim.net").write_text(net)
    return folder


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["lab", "fault", *argv, "--stack", STACK])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["pull", "gpu99"], "no node 'gpu99' in this lab; its nodes: gpu01, gpu02, sm1"),
        (["pull", "gpu01:mlx5_1"], "gpu01 has HCA mlx5_0, not mlx5_1; write gpu01:mlx5_0"),
        (["pull", "gpu01:mlx5_0:one"], "port 'one' in 'gpu01:mlx5_0:one' is not a number"),
        (["pull", "gpu01:mlx5_0:2"], "gpu01:mlx5_0 port 2 has no cable"),
        (["speed", "gpu01", "QDR"], "speed 'QDR': use one of FDR, EDR, HDR"),
        (["width", "gpu01", "3x"], "width '3x': use one of 1x, 2x, 4x, 8x, 12x"),
        (["counter", "gpu01", "Bogus"], "counter 'Bogus': use one of SymbolErrorCounter"),
        (["counter", "gpu01", "--value", "0"], "counter value '0': a whole number from 1"),
        (["sm", "gpu01"], "gpu01 runs no subnet manager; this lab's: sm1"),
        (["mtu", "leaf01:p1", "1500"], "this lab has no Ethernet switch"),
        (["restore"], "name one fault (restore KIND SUBJECT) or give --all"),
        (["restore", "pull"], "restore pull needs its subject"),
        (["restore", "pull", "gpu01"], "pull gpu01:mlx5_0:1 is not injected; injected now: none"),
    ],
)
def test_bad_input_is_one_line_exit_2_and_records_nothing(
    stack: Path, capsys: pytest.CaptureFixture[str], argv: list[str], named: str
) -> None:
    code, out, err = _run(capsys, *argv)
    assert (code, out) == (2, "")
    assert len(err.strip().splitlines()) == 1 and named in err, err
    assert "Traceback" not in err
    assert not StateLayout.at(stack).lab_faults.exists()


def test_no_lab_is_exit_2_naming_make_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("RAILYARD_STATE_DIR", str(tmp_path))
    (tmp_path / STACK).mkdir()
    code, _, err = _run(capsys, "list")
    assert code == 2 and "lab.json not found: bring the lab up first (make up)" in err


def test_list_of_a_lab_without_faults(stack: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(capsys, "list") == (0, "no fault injected\n", "")
    assert main(["lab", "fault", "list", "--stack", STACK, "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"injected": []}


def test_a_lab_that_refuses_is_exit_1_and_nothing_is_recorded(
    stack: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _run(capsys, "pull", "gpu01")
    assert (code, out) == (1, "")
    assert "the lab refused" in err and "ibsim.console is not an ibsim console FIFO" in err
    assert not StateLayout.at(stack).lab_faults.exists()


def test_recorded_faults_are_listed_refused_twice_and_kept_when_restore_fails(
    stack: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pulled = Fault(
        kind="pull",
        subject="gpu01:mlx5_0:1",
        restore={"switch": "leaf01", "switch_port": 1, "width_mask": 2, "espeed_mask": 7},
    )
    slow = Fault(kind="speed", subject="gpu02:mlx5_0:1", value="EDR")
    save_faults(StateLayout.at(stack).lab_faults, [pulled, slow])
    assert _run(capsys, "list") == (0, "pull gpu01:mlx5_0:1\nspeed gpu02:mlx5_0:1 EDR\n", "")
    code, _, err = _run(capsys, "pull", "gpu01:mlx5_0")
    assert (
        code == 2 and "injected already; put it back first: railyard lab fault restore pull" in err
    )
    code, _, err = _run(capsys, "restore", "pull", "gpu01")
    assert code == 1 and "not an ibsim console FIFO" in err
    assert load_faults(StateLayout.at(stack).lab_faults) == [pulled, slow]


def test_an_unreadable_fault_record_is_exit_2(
    stack: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    StateLayout.at(stack).lab_faults.write_text("{not json")
    code, _, err = _run(capsys, "list")
    assert code == 2 and "lab-faults.json: unreadable" in err and "make refresh" in err


def test_save_of_no_fault_removes_the_record(stack: Path) -> None:
    path = StateLayout.at(stack).lab_faults
    save_faults(path, [Fault(kind="sm", subject="sm1")])
    assert load_faults(path) == [Fault(kind="sm", subject="sm1")]
    save_faults(path, [])
    assert not path.exists() and load_faults(path) == []


def test_a_cable_is_found_in_the_labs_net_file(stack: Path) -> None:
    net = (stack / "ibsim.net").read_text()
    # gpu01's cable: leaf01 port 1, 4x (width mask 2), HDR (extended speed mask 7)
    assert cable_of(net, "gpu01:mlx5_0", 1) == ("leaf01", 1, 2, 7)
    assert cable_of(net, "leaf01", 1) == ("gpu01:mlx5_0", 1, 2, 7)


def test_the_command_offers_every_kind_of_fault() -> None:
    from fabric.cli.lab import FAULTS
    from fabric.lab.faults import KINDS

    assert tuple(FAULTS) == KINDS
