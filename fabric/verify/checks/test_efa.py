"""EFA: libfabric's efa provider is present on every fabric host (fabric.kind efa only)."""

from __future__ import annotations

import pytest

from fabric.parsers import PARSERS

pytestmark = pytest.mark.family("efa")


def test_efa_provider(host, fabric_host: str) -> None:
    """``fi_info -p efa`` lists the efa provider."""
    result = host.run("fi_info -p efa")
    report = PARSERS["fi_info"](result.stdout + result.stderr)
    providers = {entry.provider for entry in getattr(report, "entries", [])}
    assert "efa" in providers, (
        f"{fabric_host}: fi_info -p efa shows no efa provider ({result.stderr.strip()[:200]})"
    )
