"""Every declared InfiniBand cable, judged by one fabric sweep from one vantage host.

``fabric.verify.sweep`` runs rdma-core's tools on the observer host (over one SSH connection,
each run bounded by ``timeout`` and retried), reads every port's error counters twice
``health.sample_seconds`` apart, and judges every cable (``fabric.verify.sweep_judge``):
discovered as declared (far end, width, speed), both ports Active/LinkUp, counter rises within
the thresholds. That is every cable-level question the suite asks, so no per-host SSH check
asks them again (``plan.host_ports`` keeps only the ports the sweep does not judge).

The sweep runs once per check run: the first xdist worker that needs it runs it under a file
lock in the run's shared temporary directory and leaves its verdicts there as JSON; the other
workers read them. Each cable's verdict is its own check item, under the names the causes-first report files (a pulled cable is one "cable down", a
narrow link one "port degraded", a counter rise one "cable with errors"). A question the sweep
could not answer (a tool that kept failing, counters not read) is a harness error, never a
fabric failure.
"""

from __future__ import annotations

import fcntl
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from fabric.verify import sweep_judge as judged
from fabric.verify.facts import Facts
from fabric.verify.harness import HarnessError, run_dir
from fabric.verify.plan import CheckPlan, SweptCable
from fabric.verify.results import CheckResult
from fabric.verify.sweep import Capture, Run, SweepConfig, SweepOutcome, shell_runner, sweep

pytestmark = pytest.mark.family("sweep")

#: The discovery cache on the vantage host.
CACHE = "/tmp/railyard-sweep.cache"
#: Each MAD's timeout in the lab (ms): ibsim answers a node's MADs over UDP, one at a time,
#: on a machine shared with the whole lab (50 ms, the sweep's default, is for real switches).
LAB_TIMEOUT_MS = 200
Record = Callable[[str, object], None]


def run_sweep(
    plan: CheckPlan,
    run: Run,
    before: Capture | None = None,
    counters: bool = True,
    cache: str = CACHE,
) -> SweepOutcome:
    """One sweep of ``plan``'s declared fabric through ``run``: against ``before``'s counters,
    or reading them twice ``health.sample_seconds`` apart (once, when ``counters`` is False:
    no counter check was selected)."""
    declared = plan.expected_graph
    if declared is None:
        raise HarnessError("no declared fabric to judge the cables against")
    spec = plan.spec
    return sweep(
        declared,
        run,
        SweepConfig(cache=cache, timeout_ms=LAB_TIMEOUT_MS if plan.simulated else 50),
        before=before,
        window_s=spec.health.sample_seconds if before is None and counters else 0.0,
        overrides=spec.health.counters.model_dump(),
    )


@dataclass
class Swept:
    """One sweep's verdicts by check id (``name[param]``), or why it could not run."""

    results: dict[str, CheckResult]
    why: str | None = None

    @classmethod
    def of(cls, outcome: SweepOutcome) -> Swept:
        by_key = {f"{r.name}[{r.param}]": r for r in outcome.results}
        fatal = by_key.get("test_fabric_sweep[sweep]")
        return cls(by_key, fatal.message if fatal is not None else None)

    def save(self, path: Path) -> None:
        """Write the verdicts for the run's other workers."""
        rows = [r.model_dump() for r in self.results.values()]
        path.write_text(json.dumps({"why": self.why, "results": rows}))

    @classmethod
    def load(cls, path: Path) -> Swept:
        data = json.loads(path.read_text())
        results = [CheckResult.model_validate(row) for row in data["results"]]
        return cls({f"{r.name}[{r.param}]": r for r in results}, data["why"])

    def verdict(self, name: str, param: str, record: Record | None = None) -> None:
        """Pass, fail, skip or raise a harness error as the sweep judged ``name[param]``."""
        found = self.results.get(f"{name}[{param}]")
        if found is None:
            raise HarnessError(self.why or f"the sweep judged no {name} for {param}")
        for subject in found.subjects:
            if record is not None:
                record("subject", subject)
        if found.outcome == "error":
            raise HarnessError(found.message)
        if found.outcome == "skipped":
            pytest.skip(found.message)
        assert found.outcome == "passed", found.message


def shared_sweep(shared: Path, facts: Facts, plan: CheckPlan, counters: bool) -> Swept:
    """The run's one sweep: run here under the lock in ``shared`` (the run's directory every
    worker sees) unless a worker already left its verdicts there."""
    verdicts = shared / "railyard-sweep.json"
    with open(shared / "railyard-sweep.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if verdicts.is_file():
            return Swept.load(verdicts)
        host = plan.sweep_hosts[0]
        found = Swept.of(run_sweep(plan, shell_runner(facts.shell(host)), counters=counters))
        found.save(verdicts)
        return found


def counters_wanted(session: pytest.Session) -> bool:
    """Whether the run has a counter check (then the sweep reads counters twice)."""
    wanted = {getattr(item, "originalname", "") for item in session.items}
    return test_port_error_counters.__name__ in wanted


@pytest.fixture(scope="session")
def swept(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    facts: Facts,
    plan: CheckPlan,
) -> Swept:
    """The run's one sweep, from the plan's vantage host (counters read twice only when a
    counter check was selected), shared by every xdist worker of the run. The first worker
    starts it as it starts its checks (conftest's ``_sweep_early``), and the suite runs the
    sweep's items last, so the sweep runs beside the host checks."""
    return shared_sweep(
        run_dir(tmp_path_factory, request.config), facts, plan, counters_wanted(request.session)
    )


def test_declared_link_discovered(
    host, swept: Swept, swept_link: SweptCable, record_property: Record
) -> None:
    """The declared cable is up, between the declared ports, at the declared width and speed."""
    swept.verdict(judged.LINK_CHECK, swept_link.link, record_property)


def test_port_state_active(
    host, swept: Swept, swept_port: SweptCable, record_property: Record
) -> None:
    """The cable's port (its HCA end, else its first switch end) is Active."""
    swept.verdict(judged.STATE_CHECK, swept_port.port, record_property)


def test_port_physical_state_linkup(
    host, swept: Swept, swept_port: SweptCable, record_property: Record
) -> None:
    """The cable's port is physically LinkUp."""
    swept.verdict(judged.PHYS_CHECK, swept_port.port, record_property)


def test_port_error_counters(
    host, swept: Swept, swept_port: SweptCable, record_property: Record
) -> None:
    """No error counter at either end of the cable rose above its threshold."""
    swept.verdict(judged.COUNTER_CHECK, swept_port.port, record_property)


def test_no_undeclared_links(host, swept: Swept, sweep_host: str, record_property: Record) -> None:
    """The sweep finds no cable the spec does not declare."""
    swept.verdict(judged.EXTRA_CHECK, "sweep", record_property)
