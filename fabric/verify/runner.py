"""Run the check suite (pytest on fabric/verify/checks) for a stack and write every report."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel

from fabric.state import REPO_ROOT, StateLayout
from fabric.verify import context
from fabric.verify.causes import Cause, summary
from fabric.verify.results import CheckResult, read_junit

if TYPE_CHECKING:
    from collections.abc import Mapping

    from fabric.model.cluster import ClusterModel

#: Upper bound of one check-suite run (every check has its own, smaller timeouts).
SUITE_TIMEOUT = 3600
#: The exit status recorded when the suite was stopped at SUITE_TIMEOUT (timeout(1)'s).
SUITE_TIMED_OUT = 124
CHECKS_DIR = Path(__file__).resolve().parent / "checks"
#: pytest-xdist workers: one per this many selected hosts, at most WORKERS_PER_CORE per
#: controller core and MAX_WORKERS in all (each a Python process of ~80 MiB). Most of a check's
#: time is waiting on a host (an SSH round trip, ibping's server, a MAD tool), not the
#: controller's CPU. The host part's cost grows with hosts / workers: a host's checks run in
#: one worker (``--dist loadgroup``, the suite's conftest), the fabric sweep in one more.
HOSTS_PER_WORKER = 4
WORKERS_PER_CORE = 4
MAX_WORKERS = 64


def max_workers(cores: int | None = None) -> int:
    """The most xdist workers on a controller of ``cores`` cores (default: this one's)."""
    return max(2, min(MAX_WORKERS, WORKERS_PER_CORE * (cores or os.cpu_count() or 1)))


def workers_for(hosts: int, cores: int | None = None) -> int:
    """The xdist workers for a run over ``hosts`` hosts: sized to the cluster and the
    controller."""
    return max(2, min(max_workers(cores), -(-hosts // HOSTS_PER_WORKER)))


class RunOutcome(BaseModel):
    """What a check run produced."""

    rc: int
    results: list[CheckResult]
    not_generated: dict[str, str]
    junit: str
    report_dir: str
    files: list[str] = []
    causes: list[Cause] = []

    @property
    def ok(self) -> bool:
        """True when pytest passed and no check failed."""
        return self.rc == 0 and not any(r.failed for r in self.results)

    def summary(self) -> str:
        """Root causes, then failed checks and checks that could not run, or the pass count."""
        if not self.results and self.rc != 0:
            return f"the check suite did not run (pytest exit {self.rc}); see {self.report_dir}/pytest.log"
        return summary(self.results, self.causes)


def pytest_args(
    inventory: Path,
    junit: Path,
    report_dir: Path,
    *,
    limit: str | None = None,
    spec: Path | None = None,
    workers: int | None = None,
    extra: list[str] | None = None,
) -> list[str]:
    """The pytest command line for the check suite."""
    hosts = (
        ",".join(f"ansible://{h.strip()}" for h in limit.split(",")) if limit else "ansible://all"
    )
    args = [
        sys.executable,
        "-m",
        "pytest",
        str(CHECKS_DIR),
        f"--hosts={hosts}",
        f"--ansible-inventory={inventory}",
        f"--junitxml={junit}",
        f"--report-dir={report_dir}",
        "-o",
        "junit_family=xunit1",
        "-p",
        "no:cacheprovider",
        # hypothesis's plugin imports all of hypothesis for its end-of-run summary, in every
        # xdist worker and the controller (about 1.7 s each on 2 cores); no check uses it
        "-p",
        "no:hypothesispytest",
        "-q",
        "-rN",
    ]
    if spec:
        args.append(f"--spec={spec}")
    if workers and workers > 1:
        args += ["-n", str(workers), "--dist", "loadgroup"]
    return args + (extra or [])


def run_checks(
    stack: str,
    *,
    junit: Path | None = None,
    limit: str | None = None,
    report_dir: Path | None = None,
    spec: Path | None = None,
    workers: int | None = None,
    quiet: bool = False,
    select: str | None = None,
    model: ClusterModel | None = None,
    env: Mapping[str, str] | None = None,
) -> RunOutcome:
    """Run the checks against ``state/<stack>/inventory.yml``; render the reports into ``report_dir``.

    ``select`` is a pytest ``-k`` expression choosing checks by name (``test_sm_answers or ...``).
    ``workers``: pytest-xdist workers (default :func:`workers_for` the selected hosts).
    ``model``: the spec's cluster model where the caller has one (the reports read its declared
    fabric; built from the spec file when not given). ``env``: more environment for the suite's
    process (``check --mark-nodes``: the API server's token and CA), this process's own
    environment left as it is.
    """
    inventory = context.inventory_path(stack)
    # Read first: a missing inventory or an unknown --limit host fails here, clearly.
    hosts = context.select_hosts(limit, context.load_inventory(inventory))
    if workers is None:
        workers = workers_for(len(hosts))
    report_dir = (report_dir or StateLayout(stack).reports).resolve()
    report_dir.mkdir(parents=True, exist_ok=True)
    junit = (junit or report_dir / "checks.xml").resolve()
    args = pytest_args(
        inventory,
        junit,
        report_dir,
        limit=limit,
        spec=spec,
        workers=workers,
        extra=["-k", select] if select else None,
    )
    suite_env = {
        **os.environ,
        **(env or {}),
        "PYTHONPATH": f"{REPO_ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    log = report_dir / "pytest.log"
    with open(log, "w") as out:
        try:
            rc = subprocess.run(
                args,
                cwd=REPO_ROOT,
                env=suite_env,
                stdout=out,
                stderr=subprocess.STDOUT,
                check=False,
                timeout=SUITE_TIMEOUT,
            ).returncode
        except subprocess.TimeoutExpired:
            out.write(f"\nrailyard: the check suite did not finish in {SUITE_TIMEOUT} s; stopped\n")
            rc = SUITE_TIMED_OUT
    if not quiet:
        sys.stderr.write(log.read_text()[-4000:] if rc not in (0, 1) else "")
    results = read_junit(junit) if junit.is_file() else []
    ng_file = report_dir / "not_generated.json"
    not_generated = json.loads(ng_file.read_text()) if ng_file.is_file() else {}
    outcome = RunOutcome(
        rc=rc,
        results=results,
        not_generated=not_generated,
        junit=str(junit),
        report_dir=str(report_dir),
    )
    outcome.files = write_reports(outcome, stack, spec, model)
    return outcome


def cluster_model(stack: str, spec_path: Path | None = None) -> ClusterModel:
    """The cluster model of the stack's spec (``spec_path``, else the stack's file): the entry
    point's, for a caller that has none."""
    from fabric.model.cluster import ClusterModel

    return ClusterModel(
        context.load_cluster_spec(spec_path or context.spec_path_for(context.inventory_path(stack)))
    )


def write_reports(
    outcome: RunOutcome,
    stack: str,
    spec_path: Path | None = None,
    model: ClusterModel | None = None,
) -> list[str]:
    """Find the root causes (``outcome.causes``, with the declared graph of ``model``, the
    stack's cluster model, built when not given), add them to the JUnit file, and write the
    Markdown report and the fabric picture next to it."""
    from fabric.verify.causes import diagnose
    from fabric.verify.report import annotate_junit, fabric_dot, markdown, render_picture

    out_dir = Path(outcome.report_dir)
    files: list[str] = [outcome.junit]
    picture = None
    model = model or cluster_model(stack, spec_path)
    graph = model.declared_graph
    if graph is not None:
        rendered = render_picture(fabric_dot(graph, outcome.results, model.spec), out_dir)
        files += [str(p) for p in rendered]
        picture = rendered[0].name
    outcome.causes = diagnose(outcome.results, graph).causes
    if Path(outcome.junit).is_file():
        annotate_junit(Path(outcome.junit), outcome.results, outcome.causes)
    md = out_dir / "report.md"
    md.write_text(
        markdown(
            outcome.results,
            outcome.not_generated,
            f"railyard checks: {stack}",
            picture,
            outcome.causes,
            spec=model.spec,
            graph=graph,
        )
    )
    return files + [str(md)]
