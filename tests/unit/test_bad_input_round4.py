"""Bad input, round 4 (issue 44 items 7 and 8, the CLI ranges of item 5, issue 45's
``import --ssh --stack``): every problem at once, OpenSM's real routing engines, options that
contradict each other, an output over its input, CRLF captures, port numbers."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from fabric.cli import main
from fabric.cli.import_ import _scrubbed, ssh_argv
from fabric.parsers.ibnetdiscover import parse as parse_ibnetdiscover
from fabric.spec import SpecError, spec_from_mapping
from fabric.state import StateLayout

ROOT = Path(__file__).resolve().parents[2]
SPECS = Path(__file__).parent / "specs" / "valid"
CAPTURE = ROOT / "tests" / "fixtures" / "ibnetdiscover__ibsim_lab__1.txt"


def base(name: str) -> dict[str, Any]:
    return yaml.safe_load((SPECS / f"{name}.yaml").read_text())


def paths(data: dict[str, Any]) -> list[str]:
    with pytest.raises(SpecError) as caught:
        spec_from_mapping(data)
    return [problem.path for problem in caught.value.problems]


def _roce(edit: Any) -> dict[str, Any]:
    data = copy.deepcopy(base("roce"))
    edit(data)
    return data


# -- item 7: every problem at once ----------------------------------------------------------

TWO_PROBLEMS = {
    "block-size-over-the-hosts+no-endpoints": (
        lambda d: (d["slurm"].update(block_size=1000), d["bmc"].pop("endpoints")),
        {"slurm.block_size", "bmc.endpoints"},
    ),
    "block-size-missing+one-endpoint-missing": (
        lambda d: (d["slurm"].pop("block_size"), d["bmc"]["endpoints"].pop("gpu1")),
        {"slurm.block_size", "bmc.endpoints.gpu1"},
    ),
    "block-size-not-a-number+endpoint-not-a-url": (
        lambda d: (
            d["slurm"].update(block_size=True),
            d["bmc"]["endpoints"]["gpu2"].update(url="ftp://x"),
        ),
        {"slurm.block_size", "bmc.endpoints.gpu2.url"},
    ),
    "block-size-zero+subnet-too-long": (
        lambda d: (d["slurm"].update(block_size=0), d["management"].update(subnet="10.1.0.0/33")),
        {"slurm.block_size", "management.subnet"},
    ),
    "undeclared-controller+bad-rail": (
        lambda d: (
            d["slurm"].update(controller="nohost"),
            d["nodes"][0]["hcas"][0].update(rail="x"),
        ),
        {"slurm.controller", "nodes[0].hcas[0].rail"},
    ),
    "password-in-a-name+no-endpoints": (
        lambda d: (
            d["slurm"]["partitions"][0].update(name="CorrectHorse!Battery#Staple42"),
            d["bmc"].pop("endpoints"),
        ),
        {"slurm.partitions[0].name", "bmc.endpoints"},
    ),
}


@pytest.mark.parametrize("case", sorted(TWO_PROBLEMS))
def test_both_problems_are_named_at_once(case: str) -> None:
    edit, expected = TWO_PROBLEMS[case]
    assert expected <= set(paths(_roce(edit)))


def test_block_size_over_a_leaf() -> None:
    data = copy.deepcopy(base("roce"))
    data["fabric"]["topology"]["nodes_per_leaf"] = 2
    data["slurm"]["block_size"] = 3
    assert "slurm.block_size" in paths(data)


# -- item 8: OpenSM's routing engines -------------------------------------------------------


@pytest.mark.parametrize("engine", ["dnup", "ftree,updn", "nue", "torus-2QoS", "file"])
def test_opensm_routing_engines_and_chains_are_accepted(engine: str) -> None:
    data = yaml.safe_load((ROOT / "examples" / "dgx-h100-ib.yaml").read_text())
    data["fabric"]["infiniband"]["routing_engine"] = engine
    assert spec_from_mapping(data).fabric.infiniband.routing_engine == engine


@pytest.mark.parametrize("engine", ["bogus", "ftree,ftree", "ftree,", "FTREE"])
def test_other_routing_engines_are_refused(engine: str) -> None:
    data = yaml.safe_load((ROOT / "examples" / "dgx-h100-ib.yaml").read_text())
    data["fabric"]["infiniband"]["routing_engine"] = engine
    assert paths(data) == ["fabric.infiniband.routing_engine"]


# -- item 8: options ------------------------------------------------------------------------


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("command", ["validate", "kubernetes"])
def test_spec_with_stack_is_refused(capsys: pytest.CaptureFixture[str], command: str) -> None:
    code, _, err = _run(capsys, command, "--spec", str(SPECS / "lab.yaml"), "--stack", "lab")
    assert code == 2 and err.count("\n") == 1 and "--spec FILE and --stack NAME" in err


def test_import_output_over_its_capture_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    capture = tmp_path / "capture.txt"
    shutil.copy(CAPTURE, capture)
    before = capture.read_bytes()
    code, _, err = _run(capsys, "import", str(capture), "--output", str(capture))
    assert code == 2 and "overwrite the capture" in err and err.count("\n") == 1
    assert capture.read_bytes() == before


def test_schema_to_a_full_disk_names_the_file(capsys: pytest.CaptureFixture[str]) -> None:
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full here")
    code, _, err = _run(capsys, "schema", "-o", "/dev/full")
    assert code == 2 and "/dev/full" in err and err.count("\n") == 1


def test_ibnetdiscover_takes_crlf_line_endings() -> None:
    text = CAPTURE.read_text()
    assert parse_ibnetdiscover(text.replace("\n", "\r\n")) == parse_ibnetdiscover(text)


@pytest.mark.parametrize("port", ["0", "65536", "99999", "-5", "http", "1e3"])
def test_watch_port_out_of_range_is_one_line(capsys: pytest.CaptureFixture[str], port: str) -> None:
    code, _, err = _run(capsys, "watch", "--port", port, "--once")
    assert code == 2 and err.count("\n") == 1 and "--port" in err


# -- import --ssh: the stack's known_hosts and key, ssh's echo filtered ------------------------


def test_import_ssh_with_a_stack_uses_its_known_hosts_and_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAILYARD_STATE_DIR", str(tmp_path))
    layout = StateLayout("lab")
    layout.ssh_key.parent.mkdir(parents=True)
    layout.ssh_key.write_text("key")
    argv = ssh_argv("root@198.18.0.11", "ibnetdiscover", "lab")
    assert f"UserKnownHostsFile={layout.known_hosts}" in argv
    assert argv[argv.index("-i") + 1] == str(layout.ssh_key)
    assert "StrictHostKeyChecking=yes" in argv
    assert "UserKnownHostsFile" not in " ".join(ssh_argv("root@198.18.0.11", "sminfo"))


def test_ssh_error_line_never_echoes_the_target_in_any_case() -> None:
    target = "AKIAIOSFODNN7ABCDEFG"
    line = f"ssh: Could not resolve hostname {target.lower()}: Name or service not known"
    assert target.lower() not in _scrubbed(line, target).lower()


@pytest.mark.parametrize(
    "target", ["CorrectHorse!Battery#Staple42@127.0.0.1", "ghp_" + "aB3" * 12 + "@127.0.0.1"]
)
def test_import_ssh_refuses_a_secret_before_running_ssh(
    capsys: pytest.CaptureFixture[str], target: str
) -> None:
    code, out, err = _run(capsys, "import", "--ssh", target)
    assert code == 2 and err.count("\n") == 1
    assert target.split("@")[0][:12] not in out + err


# -- topology --from-gce-instances: gcloud's list, or the REST response ------------------------

GCE = ROOT / "tests" / "fixtures" / "gce_instances_list__ai_hypercomputer__example.json"


def test_topology_takes_the_rest_shaped_gce_fixture(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, rest, _ = _run(capsys, "topology", "--from-gce-instances", str(GCE))
    assert code == 0 and "Nodes=vm-01" in rest and "Nodes=vm-02" in rest
    listed = tmp_path / "list.json"  # gcloud --format=json prints the items as a list
    listed.write_text(json.dumps(json.loads(GCE.read_text())["items"]))
    assert _run(capsys, "topology", "--from-gce-instances", str(listed))[:2] == (0, rest)


def test_topology_refuses_other_json_in_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    other = tmp_path / "other.json"
    other.write_text('{"kind": "compute#instance"}')
    code, _, err = _run(capsys, "topology", "--from-gce-instances", str(other))
    assert code == 2 and err.count("\n") == 1 and "instances.list" in err


# -- ibnetdiscover's numbers in range ---------------------------------------------------------

_LAB = CAPTURE.read_text()
OUT_OF_RANGE = {
    "lid-70000": ('"gpu01 mlx5_0" lid 4 4xHDR', '"gpu01 mlx5_0" lid 70000 4xHDR', "LID"),
    "switch-lid-70000": ("enhanced port 0 lid 2 lmc 0", "enhanced port 0 lid 70000 lmc 0", "LID"),
    "lmc-9": ("enhanced port 0 lid 2 lmc 0", "enhanced port 0 lid 2 lmc 9", "LMC"),
    "port-999": ('[1]\t"H-0002c90302000000"', '[999]\t"H-0002c90302000000"', "port number"),
    "remote-port-999": ('"H-0002c90302000000"[1]', '"H-0002c90302000000"[999]', "port number"),
    "ports-300": ('Switch\t64 "S-0002c90301000000"', 'Switch\t300 "S-0002c90301000000"', "count"),
    # the parser reads every "lid N" of the text, in a description or a comment too
    "description-lid": ('"gpu01 mlx5_0" lid 4 4xHDR', '"gpu01 lid 70000" lid 4 4xHDR', "LID"),
    "comment-lid": ("# Topology file", "# lid 70000 Topology file", "LID"),
}


@pytest.mark.parametrize("case", sorted(OUT_OF_RANGE))
def test_ibnetdiscover_numbers_out_of_range_name_their_line(case: str) -> None:
    from fabric.parsers.ibnetdiscover import IbnetdiscoverError

    old, new, what = OUT_OF_RANGE[case]
    assert old in _LAB
    with pytest.raises(IbnetdiscoverError) as caught:
        parse_ibnetdiscover(_LAB.replace(old, new, 1))
    assert what in str(caught.value) and "line " in str(caught.value)


def test_ibnetdiscover_largest_unicast_lid_is_accepted() -> None:
    text = _LAB.replace('"gpu01 mlx5_0" lid 4 4xHDR', '"gpu01 mlx5_0" lid 49151 4xHDR', 1)
    assert parse_ibnetdiscover(text).cas


@pytest.mark.parametrize("case", sorted(OUT_OF_RANGE))
def test_the_compiled_writer_declines_numbers_out_of_range(case: str, tmp_path: Path) -> None:
    """``topology --from-ibnetdiscover FILE`` goes straight to the compiled writer: it declines
    what the parser refuses, so the command names the line as the parser does, exit 2."""
    import subprocess
    import sys

    from fabric.parsers.ibnetdiscover.tree import _tree_compiled, compiled_tree_conf

    assert _tree_compiled is not None, "the compiled writer is not built: run make bootstrap"
    old, new, what = OUT_OF_RANGE[case]
    bad = _LAB.replace(old, new, 1)
    assert compiled_tree_conf(_LAB) is not None
    assert compiled_tree_conf(bad) is None
    capture = tmp_path / "capture.txt"
    capture.write_text(bad)
    done = subprocess.run(
        [sys.executable, "-m", "fabric", "topology", "--from-ibnetdiscover", str(capture)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        check=False,
    )
    assert (done.returncode, done.stdout) == (2, "")
    assert what in done.stderr and "line " in done.stderr and done.stderr.count("\n") == 1
