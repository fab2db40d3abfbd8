"""Bad input, round 3: a spec missing a whole section's worth of per-host values (64 bare-metal
addresses and BMC endpoints) gets one line per section saying so and how to fill it, not one
per host; a few missing hosts are still named one by one."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from fabric.spec import SpecError, spec_from_mapping
from fabric.spec.common import MISSING_ONE_BY_ONE

SPECS = Path(__file__).parent / "specs" / "valid"


def problems(data: dict[str, Any]) -> list[tuple[str, str]]:
    with pytest.raises(SpecError) as caught:
        spec_from_mapping(data)
    return [(p.path, p.message) for p in caught.value.problems]


def roce(hosts: str) -> dict[str, Any]:
    data = yaml.safe_load((SPECS / "roce.yaml").read_text())
    data["nodes"][0]["names"] = hosts
    return data


@pytest.mark.parametrize(
    ("section", "says"),
    [
        ("bmc.endpoints", "every node needs a Redfish endpoint url; add one per node, e.g. "),
        ("management.addresses", "every bare-metal node needs a fixed address; add one per node"),
    ],
)
def test_64_missing_hosts_are_one_line(section: str, says: str) -> None:
    data = roce("gpu[1-63]")
    top, key = section.split(".")
    data[top][key] = {}
    found = [(path, message) for path, message in problems(data) if path.startswith(section)]
    assert len(found) == 1, found[:3]
    path, message = found[0]
    assert path == section and message.startswith("64 nodes have no entry (gpu[1-63],head1): ")
    assert says in message


def test_a_few_missing_hosts_are_named_one_by_one() -> None:
    data = roce("gpu[1-4]")
    endpoints = data["bmc"]["endpoints"]
    for host in list(endpoints)[:MISSING_ONE_BY_ONE]:
        del endpoints[host]
    paths = [path for path, _ in problems(copy.deepcopy(data)) if path.startswith("bmc.")]
    assert len(paths) == MISSING_ONE_BY_ONE and all(p.count(".") == 2 for p in paths), paths
