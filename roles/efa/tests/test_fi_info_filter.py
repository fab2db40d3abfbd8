"""The efa role's ``efa_fi_info`` filter on real captured fi_info output (tests/fixtures)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

HERE = Path(__file__).parent
FIXTURES = HERE.parents[2] / "tests" / "fixtures"

_spec = importlib.util.spec_from_file_location(
    "efa_fi_info_filter", HERE.parent / "filter_plugins" / "fi_info.py"
)
assert _spec and _spec.loader
plugin = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(plugin)


def test_parallelcluster_node_has_one_efa_rdm_domain() -> None:
    result = plugin.efa_fi_info((FIXTURES / "fi_info__perfstudy__1.txt").read_text())
    assert result == {
        "ok": True,
        "reason": None,
        "providers": ["efa"],
        "rdm_domains": ["rdmap0s31-rdm"],
    }


def test_layered_provider_is_listed_but_not_counted_as_a_device() -> None:
    result = plugin.efa_fi_info((FIXTURES / "fi_info__libfabric5689__1.txt").read_text())
    assert result["ok"] is True
    assert result["providers"] == ["efa", "efa;ofi_rxd"]
    assert result["rdm_domains"] == ["efa_0-rdm"]


def test_no_efa_device_is_not_ok_with_the_reason() -> None:
    result = plugin.efa_fi_info("fi_getinfo: -61 (No data available)\n")
    assert result["ok"] is False
    assert "-61" in result["reason"]
    assert result["rdm_domains"] == []


def test_garbage_is_not_ok() -> None:
    result = plugin.efa_fi_info("bash: fi_info: command not found\n")
    assert result["ok"] is False and result["rdm_domains"] == []


def test_filter_is_registered() -> None:
    assert plugin.FilterModule().filters()["efa_fi_info"] is plugin.efa_fi_info
