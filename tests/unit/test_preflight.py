"""The image preflight (issue 40): every need a target declares has a probe in the preflight
role, each probe can run, and the inventory hands each host its needs where nodes boot a
vendor image. The failure message itself is asserted in roles/preflight/molecule/default."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from test_spec import base

from fabric.inventory import build_inventory, preflight_vars
from fabric.spec import spec_from_mapping
from fabric.spec.egress import needs
from fabric.state import REPO_ROOT

DEFAULTS = yaml.safe_load((REPO_ROOT / "roles/preflight/defaults/main.yml").read_text())
PROBES: dict[str, Any] = DEFAULTS["preflight_probes"]


def test_every_declared_need_has_a_probe() -> None:
    assert set(needs()) <= set(PROBES), set(needs()) - set(PROBES)


def test_no_probe_for_a_need_nobody_declares() -> None:
    assert set(PROBES) == set(needs()), set(PROBES) ^ set(needs())


@pytest.mark.parametrize("name", sorted(PROBES))
def test_each_probe_piece_is_a_path_list_or_a_command(name: str) -> None:
    probe = PROBES[name]
    assert isinstance(probe["what"], str) and isinstance(probe["image_only"], bool)
    assert probe["pieces"]
    for piece in probe["pieces"]:
        assert isinstance(piece["piece"], str)
        assert ("any_of" in piece) != ("command" in piece), piece
        if "any_of" in piece:
            assert piece["any_of"] and all(p.startswith("/") for p in piece["any_of"])
        else:
            assert piece["command"] and all(isinstance(a, str) for a in piece["command"])


def test_the_driver_is_the_image_s_own_and_the_slurm_packages_are_not() -> None:
    """What no role installs is checked even with egress open; the rest only offline."""
    assert PROBES["nvidia-driver"]["image_only"] is True
    assert {n for n in ("munge", "slurmd", "slurmctld", "efa") if PROBES[n]["image_only"]} == set()


def test_aws_hosts_get_their_needs_and_the_egress_mode() -> None:
    spec = spec_from_mapping(base("aws"))
    out = preflight_vars(spec)
    assert out["preflight_offline"] is False
    assert out["preflight_needs"]["gpu1"] == [
        *("munge", "slurmd", "nvidia-driver", "nvidia-fabricmanager", "efa")
    ]  # 8 H100s on NVSwitch: the fabric manager
    assert out["preflight_needs"]["head1"] == ["munge", "slurmctld"]


def test_offline_egress_marks_every_need_the_image_s() -> None:
    data = base("aws")
    data["aws"]["egress"] = {
        "mode": "offline",
        "image_provides": [
            *("munge", "slurmd", "slurmctld", "nvidia-driver", "nvidia-fabricmanager", "efa")
        ],
    }
    assert preflight_vars(spec_from_mapping(data))["preflight_offline"] is True


def test_gcp_a3_mega_needs_its_image_pieces() -> None:
    spec = spec_from_mapping(base("gcp"))
    wanted = preflight_vars(spec)["preflight_needs"]["a3-1"]
    assert {"nvidia-driver", "nvidia-fabricmanager", "docker", "rxdm-image"} <= set(wanted)
    assert set(wanted) <= set(PROBES)


def test_the_lab_has_no_vendor_image_and_no_preflight() -> None:
    spec = spec_from_mapping(base("lab"))
    assert preflight_vars(spec) == {}
    inventory = build_inventory(
        spec,
        {h: "198.18.0.1" for h in spec.hosts},
        ssh_user="root",
        private_key_file="/k",
        known_hosts_file="/kh",
    )
    assert "preflight_needs" not in inventory["all"]["vars"]


def test_site_runs_the_preflight_before_any_other_role_and_stops_on_it() -> None:
    plays = yaml.safe_load((REPO_ROOT / "playbooks/site.yml").read_text())
    with_roles = [p for p in plays if p.get("roles")]
    first = with_roles[0]
    assert [r["role"] for r in first["roles"]] == ["preflight"]
    assert first["any_errors_fatal"] is True and "strategy" not in first  # linear: one report
    assert not any(p.get("tasks") for p in plays[: plays.index(first)])  # only the facts before
