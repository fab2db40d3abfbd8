"""``railyard check --mark-nodes``: the check suite's verdict per node, where Kubernetes looks.

After the checks, each node the run covered (the inventory's hosts, or ``--limit``'s) gets the
verdict railyard-health gives it on the node (``fabric.verify.health``), through
``fabric.kube_client.mark_health``: the ``railyard.dev/fabric-unhealthy:NoSchedule`` taint and
the ``RailyardFabricHealthy`` condition ``False`` while a check failed on it, both lifted (the
condition ``True``) once every check judging it passes; another taint is always kept.

Which checks judge a node (:func:`hosts_of`): a ``host:NAME`` subject, the host of a ``port:``
or ``counters:`` HCA port, the HCA end of a ``link:`` cable, the host of a RoCE ``hop:``, and
both ends of a ``pair:``. A failed pair taints only the end that failed a check of its own,
when one did (the cable that explains the pair, as ``fabric.verify.causes`` files it), and
both ends otherwise. A check that could not run (pytest ``error``: a harness or tool error) is
never a fabric verdict: a node with no failure but such an error is left as it is and the error
reported, as railyard-health leaves a node on a harness error. A node no check judged (every
one skipped, or only fabric-wide subjects) is left as it is too.

The taint value and the condition's reason are ``FabricUnhealthy`` / ``FabricHealthy`` (the
same as railyard-health's, so either's later verdict replaces the other's without a flap of the
reason); the message names the first failed check(s): ``railyard check:
test_port_state[kn1/mlx5_0/1]: ...``. Kubernetes names the node in lower case (as the hand-off
and railyard-health do). The API server is the spec's ``kubernetes.api_server``; its bearer
token comes from ``RAILYARD_KUBE_TOKEN`` and its CA (PEM) from ``RAILYARD_KUBE_CA``, where the
check suite's ``kubernetes_labels`` family reads them, else from the stack's Pulumi config
secrets the spec's ``kubernetes.token`` and ``ca_certificate`` name (``pulumi config get``;
then handed to the suite in those variables too); neither is ever printed.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from fabric.cli.errors import CommandError

if TYPE_CHECKING:
    from fabric.kube_client import Client
    from fabric.spec import ClusterSpec
    from fabric.verify.results import CheckResult

TOKEN_ENV = "RAILYARD_KUBE_TOKEN"
CA_ENV = "RAILYARD_KUBE_CA"
#: The taint value and condition reason of each verdict (railyard-health's own).
UNHEALTHY = "FabricUnhealthy"
HEALTHY = "FabricHealthy"
#: How every condition message the check run writes begins.
PREFIX = "railyard check:"
#: Failed checks a message names before ``(+N more)``; its longest length.
NAMED = 3
MESSAGE_MAX = 500
#: Seconds for one API server call (a node is three at most: read, patch, status).
CALL_TIMEOUT = 10.0

State = Literal["unhealthy", "healthy", "unjudged"]
Action = Literal["tainted", "untainted", "unchanged", "not marked"]


def _split_link(body: str) -> tuple[str, str] | None:
    """``leaf01/3-kn1/mlx5_0/1`` -> (``leaf01``, ``kn1/mlx5_0``): the cable's two nodes (a
    name may hold ``-``; each end is ``NODE/PORT``)."""
    for i, char in enumerate(body):
        if char != "-":
            continue
        left, right = body[:i].rpartition("/"), body[i + 1 :].rpartition("/")
        if left[0] and left[2].isdigit() and right[0] and right[2].isdigit():
            return left[0], right[0]
    return None


def hosts_of(subject: str) -> tuple[set[str], set[str]]:
    """(hosts the subject is about directly, hosts it names as an end of a pair). A switch,
    an SM or a fabric-wide subject names none."""
    kind, _, body = subject.partition(":")
    if kind in ("host",):
        return {body}, set()
    if kind in ("port", "counters", "hop"):  # HOST/DEVICE/PORT, HOST/NETDEV-SWITCH/PORT
        return {body.split("/", 1)[0]}, set()
    if kind == "link":
        ends = _split_link(body)
        # an HCA end is ``HOST/DEVICE`` (a switch's name has no ``/``)
        return {end.split("/", 1)[0] for end in ends or () if "/" in end}, set()
    if kind == "pair" and "->" in body:
        source, _, target = body.partition("->")
        return set(), {source, target}
    return set(), set()


def _key(result: CheckResult) -> str:
    return f"{result.name}[{result.param}]" if result.param else result.name


def _first_line(result: CheckResult) -> str:
    return result.message.strip().splitlines()[0] if result.message.strip() else result.outcome


@dataclass
class Verdict:
    """One host's verdict from a check run: its failed checks, the checks that could not run
    (harness errors), how many passed."""

    host: str
    failed: list[CheckResult] = field(default_factory=list)
    errors: list[CheckResult] = field(default_factory=list)
    passed: int = 0

    @property
    def state(self) -> State:
        """unhealthy on a failure; healthy when checks judged it and none failed or could
        not run; otherwise unjudged (left as it is)."""
        if self.failed:
            return "unhealthy"
        return "healthy" if self.passed and not self.errors else "unjudged"

    @property
    def reason(self) -> str:
        return UNHEALTHY if self.failed else HEALTHY

    @property
    def message(self) -> str:
        """The condition's message: the first failed check with its message, the next few by
        name, how many more; or how many checks passed."""
        from fabric.redact import redact

        if not self.failed:
            return f"{PREFIX} all {self.passed} checks of {self.host} passed"
        first, rest = self.failed[0], self.failed[1:]
        text = f"{PREFIX} {_key(first)}: {_first_line(first)}"
        named = [_key(r) for r in rest[: NAMED - 1]]
        if named:
            text += "; " + ", ".join(named)
        if len(rest) > len(named):
            text += f" (+{len(rest) - len(named)} more)"
        text = redact(text)
        return text if len(text) <= MESSAGE_MAX else text[: MESSAGE_MAX - 3] + "..."


def verdicts(results: Iterable[CheckResult], hosts: Iterable[str]) -> dict[str, Verdict]:
    """Each of ``hosts`` (the hosts the run covered) -> its verdict from ``results``. Subjects
    naming a host outside ``hosts`` (a pair's far end beyond ``--limit``) are left out."""
    out = {host: Verdict(host) for host in hosts}
    pairs: list[tuple[CheckResult, set[str]]] = []
    for result in results:
        direct: set[str] = set()
        ends: set[str] = set()
        for subject in result.subjects:
            d, e = hosts_of(subject)
            direct |= d
            ends |= e
        ends -= direct
        if result.outcome == "failed" and ends:
            pairs.append((result, ends & out.keys()))
        for host in sorted((direct | (ends if result.outcome != "failed" else set())) & out.keys()):
            _file(out[host], result)
    failing = {host for host, verdict in out.items() if verdict.failed}
    for result, ends in pairs:  # a failed pair: the end that failed on its own, else both
        for host in sorted((ends & failing) or ends):
            if result not in out[host].failed:
                out[host].failed.append(result)
    return out


def _file(verdict: Verdict, result: CheckResult) -> None:
    if result.outcome == "failed":
        verdict.failed.append(result)
    elif result.outcome == "error":
        verdict.errors.append(result)
    elif result.outcome == "passed":
        verdict.passed += 1


@dataclass
class Mark:
    """What was done to one node: ``tainted``, ``untainted``, ``unchanged`` (the taint as it
    was; the condition refreshed) or ``not marked`` (and why)."""

    host: str
    node: str
    action: Action
    detail: str = ""

    def line(self) -> str:
        return f"kubernetes: {self.node} {self.action}" + (
            f": {self.detail}" if self.detail else ""
        )

    def doc(self) -> dict[str, str]:
        return {"node": self.node, "action": self.action, "detail": self.detail}


def mark_nodes(client: Client, found: dict[str, Verdict]) -> Iterator[Mark]:
    """Mark each judged node of ``found`` on the API server (one list of the nodes, then
    ``mark_health`` per node), yielding what was done as it goes; a failed call raises
    ``KubeError`` (one line naming it) after the marks already yielded."""
    from fabric.kube_client import TAINT_KEY, mark_health

    listed = client.get("/api/v1/nodes").get("items") or []
    nodes = {n["metadata"]["name"]: n for n in listed}
    for host, verdict in found.items():
        name = host.lower()
        state = verdict.state
        if state == "unjudged":
            why = (
                f"{len(verdict.errors)} check(s) could not run (harness or tool error, not a "
                f"fabric failure): {_key(verdict.errors[0])}: {_first_line(verdict.errors[0])}"
                if verdict.errors
                else "no check judged it"
            )
            yield Mark(host, name, "not marked", why)
            continue
        node = nodes.get(name)
        if node is None:
            yield Mark(host, name, "not marked", "no Node object of that name")
            continue
        taints = (node.get("spec") or {}).get("taints") or []
        had = any(t.get("key") == TAINT_KEY for t in taints)
        healthy = state == "healthy"
        mark_health(client, name, healthy, verdict.reason, verdict.message)
        if healthy == had:
            yield Mark(host, name, "untainted" if healthy else "tainted", verdict.message)
        else:
            yield Mark(host, name, "unchanged", verdict.message)


@dataclass(frozen=True)
class Target:
    """The API server to mark the nodes on, and its credentials (never printed)."""

    url: str
    token: str = field(repr=False)
    ca: str | None = field(repr=False, default=None)


def target(spec: ClusterSpec, stack: str, spec_file: Path) -> Target:
    """The spec's API server with its token and CA: from the environment, else from the Pulumi
    config secrets the spec's ``kubernetes.token`` and ``ca_certificate`` name (the stack's,
    :func:`config_secret`). A CommandError (exit 2, before any check runs) names what is
    missing and the fix, never a value."""
    k8s = spec.kubernetes
    if k8s is None:
        raise CommandError(
            f"--mark-nodes: the spec's orchestrator is {spec.orchestrator!r}, so it names no "
            "Kubernetes API server; set orchestrator: kubernetes (or both) with a kubernetes "
            "section, or run the checks without --mark-nodes"
        )
    token = os.environ.get(TOKEN_ENV, "").strip()
    if not token and k8s.token is not None:
        token = config_secret(stack, spec_file, k8s.token.config, "kubernetes.token")
    if not token:
        raise CommandError(
            f"--mark-nodes: no API server token: set {TOKEN_ENV} to a bearer token allowed to "
            f"patch nodes and their status on {k8s.api_server} (and {CA_ENV} to its CA as "
            "PEM), or name one in the spec's kubernetes.token: {config: KEY}"
        )
    ca = os.environ.get(CA_ENV, "").strip() or None
    if ca is None and k8s.ca_certificate is not None:
        ca = config_secret(stack, spec_file, k8s.ca_certificate.config, "kubernetes.ca_certificate")
    if ca is not None and "-----BEGIN CERTIFICATE-----" not in ca:
        raise CommandError(
            f"--mark-nodes: the API server's CA ({CA_ENV} or kubernetes.ca_certificate) holds "
            "no PEM certificate; give the CA as PEM text (-----BEGIN CERTIFICATE----- ...), or "
            "leave both unset for the system's CAs"
        )
    return Target(k8s.api_server, token, ca)


#: ``pulumi config get`` takes a second or two; the bound is for a backend that hangs.
PULUMI_TIMEOUT = 120


def config_secret(stack: str, spec_file: Path, key: str, field: str) -> str:
    """The stack's Pulumi config value ``key`` (``pulumi config get``, which decrypts a
    secret; the value is kept, never printed), in the stack file's project (else this
    checkout's), with the Makefile's backend and passphrase where none is set
    (``fabric.state.pulumi_env``). A CommandError naming ``field``, the key and the fix."""
    import shutil
    import subprocess

    from fabric.state import REPO_ROOT, StateLayout, pulumi_env

    fix = (
        f"set {TOKEN_ENV} and {CA_ENV} instead, or run it through make (the project's backend), "
        "or set PULUMI_BACKEND_URL and PULUMI_CONFIG_PASSPHRASE[_FILE] and put pulumi on PATH"
    )
    why = f"--mark-nodes: cannot read {field}'s config value {key!r} of stack {stack}"
    env = pulumi_env(StateLayout(stack))
    pulumi = shutil.which("pulumi", path=(env or {}).get("PATH"))
    if env is None or pulumi is None:
        missing = "no Pulumi backend holds the stack" if env is None else "no pulumi on PATH"
        raise CommandError(f"{why}: {missing}; {fix}")
    project = spec_file.parent if (spec_file.parent / "Pulumi.yaml").is_file() else REPO_ROOT
    try:
        done = subprocess.run(
            [pulumi, "config", "get", key, "--stack", stack],
            cwd=project,
            env=env,
            capture_output=True,
            text=True,
            check=False,
            timeout=PULUMI_TIMEOUT,
        )
    except subprocess.TimeoutExpired:
        raise CommandError(f"{why}: pulumi did not answer in {PULUMI_TIMEOUT} s; {fix}") from None
    if done.returncode != 0:
        from fabric.handoff.secrets import pulumi_said

        raise CommandError(f"{why}: {pulumi_said(done.stderr)}; {fix}")
    return done.stdout.strip()


def suite_env(where: Target) -> dict[str, str]:
    """The token and CA where the check suite's ``kubernetes_labels`` family reads them, for
    the suite's process (``run_checks(env=...)``); the operator's own, when set, are kept."""
    env = {TOKEN_ENV: os.environ.get(TOKEN_ENV) or where.token}
    if where.ca:
        env[CA_ENV] = os.environ.get(CA_ENV) or where.ca
    return env


@contextmanager
def client_for(where: Target, timeout: float = CALL_TIMEOUT) -> Iterator[Client]:
    """A client for ``where``; its CA written to a 0600 file for the calls, removed on exit."""
    import tempfile

    from fabric.kube_client import Client

    ca_file = None
    try:
        if where.ca:
            fd, ca_file = tempfile.mkstemp(prefix="railyard-kube-ca-")
            with os.fdopen(fd, "w") as out:
                out.write(where.ca)
        yield Client(where.url, where.token, Path(ca_file) if ca_file else None, timeout=timeout)
    finally:
        if ca_file is not None:
            os.unlink(ca_file)


def mark(
    where: Target, results: list[CheckResult], hosts: list[str]
) -> tuple[list[Mark], str | None]:
    """Mark the covered ``hosts`` from ``results``: (what was done, the failed call or None)."""
    from fabric.kube_client import KubeError

    done: list[Mark] = []
    try:
        with client_for(where) as client:
            for item in mark_nodes(client, verdicts(results, hosts)):
                done.append(item)
    except KubeError as err:
        return done, str(err)
    return done, None


def report(where: Target, marks: list[Mark], error: str | None) -> dict[str, Any]:
    """The marks as the JSON result's ``kubernetes`` entry."""
    return {
        "api_server": where.url,
        "nodes": [m.doc() for m in marks],
        "error": error,
    }
