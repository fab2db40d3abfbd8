"""Congestion control: every switch's and HCA's congestion-control settings, as ``ibccquery``
reads them (IBA class 0x21), are the declared ``fabric.infiniband.congestion_control``, in every
SM mode. Not generated in the lab: ibsim answers no congestion-control MADs, so the lab cannot
prove it (the plan says so; the rendered opensm.conf is golden- and molecule-tested)."""

from __future__ import annotations

import pytest

from fabric.parsers.ibccquery import parse as parse_ibccquery
from fabric.verify.congestion import SHOWN, judge, query_command
from fabric.verify.facts import Facts, keep_255
from fabric.verify.harness_error import HarnessError
from fabric.verify.plan import CheckPlan
from fabric.verify.routing import RoutingHarnessError, judge_routes, read_fabric, read_tables
from fabric.verify.sweep import shell_runner

pytestmark = pytest.mark.family("congestion_control")


def test_congestion_control(host, facts: Facts, plan: CheckPlan, cc_host: str) -> None:
    """Each switch's SwitchCongestionSetting, each HCA's CACongestionSetting and CCT limit."""
    ib = plan.spec.fabric.infiniband
    assert ib is not None and ib.congestion_control.enabled  # the plan's condition
    if plan.simulated:  # the plan does not generate it; never a pass in the lab
        pytest.skip("the lab cannot prove congestion control: ibsim answers no CC MADs")

    def shell(command: str) -> tuple[int, str, str]:
        result = facts.connect(cc_host).run(keep_255(command))
        return result.rc, result.stdout, result.stderr

    run = shell_runner(shell)
    try:
        fabric = facts.discovered() if cc_host == plan.discovery_host else read_fabric(run)
        routes = judge_routes(read_tables(run), fabric, plan.expected_graph)
    except (RoutingHarnessError, RuntimeError) as err:
        raise HarnessError(f"congestion control on {cc_host}: {err}") from None
    names = {lid: name for name, lid in routes.switch_lids.items()}
    names |= {lids[0]: name for name, lids in routes.hca_lids.items()}
    switch_lids = sorted(routes.switch_lids.values())
    hca_lids = sorted(lids[0] for lids in routes.hca_lids.values())
    rc, out, err = shell(query_command(switch_lids, hca_lids))
    report = parse_ibccquery(out + err)
    if not report.ok:
        raise HarnessError(f"ibccquery on {cc_host}: {report.reason}")
    wrong, read = judge(ib.congestion_control, report, names)
    want = {("SwitchCongestionSetting", lid) for lid in switch_lids}
    want |= {
        (a, lid) for lid in hca_lids for a in ("CACongestionSetting", "CongestionControlTable")
    }
    missing = sorted(want - read)
    if missing:
        raise HarnessError(
            f"ibccquery read no answer for {len(missing)} queries, e.g. "
            + ", ".join(f"{a} of {names.get(lid, lid)}" for a, lid in missing[:SHOWN])
        )
    assert not wrong, (
        f"{len(wrong)} congestion-control settings differ from the spec: "
        + "; ".join(wrong[:SHOWN])
        + (f"; and {len(wrong) - SHOWN} more" if len(wrong) > SHOWN else "")
    )
