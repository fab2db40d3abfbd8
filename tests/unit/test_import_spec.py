"""``python -m fabric import``: real ibnetdiscover captures become specs that validate and
that the declared-vs-discovered diff finds identical to the capture they came from."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from fabric.cli import main
from fabric.cli.import_ import ssh_argv
from fabric.parsers.ibnetdiscover import parse
from fabric.parsers.sminfo import parse as parse_sminfo
from fabric.spec import spec_from_mapping
from fabric.state import REPO_ROOT
from fabric.targets.existing.rules import existing_placeholder_problems
from fabric.topology.diff import diff
from fabric.topology.from_spec import graph_from_spec
from fabric.topology.importer import CaptureError, Imported, SmIdentity, import_fabric

FIXTURES = REPO_ROOT / "tests" / "fixtures"
#: Every ibnetdiscover capture that names hosts (ibtopotool__1's CAs have no description).
CAPTURES = sorted(
    p
    for p in FIXTURES.glob("ibnetdiscover__*.txt")
    # ibtopotool__1's CAs have no description; ibsim_defaults__1's default host names are
    # PLACEHOLDERs validate refuses (tests/unit/test_import_defaults.py)
    if p.name not in ("ibnetdiscover__ibtopotool__1.txt", "ibnetdiscover__ibsim_defaults__1.txt")
)


def _capture(name: str) -> str:
    return (FIXTURES / name).read_text()


@pytest.mark.parametrize("capture", CAPTURES, ids=lambda p: p.stem)
def test_capture_imports_validates_and_round_trips(capture: Path) -> None:
    graph = parse(capture.read_text())
    imported = import_fabric(graph, "imported")
    spec = spec_from_mapping(yaml.safe_load(imported.text))  # the YAML as written, comments too
    assert spec.target == "existing"
    assert {h for h, d in graph.ca_by_name if d} == set(spec.hosts)  # host CAs: "<host> <dev>"
    assert diff(graph_from_spec(spec), graph) == []
    assert len(spec.fabric.cabling) == len(graph.links)


def test_import_then_drift_is_reported() -> None:
    """The lab capture imported, then the same fabric with faults: the diff names them."""
    spec = spec_from_mapping(
        import_fabric(parse(_capture("ibnetdiscover__ibsim_lab__1.txt")), "lab").spec
    )
    found = diff(graph_from_spec(spec), parse(_capture("ibnetdiscover__ibsim_lab__2.txt")))
    kinds = {(d.kind, d.host) for d in found}
    assert ("wrong_width", "gpu04") in kinds
    assert ("wrong_speed", "gpu05") in kinds
    assert ("missing", "gpu07") in kinds
    assert ("miscabled", "gpu02") in kinds
    assert any(d.kind == "extra" for d in found)


def test_inferred_tree_and_switch_roles() -> None:
    imported = import_fabric(parse(_capture("ibnetdiscover__ibsim_lab__1.txt")), "lab")
    fabric = imported.spec["fabric"]
    assert fabric["topology"] == {
        "kind": "fat-tree",
        "leaves": 2,
        "spines": 1,
        "ports_per_switch": 64,
        "nodes_per_leaf": 5,
        "uplinks_per_leaf": 4,
        "link_width": "4x",
        "link_rate_gbps": 200,
    }
    assert {s["name"]: s["role"] for s in fabric["switches"]} == {
        "leaf01": "leaf",
        "leaf02": "leaf",
        "spine01": "spine",
    }
    assert "# fabric.topology: the fat-tree shape, inferred" in imported.text


def test_guid_only_cas_and_multi_port_hcas() -> None:
    """ibsim quirks: an unset description and a SHARP node stay GUID ends; node1's 2-port HCA
    on two leaves is one HCA with 2 ports."""
    imported = import_fabric(parse(_capture("ibnetdiscover__ibsim_quirks__1.txt")), "q")
    ends = [e for c in imported.spec["fabric"]["cabling"] for e in (c["a"], c["b"])]
    assert any("guid" in e for e in ends)
    node1 = [g for g in imported.spec["nodes"] if "node1" in g["names"].split(",")]
    assert node1[0]["hcas"] == [{"device": "HCA-1", "ports": 2, "rate_gbps": 200, "width": "4x"}]


def test_placeholders_are_marked_and_listed() -> None:
    imported = import_fabric(parse(_capture("ibnetdiscover__topograph__2.txt")), "gb200")
    for what in ("management.subnet", "fabric.mtu", "slurm", "subnet_managers", "HCA-1"):
        assert any(n.startswith("PLACEHOLDER") and what in n for n in imported.notes), what
    assert imported.text.count("PLACEHOLDER") >= 4


def test_sminfo_port_not_in_capture_is_external_by_guid() -> None:
    """A real sminfo from another fabric: its SM port is in no node of this capture, so the SM
    is external, known by its port GUID (never a railyard OpenSM on some host)."""
    sm = parse_sminfo(_capture("sminfo__ibsimparse__1.txt"))
    imported = import_fabric(parse(_capture("ibnetdiscover__ibsim_lab__1.txt")), "lab", sm)
    assert imported.spec["fabric"]["infiniband"]["subnet_managers"] == [
        {"mode": "external", "guid": "0x0000000000100001", "priority": 14}
    ]
    spec_from_mapping(yaml.safe_load(imported.text))


def _sms(imported: Imported) -> list[dict[str, object]]:
    return imported.spec["fabric"]["infiniband"]["subnet_managers"]


def test_capture_alone_never_invents_an_sm() -> None:
    """No sminfo: an external SM whose node description is the PLACEHOLDER; the spec
    validates, and pulumi up (existing_placeholder_problems) says what to fill in."""
    imported = import_fabric(parse(_capture("ibnetdiscover__ibsim_extsm__1.txt")), "ext")
    assert _sms(imported) == [
        {"mode": "external", "node_description": "PLACEHOLDER", "priority": 0}
    ]
    spec = spec_from_mapping(yaml.safe_load(imported.text))
    problems = existing_placeholder_problems(spec)
    sm = [p for p in problems if p.path.startswith("fabric.infiniband")]
    assert len(sm) == 1 and "smpquery nodedesc" in sm[0].message
    assert sm[0].path == "fabric.infiniband.subnet_managers[0].node_description"


def test_sm_on_no_cluster_host_is_external_and_validates() -> None:
    """The issue's case: the master SM (here an OpenSM standing in for UFM on a CA with no
    host name) is not on a compute host: external, by node description and port GUID."""
    graph = parse(_capture("ibnetdiscover__ibsim_extsm__1.txt"))
    sm = parse_sminfo(_capture("sminfo__ibsim_extsm__1.txt"))
    imported = import_fabric(graph, "ext", sm)
    assert _sms(imported) == [
        {
            "mode": "external",
            "node_description": "0x0002c903000000f0",
            "guid": "0x0002c903000000f1",
            "priority": 15,
        }
    ]
    spec = spec_from_mapping(yaml.safe_load(imported.text))
    assert spec.hosts.keys() == {"xn1", "xn2"}
    assert [p.path for p in existing_placeholder_problems(spec)] == ["existing.ssh"]
    assert diff(graph_from_spec(spec), graph) == []
    assert any("on no cluster host: written as external" in n for n in imported.notes)


def test_a_switch_sm_is_written_as_switch() -> None:
    sm = parse_sminfo(_capture("sminfo__ibsim_smmodes__1.txt"))
    imported = import_fabric(parse(_capture("ibnetdiscover__ibsim_lab__1.txt")), "lab", sm)
    assert _sms(imported) == [{"mode": "switch", "switch": "leaf01", "priority": 14}]
    spec_from_mapping(yaml.safe_load(imported.text))


def test_an_sm_on_a_host_is_external_unless_railyard_takes_it_over() -> None:
    graph = parse(_capture("ibnetdiscover__ibsim_lab__1.txt"))
    sm = parse_sminfo(_capture("sminfo__ibsim_smmodes__2.txt"))  # sm2's OpenSM
    imported = import_fabric(graph, "lab", sm)
    assert _sms(imported) == [
        {
            "mode": "external",
            "node_description": "sm2 mlx5_0",
            "guid": "0x0002c90302000025",
            "priority": 10,
        }
    ]
    assert any("--manage-sm" in n for n in imported.notes)
    managed = import_fabric(graph, "lab", sm, manage_sm=True)
    assert _sms(managed) == [{"host": "sm2", "priority": 10}]
    spec_from_mapping(yaml.safe_load(managed.text))


def test_manage_sm_refuses_a_switch_sm_and_no_sminfo() -> None:
    graph = parse(_capture("ibnetdiscover__ibsim_lab__1.txt"))
    switch = parse_sminfo(_capture("sminfo__ibsim_smmodes__1.txt"))
    with pytest.raises(CaptureError, match="the master SM is the switch leaf01's own"):
        import_fabric(graph, "lab", switch, manage_sm=True)
    with pytest.raises(CaptureError, match="no sminfo answer"):
        import_fabric(graph, "lab", None, manage_sm=True)


def test_smpquery_identity_names_the_sm_when_the_capture_does_not() -> None:
    sm = parse_sminfo(_capture("sminfo__ibsimparse__1.txt"))
    identity = SmIdentity(node_type="Channel Adapter", description="ufm01 HCA-1")
    imported = import_fabric(parse(_capture("ibnetdiscover__ibsim_lab__1.txt")), "l", sm, identity)
    assert _sms(imported)[0]["node_description"] == "ufm01 HCA-1"


def test_cli_capture_with_sminfo(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "spec.yaml"
    capture = FIXTURES / "ibnetdiscover__ibsim_extsm__1.txt"
    sminfo = FIXTURES / "sminfo__ibsim_extsm__1.txt"
    assert main(["import", str(capture), "--sminfo", str(sminfo), "--output", str(out)]) == 0
    assert "mode: external" in out.read_text()
    assert main(["validate", "--spec", str(out)]) == 0
    failed = FIXTURES / "sminfo__ibsimparse__3.txt"
    capsys.readouterr()
    assert main(["import", str(capture), "--sminfo", str(failed), "--output", str(out)]) == 2
    err = capsys.readouterr().err
    assert "sminfo found no SM" in err and len(err.strip().splitlines()) == 1


def test_no_host_capture_is_refused() -> None:
    with pytest.raises(CaptureError, match="names no host"):
        import_fabric(parse(_capture("ibnetdiscover__ibtopotool__1.txt")), "x")


def test_cli_writes_a_spec_that_validates(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "spec.yaml"
    capture = FIXTURES / "ibnetdiscover__superbench__1.txt"
    assert main(["import", str(capture), "--output", str(out)]) == 0
    assert "PLACEHOLDER management.subnet" in capsys.readouterr().err
    assert main(["validate", "--spec", str(out)]) == 0


@pytest.mark.parametrize(
    ("content", "expect"),
    [
        (_capture("ibnetdiscover__ibtopotool__1.txt").encode(), "names no host"),
        (b"\x7fELF\x02\x01\x01\x00\x00\x00binary", "binary"),
    ],
    ids=["no-hosts", "binary"],
)
def test_cli_bad_capture_is_one_line_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes, expect: str
) -> None:
    capture = tmp_path / "capture.txt"
    capture.write_bytes(content)
    assert main(["import", str(capture), "--output", str(tmp_path / "out.yaml")]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert len(captured.err.strip().splitlines()) == 1
    assert expect in captured.err and str(capture) in captured.err
    assert not (tmp_path / "out.yaml").exists()


def test_ssh_checks_host_keys_strictly() -> None:
    argv = ssh_argv("head1", "ibnetdiscover")
    assert [a for a in argv if a.startswith("StrictHostKeyChecking")] == [
        "StrictHostKeyChecking=yes"
    ]
    assert argv[-2:] == ["head1", "ibnetdiscover"]


def test_ssh_failure_is_one_line_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    """The real ssh client against a loopback port nobody listens on (no sshd here)."""
    assert main(["import", "--ssh", "127.0.0.1", "--timeout", "20"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert "--ssh 127.0.0.1: ibnetdiscover failed (exit 255)" in err[0]
