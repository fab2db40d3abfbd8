"""Consistency the spec checks (issue 44 item 6, the shared parts): a cable's width and speed
carry its HCA's rate, host names are one machine in any case, every address range holds the
nodes it must (fabric/spec/consistency.py)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from fabric.spec import SpecError, spec_from_mapping
from fabric.spec.constants import IB_LANE_RATES, WIDTH_LANES

ROOT = Path(__file__).resolve().parents[2]
DGX = yaml.safe_load((ROOT / "examples" / "dgx-h100-ib.yaml").read_text())
SPECS = Path(__file__).parent / "specs" / "valid"


def problems(data: dict[str, Any]) -> dict[str, str]:
    try:
        spec_from_mapping(data)
    except SpecError as error:
        return {p.path: p.message for p in reversed(error.problems)}
    return {}


def cabled(width: str, speed: str, rate: int = 400) -> dict[str, Any]:
    """The DGX example with one cable from dgx01's mlx5_0 (``rate`` Gb/s) to a leaf."""
    data = copy.deepcopy(DGX)
    data["nodes"][0]["hcas"][0]["rate_gbps"] = rate
    data["fabric"]["switches"] = [{"name": "leaf1"}]
    data["fabric"]["cabling"] = [
        {
            "a": {"switch": "leaf1", "port": 1},
            "b": {"host": "dgx01", "hca": "mlx5_0", "port": 1},
            "width": width,
            "speed": speed,
        }
    ]
    return data


@pytest.mark.parametrize(("width", "speed"), [("4x", "HDR"), ("1x", "NDR"), ("4x", "EDR")])
def test_a_cable_below_its_hcas_rate_is_refused(width: str, speed: str) -> None:
    found = problems(cabled(width, speed))
    assert "fabric.cabling[0].speed" in found
    assert "dgx01 mlx5_0" in found["fabric.cabling[0].speed"]


@pytest.mark.parametrize(("width", "speed"), [("4x", "NDR"), ("4x", "XDR"), ("8x", "HDR")])
def test_a_cable_that_carries_the_rate_is_accepted(width: str, speed: str) -> None:
    assert "fabric.cabling[0].speed" not in problems(cabled(width, speed))


@settings(max_examples=60, derandomize=True, deadline=None)
@given(width=st.sampled_from(sorted(WIDTH_LANES)), speed=st.sampled_from(sorted(IB_LANE_RATES)))
def test_the_cable_rule_is_the_rate_table(width: str, speed: str) -> None:
    carries = WIDTH_LANES[width] * IB_LANE_RATES[speed]
    refused = "fabric.cabling[0].speed" in problems(cabled(width, speed))
    assert refused == (carries < 400)


def test_an_hca_rate_that_does_not_fit_its_width_is_refused() -> None:
    data = copy.deepcopy(DGX)
    data["nodes"][0]["hcas"][0].update(rate_gbps=400, width="1x")  # 1x tops out at 200 (XDR)
    assert "nodes[0].hcas[0].rate_gbps" in problems(data)


def test_hosts_equal_in_another_case_are_refused() -> None:
    data = copy.deepcopy(DGX)
    data["nodes"].append({"names": "DGX01", "role": "compute"})
    found = problems(data)
    assert "nodes[2].names" in found and "'dgx01'" in found["nodes[2].names"]


def test_a_management_subnet_too_small_for_the_hosts() -> None:
    data = copy.deepcopy(DGX)
    data["management"]["subnet"] = "10.30.0.0/29"  # 8 addresses: 5 for hosts, 3 reserved
    data["nodes"][1]["names"] = "head[1-2]"
    data["existing"]["ssh"]["head2"] = "10.30.0.3"
    found = problems(data)
    assert "management.subnet" in found and "for 6 hosts" in found["management.subnet"]


def test_a_bmc_subnet_too_small_for_the_hosts() -> None:
    data = yaml.safe_load((SPECS / "roce.yaml").read_text())
    data["bmc"]["subnet"] = "10.11.0.0/30"
    assert "bmc.subnet" in problems(data)


def test_an_ipam_range_too_small_for_the_compute_hosts() -> None:
    data = yaml.safe_load((SPECS / "kubernetes.yaml").read_text())
    networks = data["kubernetes"]["network_operator"]["secondary_networks"]
    index = next(i for i, n in enumerate(networks) if n.get("ipam"))
    networks[index]["ipam"]["range"] = "198.18.64.0/30"
    networks[index]["ipam"].pop("exclude", None)
    networks[index]["ipam"].pop("gateway", None)
    path = f"kubernetes.network_operator.secondary_networks[{index}].ipam.range"
    assert path in problems(data)


@pytest.mark.parametrize("name", sorted(p.stem for p in SPECS.glob("*.yaml")))
def test_the_valid_specs_stay_valid(name: str) -> None:
    assert problems(yaml.safe_load((SPECS / f"{name}.yaml").read_text())) == {}
