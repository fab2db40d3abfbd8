"""Default node descriptions in imports (issue 42): CAs whose description was set before the
host had its name ("localhost mlx5_0", "ubuntu mlx5_0", MLNX_OFED's "<host> HCA-N") are
PLACEHOLDERs naming the GUID and the fix, never hosts named localhost or ubuntu.

``ibnetdiscover__ibsim_defaults__1.txt`` is ibnetdiscover's output against ibsim serving
``tests/fixtures/ibsim/defaults.net`` (SOURCES.md); the ``HCA-N`` captures are public ones.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from fabric.cli import main
from fabric.hostlist import expand
from fabric.parsers.ibnetdiscover import parse
from fabric.spec import SpecError, spec_from_mapping
from fabric.state import REPO_ROOT
from fabric.topology.importer import import_fabric, placeholder_host

FIXTURES = REPO_ROOT / "tests" / "fixtures"
DEFAULTS = FIXTURES / "ibnetdiscover__ibsim_defaults__1.txt"
#: The CAs of the capture whose description names the OS's default host.
DEFAULT_CAS = {
    "0xb8e92403009cd400": "localhost mlx5_0",
    "0xb8e92403009cd500": "localhost mlx5_0",
    "0xb8e92403009cd600": "localhost.localdomain mlx5_0",
    "0xb8e92403009cd900": "ubuntu mlx5_0",
}


def test_default_host_names_become_placeholders_naming_guid_and_fix() -> None:
    imported = import_fabric(parse(DEFAULTS.read_text()), "defaults")
    names = [n for g in imported.spec["nodes"] for n in g["names"].split(",")]
    assert not any(n.lower().startswith(("localhost", "ubuntu")) for n in names)
    hosts = set(imported.spec["existing"]["ssh"])
    for guid, description in DEFAULT_CAS.items():
        placeholder = placeholder_host(guid)
        assert placeholder in names and placeholder in hosts
        note = next(n for n in imported.notes if placeholder in n and "node description" in n)
        assert note.startswith(f"PLACEHOLDER nodes {placeholder}: CA {guid}")
        assert repr(description) in note and "rdma-ndd" in note and "real name" in note
        assert f"# PLACEHOLDER {placeholder}: CA {guid}" in imported.text
    # the two machines that both call themselves "localhost mlx5_0" stay two hosts
    ends = [e for c in imported.spec["fabric"]["cabling"] for e in (c["a"], c["b"])]
    assert {e["host"] for e in ends if "host" in e} == {
        *map(placeholder_host, DEFAULT_CAS),
        "dgx01",
        "gpu01",
        "gpu02",
        "gpu03",
        "gpu04",
    }
    assert not any(
        n.startswith("PLACEHOLDER existing.ssh") and "placeholder-" in n for n in imported.notes
    )


def test_validate_refuses_a_default_host_until_it_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "spec.yaml"
    assert main(["import", str(DEFAULTS), "--output", str(out)]) == 0
    assert "PLACEHOLDER nodes PLACEHOLDER_b8e92403009cd400" in capsys.readouterr().err
    with pytest.raises(SpecError) as refused:
        spec_from_mapping(yaml.safe_load(out.read_text()))
    paths = {p.path for p in refused.value.problems}
    assert {p for p in paths if p.startswith("nodes[")} and all(
        "PLACEHOLDER_" in p.message for p in refused.value.problems if p.path.startswith("nodes[")
    )
    assert main(["validate", "--spec", str(out)]) != 0
    err = capsys.readouterr()
    assert "PLACEHOLDER_b8e92403009cd400" in err.out + err.err
    # once each placeholder holds the host's name, the spec validates
    text = out.read_text()
    for i, guid in enumerate(DEFAULT_CAS):
        text = text.replace(placeholder_host(guid), f"node{i + 1:02d}")
    out.write_text(text)
    assert main(["validate", "--spec", str(out)]) == 0


@pytest.mark.parametrize(
    ("capture", "host", "device", "guid"),
    [
        ("ibnetdiscover__ibtopotool__2.txt", "compute-00-01", "HCA-1", "0x0002c902002789ac"),
        ("ibnetdiscover__ibtopotool__3.txt", "r-ufm216", "HCA-2", "0xe41d2d030061f957"),
        ("ibnetdiscover__topograph__2.txt", "dgx-gb200-n01-c1", "HCA-1", "0xb8e92403009ca838"),
        ("ibnetdiscover__ibsim_defaults__1.txt", "dgx01", "HCA-2", "0xb8e92403009cd800"),
    ],
)
def test_hca_n_devices_are_flagged_and_kept_as_the_fabric_names_them(
    capture: str, host: str, device: str, guid: str
) -> None:
    """MLNX_OFED's "<host> HCA-N": the host is real; which mlx5_* is HCA-N the capture
    cannot tell (no device index), so the device stays HCA-N, the name the sweep matches, and
    a PLACEHOLDER note names the GUID and rdma-ndd."""
    imported = import_fabric(parse((FIXTURES / capture).read_text()), "dgx")
    group = next(g for g in imported.spec["nodes"] if host in expand(g["names"]))
    assert device in [h["device"] for h in group["hcas"]]
    note = next(n for n in imported.notes if n.startswith(f"PLACEHOLDER nodes {host} {device}: CA"))
    assert guid in note and "rdma-ndd" in note and "mlx5_" in note
    if capture != DEFAULTS.name:
        spec_from_mapping(yaml.safe_load(imported.text))  # the public captures still validate
