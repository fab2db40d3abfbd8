"""The PHY/BER scan of the whole fabric: ``ibdiagnet --get_phy_info`` from the discovery host.

Error counters per cable are the fabric sweep's (``checks/test_sweep.py``): one vantage host
reads every port's PMA twice and judges the rises (``fabric.verify.sweep``).
"""

from __future__ import annotations

import pytest

from fabric.parsers import ibdiagnet
from fabric.parsers.common import ParseError
from fabric.verify.facts import Facts
from fabric.verify.harness_error import HarnessError

pytestmark = pytest.mark.family("phy")

#: The bound on one ibdiagnet PHY/BER scan of the whole fabric (s), and where it writes.
IBDIAGNET_TIMEOUT_S = 900
IBDIAGNET_DIR = "/var/tmp/railyard-ibdiagnet"


def test_ibdiagnet_phy(host, facts: Facts, phy_host: str) -> None:  # type: ignore[no-untyped-def]
    """Where ibdiagnet is installed, its PHY/BER scan (``--get_phy_info``: BER against the
    firmware's thresholds on every EDR/HDR/NDR port) reports no errors in any stage."""
    if host.run("command -v ibdiagnet").rc != 0:
        pytest.skip(f"{phy_host}: ibdiagnet is not installed (ibutils2, from DOCA/MLNX_OFED)")
    rc, text = facts.output(
        phy_host,
        f"timeout {IBDIAGNET_TIMEOUT_S} ibdiagnet --get_phy_info -o {IBDIAGNET_DIR} 2>&1",
    )
    try:
        report = ibdiagnet.parse(ibdiagnet.console_summary(text))
    except ParseError as err:
        raise HarnessError(f"{phy_host}: ibdiagnet (exit {rc}) printed no summary: {err}") from err
    if not report.stages:
        raise HarnessError(f"{phy_host}: ibdiagnet (exit {rc}) printed no stage table")
    failing = [
        f"{stage.stage}: {stage.errors} errors" + (f" ({stage.comment})" if stage.comment else "")
        for stage in report.stages
        if stage.errors
    ]
    assert not failing, (
        f"ibdiagnet on {phy_host}: {'; '.join(failing)}; per-port detail in "
        f"{IBDIAGNET_DIR}/ibdiagnet2.log and ibdiagnet2.db_csv"
    )
