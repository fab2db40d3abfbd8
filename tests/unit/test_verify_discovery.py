"""Discovery findings: real ibnetdiscover output of the lab (healthy and with injected faults,
tests/fixtures/ibnetdiscover__ibsim_lab__*.txt) diffed and filed per declared cable."""

from __future__ import annotations

import pytest

from fabric.parsers.ibnetdiscover import parse
from fabric.spec import load_spec
from fabric.state import REPO_ROOT
from fabric.topology.diff import Discrepancy
from fabric.verify.discovery import EXTRA, describe, findings_for
from fabric.verify.plan import CheckPlan


def _plan() -> CheckPlan:
    spec = load_spec(REPO_ROOT / "Pulumi.lab.yaml")
    return CheckPlan(spec=spec, hosts=list(spec.hosts))


def _findings(n: int) -> dict[str, list[Discrepancy]]:
    text = (REPO_ROOT / f"tests/fixtures/ibnetdiscover__ibsim_lab__{n}.txt").read_text()
    return findings_for(_plan(), parse(text))


def test_healthy_lab_has_no_findings() -> None:
    assert _findings(1) == {}


def test_every_declared_link_id_is_a_check_parameter() -> None:
    ids = {link.id for link in _plan().declared_links}
    assert set(_findings(2)) - {EXTRA} <= ids


@pytest.mark.parametrize(
    ("link_id", "kind", "named"),
    [
        (
            "leaf01/2-gpu02/mlx5_0/1",
            "miscabled",
            ["gpu02", "mlx5_0", "leaf01 port 7", "leaf01 port 2"],
        ),
        ("leaf01/4-gpu04/mlx5_0/1", "wrong_width", ["gpu04", "mlx5_0", "leaf01 port 4", "1xHDR"]),
        ("leaf01/5-gpu05/mlx5_0/1", "wrong_speed", ["gpu05", "mlx5_0", "leaf01 port 5", "4xEDR"]),
        ("leaf02/2-gpu07/mlx5_0/1", "missing", ["gpu07", "mlx5_0", "leaf02 port 2"]),
    ],
)
def test_fault_is_filed_under_its_declared_link(link_id: str, kind: str, named: list[str]) -> None:
    items = _findings(2)[link_id]
    assert [i.kind for i in items] == [kind] and all(n in describe(items) for n in named), describe(
        items
    )


def test_undeclared_cable_is_an_extra_finding_naming_both_switch_ports() -> None:
    (item,) = _findings(2)[EXTRA]
    assert item.kind == "extra" and "leaf01 port 20 <-> leaf02 port 20" in item.message


def test_no_topology_is_refused() -> None:
    lab = load_spec(REPO_ROOT / "Pulumi.lab.yaml")
    spec = lab.model_copy(update={"fabric": lab.fabric.model_copy(update={"topology": None})})
    with pytest.raises(ValueError, match="no fabric topology"):
        findings_for(
            CheckPlan(spec=spec, hosts=list(spec.hosts)),
            parse((REPO_ROOT / "tests/fixtures/ibnetdiscover__ibsim_lab__1.txt").read_text()),
        )
