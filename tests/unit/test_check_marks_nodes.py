"""``railyard check --mark-nodes`` (fabric.cli.kube_marks): the check suite's verdict per node
and its marks, where Kubernetes looks.

The verdicts come from real results: the stand-in check suite of ``test_verify_causes`` (the
lab's real ``CheckPlan``, the subjects the suite's conftest records, the real checks' failure
messages, a real harness error), run by pytest and read back from its JUnit. The marks go to a
small API server on loopback over HTTPS (a CA and certificate from the lab's own ``_pki``)
that keeps Node objects as the API server does for these calls: a list, a read, a merge patch
of the taints (only over the read's resourceVersion), a server-side apply of the status. The
same calls against a real kube-apiserver: tests/integration/test_kubernetes_lab.py.
"""

from __future__ import annotations

import json
import os
import ssl
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml
from test_verify_causes import _run

from fabric.cli import main
from fabric.cli.kube_marks import (
    HEALTHY,
    PREFIX,
    UNHEALTHY,
    hosts_of,
    verdicts,
)
from fabric.kube_client import CONDITION, TAINT_KEY
from fabric.verify.causes import key
from fabric.verify.results import CheckResult

SPECS = Path(__file__).parent / "specs"
TOKEN = "sEcReT-token-value-0123456789abcdefghijkl"
LAB_HOSTS = [*(f"gpu0{n}" for n in range(1, 9)), "sm1", "sm2", "ctl1"]
FOREIGN = {"key": "example.com/maintenance", "value": "disk", "effect": "NoExecute"}


# -- the verdict per node ----------------------------------------------------------------


def test_subjects_of_every_kind_name_their_hosts() -> None:
    """The subjects as the families record them (``fabric/verify/families``, the sweep)."""
    assert hosts_of("host:gpu03") == ({"gpu03"}, set())
    assert hosts_of("port:gpu03/mlx5_0/1") == ({"gpu03"}, set())
    assert hosts_of("counters:gpu03/mlx5_0/1") == ({"gpu03"}, set())
    assert hosts_of("link:leaf01/3-gpu03/mlx5_0/1") == ({"gpu03"}, set())
    assert hosts_of("link:gpu-03/mlx5_0/1-leaf-01/3") == ({"gpu-03"}, set())  # names with -
    assert hosts_of("link:leaf01/61-spine01/1") == (set(), set())  # switch to switch
    assert hosts_of("hop:gpu01/eth1-leaf1/swp1") == ({"gpu01"}, set())
    assert hosts_of("pair:gpu03->gpu08") == (set(), {"gpu03", "gpu08"})
    for fabric_wide in ("fabric", "switch:leaf01", "sm:switch:leaf01", "fabric:nccl"):
        assert hosts_of(fabric_wide) == (set(), set())


@pytest.fixture(scope="module")
def cable_down(tmp_path_factory: pytest.TempPathFactory) -> list[CheckResult]:
    """gpu03's cable down, and a harness error on the pair gpu01->gpu06 (ibsim gave no
    prompt; the ibtracert output unreadable): as the suite reports them."""
    return _run(
        tmp_path_factory.mktemp("cable"),
        {"cables_down": ["gpu03"], "harness_error": ["gpu01->gpu06"]},
    )


def test_a_cable_down_makes_its_host_unhealthy_and_no_other(
    cable_down: list[CheckResult],
) -> None:
    found = verdicts(cable_down, LAB_HOSTS)
    states = {host: v.state for host, v in found.items()}
    assert states["gpu03"] == "unhealthy"
    # gpu08 and gpu06 share a failed pair with gpu03: gpu03 failed its own checks, so the
    # pairs are its (the cable explains them), not theirs
    assert states["gpu08"] == "healthy"
    assert {key(r) for r in found["gpu03"].failed} == {
        key(r) for r in cable_down if r.failed and r.outcome == "failed"
    }
    assert not any(key(r).startswith("test_ibping") for r in found["gpu08"].failed)
    # a check that could not run never taints: gpu01 and gpu06 are left as they are
    assert states["gpu01"] == states["gpu06"] == "unjudged"
    assert [key(r) for r in found["gpu01"].errors] == [
        "test_ibping[gpu01->gpu06]",
        "test_ibtracert_declared_path[gpu01->gpu06]",
    ]
    assert {h for h, s in states.items() if s == "healthy"} == set(LAB_HOSTS) - {
        "gpu01",
        "gpu03",
        "gpu06",
        "ctl1",  # no check names the Slurm controller here: no verdict either way
    }
    assert states["ctl1"] == "unjudged" and not found["ctl1"].errors


def test_the_message_names_the_first_failed_checks(cable_down: list[CheckResult]) -> None:
    verdict = verdicts(cable_down, LAB_HOSTS)["gpu03"]
    first = verdict.failed[0]
    assert verdict.reason == UNHEALTHY
    assert verdict.message.startswith(f"{PREFIX} {key(first)}: {first.message.splitlines()[0]}")
    assert key(verdict.failed[1]) in verdict.message
    assert verdict.message.endswith(f"(+{len(verdict.failed) - 3} more)")
    healthy = verdicts(cable_down, LAB_HOSTS)["gpu05"]
    assert (healthy.reason, healthy.message) == (
        HEALTHY,
        f"{PREFIX} all {healthy.passed} checks of gpu05 passed",
    )


def test_a_failed_pair_with_no_other_failure_taints_both_ends() -> None:
    results = [
        CheckResult(name="test_ibping", param="a->b", outcome="failed", message="no reply",
                    subjects=["pair:a->b"]),
        CheckResult(name="test_port_state_active", param="a/mlx5_0/1", outcome="passed",
                    subjects=["port:a/mlx5_0/1"]),
        CheckResult(name="test_port_state_active", param="b/mlx5_0/1", outcome="passed",
                    subjects=["port:b/mlx5_0/1"]),
    ]  # fmt: skip
    found = verdicts(results, ["a", "b"])
    assert (found["a"].state, found["b"].state) == ("unhealthy", "unhealthy")
    # --limit a: b is not covered, never named
    assert set(verdicts(results, ["a"])) == {"a"}


def test_an_unreachable_node_is_unhealthy_and_its_peers_errors_leave_them_as_they_are(
    tmp_path: Path,
) -> None:
    results = _run(tmp_path, {"unreachable": ["gpu04"]})
    found = verdicts(results, LAB_HOSTS)
    assert found["gpu04"].state == "unhealthy"
    # the ibping servers on gpu04 could not start: gpu07's and sm1's pairs are errors
    assert found["gpu07"].state == found["sm1"].state == "unjudged"
    assert found["gpu05"].state == "healthy"


# -- the marks, on an API server on loopback ---------------------------------------------


class _Api(BaseHTTPRequestHandler):
    """Node objects as the API server keeps them for railyard's calls."""

    nodes: dict[str, dict[str, Any]] = {}
    seen: list[tuple[str, str]] = []
    refuse: set[str] = set()

    def _reply(self, code: int, doc: dict[str, Any]) -> None:
        data = json.dumps(doc).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _answer(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode()
        path = self.path.split("?", 1)[0]
        self.seen.append((self.command, path))
        if self.headers.get("Authorization") != f"Bearer {TOKEN}":
            return self._reply(401, {"kind": "Status", "message": "Unauthorized"})
        if path == "/api/v1/nodes" and self.command == "GET":
            return self._reply(200, {"items": list(self.nodes.values())})
        name, _, sub = path.removeprefix("/api/v1/nodes/").partition("/")
        node = self.nodes.get(name)
        if node is None:
            return self._reply(404, {"message": f'nodes "{name}" not found'})
        if self.command == "GET":
            return self._reply(200, node)
        if name in self.refuse:
            return self._reply(403, {"message": f'nodes "{name}" is forbidden'})
        patch = json.loads(body)
        meta = node["metadata"]
        if sub == "status":  # server-side apply: conditions merged by type
            kept = [
                c
                for c in node["status"].get("conditions", [])
                if c["type"] not in {n["type"] for n in patch["status"]["conditions"]}
            ]
            node["status"]["conditions"] = kept + patch["status"]["conditions"]
        else:  # merge patch of the taints, over the version read
            if patch["metadata"]["resourceVersion"] != meta["resourceVersion"]:
                return self._reply(409, {"message": "the object has been modified"})
            taints = patch["spec"]["taints"]
            node["spec"] = {"taints": taints} if taints else {}
        meta["resourceVersion"] = str(int(meta["resourceVersion"]) + 1)
        return self._reply(200, node)

    do_GET = do_PATCH = _answer

    def log_message(self, *_: object) -> None:
        pass


def _node(name: str, taints: list[dict[str, str]] | None = None) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "resourceVersion": "1"},
        "spec": {"taints": taints} if taints else {},
        "status": {"conditions": []},
    }


@pytest.fixture
def api(tmp_path: Path) -> Iterator[tuple[str, str]]:
    """(URL, CA as PEM) of the loopback API server, with a Node for each lab host."""
    from fabric.lab.kubeapi import _pki

    _pki(tmp_path, "127.0.0.1")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(tmp_path / "server.crt", tmp_path / "server.key")
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Api)
    httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    _Api.nodes = {name: _node(name) for name in LAB_HOSTS if name != "ctl1"}
    _Api.seen, _Api.refuse = [], set()
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"https://127.0.0.1:{httpd.server_address[1]}", (tmp_path / "ca.crt").read_text()
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture
def stack(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, api: tuple[str, str]
) -> tuple[str, Path]:
    """A stack ``t`` with the lab's hosts in its inventory, and its spec (orchestrator both) on
    the loopback API server; the token and CA in the environment."""
    state = tmp_path / "state"
    (state / "t").mkdir(parents=True)
    inventory = {"all": {"hosts": {h: {} for h in LAB_HOSTS}}}
    (state / "t" / "inventory.yml").write_text(yaml.safe_dump(inventory))
    monkeypatch.setenv("RAILYARD_STATE_DIR", str(state))
    monkeypatch.setenv("RAILYARD_KUBE_TOKEN", TOKEN)
    monkeypatch.setenv("RAILYARD_KUBE_CA", api[1])
    doc = yaml.safe_load((SPECS / "valid" / "kubernetes.yaml").read_text())
    doc["kubernetes"]["api_server"] = api[0]
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump(doc))
    return "t", spec


def _checks_return(
    monkeypatch: pytest.MonkeyPatch, results: list[CheckResult], tmp_path: Path
) -> None:
    """``run_checks`` returns ``results`` as a run that had them would (nothing runs)."""
    from fabric.verify.runner import RunOutcome

    def run(*_: Any, **__: Any) -> RunOutcome:
        return RunOutcome(
            rc=1 if any(r.failed for r in results) else 0,
            results=results,
            not_generated={},
            junit=str(tmp_path / "checks.xml"),
            report_dir=str(tmp_path),
        )

    monkeypatch.setattr("fabric.verify.runner.run_checks", run)


def _check(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["check", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def _taints(name: str) -> list[dict[str, str]]:
    return _Api.nodes[name]["spec"].get("taints") or []


def _condition(name: str) -> dict[str, str]:
    return next(c for c in _Api.nodes[name]["status"]["conditions"] if c["type"] == CONDITION)


def test_check_taints_the_failed_node_and_lifts_the_others(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    stack: tuple[str, Path],
    cable_down: list[CheckResult],
) -> None:
    name, spec = stack
    _Api.nodes["gpu03"]["spec"] = {"taints": [FOREIGN]}
    _Api.nodes["gpu05"]["spec"] = {
        "taints": [FOREIGN, {"key": TAINT_KEY, "value": UNHEALTHY, "effect": "NoSchedule"}]
    }
    _checks_return(monkeypatch, cable_down, tmp_path)
    code, out, err = _check(capsys, "--stack", name, "--spec", str(spec), "--mark-nodes", "--json")
    assert (code, err) == (1, "")
    doc = json.loads(out)
    marks = {m["node"]: (m["action"], m["detail"]) for m in doc["kubernetes"]["nodes"]}
    assert doc["kubernetes"]["error"] is None
    assert marks["gpu03"][0] == "tainted"
    assert marks["gpu05"][0] == "untainted"
    assert marks["gpu08"][0] == "unchanged"  # healthy, as it was
    assert marks["gpu01"][0] == "not marked" and "could not run" in marks["gpu01"][1]
    assert marks["ctl1"] == ("not marked", "no check judged it")
    assert {"key": TAINT_KEY, "value": UNHEALTHY, "effect": "NoSchedule"} in _taints("gpu03")
    assert FOREIGN in _taints("gpu03") and _taints("gpu05") == [FOREIGN]
    condition = _condition("gpu03")
    assert (condition["status"], condition["reason"]) == ("False", UNHEALTHY)
    assert condition["message"] == marks["gpu03"][1]
    assert condition["message"].startswith(f"{PREFIX} test_")
    assert _condition("gpu05")["status"] == "True"
    assert _Api.nodes["gpu01"]["status"]["conditions"] == []
    assert not [c for c in _Api.seen if c[1].startswith("/api/v1/nodes/gpu01")]
    assert TOKEN not in out

    # the same verdict again: nothing tainted or lifted, the text names each node's mark
    code, out, err = _check(capsys, "--stack", name, "--spec", str(spec), "--mark-nodes")
    assert (code, err) == (1, "")
    assert "kubernetes: gpu03 unchanged: railyard check: test_" in out
    assert "kubernetes: gpu05 unchanged: railyard check: all " in out
    assert "kubernetes: gpu01 not marked: 2 check(s) could not run" in out
    assert TOKEN not in out


def test_check_marks_only_the_limited_hosts(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    stack: tuple[str, Path],
    cable_down: list[CheckResult],
) -> None:
    name, spec = stack
    _checks_return(monkeypatch, cable_down, tmp_path)
    argv = ["--stack", name, "--spec", str(spec), "--limit", "gpu03,gpu08", "--mark-nodes"]
    code, out, err = _check(capsys, *argv, "--json")
    assert code == 1, err
    marks = [(m["node"], m["action"]) for m in json.loads(out)["kubernetes"]["nodes"]]
    assert marks == [("gpu03", "tainted"), ("gpu08", "untainted")] or marks == [
        ("gpu03", "tainted"),
        ("gpu08", "unchanged"),
    ]
    touched = {p.split("/")[4] for m, p in _Api.seen if m == "PATCH"}
    assert touched == {"gpu03", "gpu08"}


def test_an_api_error_is_exit_3_naming_the_call_after_the_results(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    stack: tuple[str, Path],
    cable_down: list[CheckResult],
) -> None:
    name, spec = stack
    _checks_return(monkeypatch, cable_down, tmp_path)
    _Api.refuse = {"gpu04"}  # RBAC that may not patch this node
    code, out, err = _check(capsys, "--stack", name, "--spec", str(spec), "--mark-nodes")
    assert code == 3
    assert "kubernetes: gpu03 tainted" in out and "gpu04" not in out.split("reports:")[1]
    assert err.startswith("railyard check: error: --mark-nodes: PATCH /api/v1/nodes/gpu04/status: ")
    assert "HTTP 403" in err and err.count("\n") == 1
    # --json: one document, the results, the marks made and the error
    code, out, err = _check(capsys, "--stack", name, "--spec", str(spec), "--mark-nodes", "--json")
    doc = json.loads(out)
    assert (code, err) == (3, "")
    assert doc["kubernetes"]["error"].startswith("PATCH /api/v1/nodes/gpu04/status: HTTP 403")
    assert doc["results"] and [m["node"] for m in doc["kubernetes"]["nodes"]][-1] == "gpu03"
    # a wrong token: the first call, the list, refused; never the token in the output
    monkeypatch.setenv("RAILYARD_KUBE_TOKEN", "wrong-" + TOKEN[::-1])
    code, out, err = _check(capsys, "--stack", name, "--spec", str(spec), "--mark-nodes")
    assert code == 3 and "GET /api/v1/nodes: HTTP 401" in err
    assert TOKEN[::-1] not in out + err


# -- misuse: exit 2 before any check runs ------------------------------------------------


@pytest.fixture
def no_checks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        "fabric.verify.runner.run_checks", lambda *a, **k: pytest.fail("checks ran")
    )


def test_mark_nodes_with_plan_is_2(capsys: pytest.CaptureFixture[str], no_checks: None) -> None:
    code, out, err = _check(capsys, "--plan", "--mark-nodes")
    assert (code, out) == (2, "")
    assert err == (
        "railyard check: error: --mark-nodes marks the nodes from a check run, and --plan runs "
        "no check; pass one of them\n"
    )


def test_mark_nodes_on_a_slurm_cluster_is_2(
    capsys: pytest.CaptureFixture[str], stack: tuple[str, Path], no_checks: None
) -> None:
    name, _ = stack
    slurm = SPECS / "valid" / "lab.yaml"
    code, out, err = _check(capsys, "--stack", name, "--spec", str(slurm), "--mark-nodes")
    assert (code, out) == (2, "")
    assert "orchestrator is 'slurm', so it names no Kubernetes API server" in err
    assert err.count("\n") == 1


def test_mark_nodes_without_a_token_is_2(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    stack: tuple[str, Path],
    no_checks: None,
) -> None:
    """No token in the environment: the spec's config secret, from a stack no backend holds
    here (exit 2 naming the field and key); a spec naming none (a client certificate): exit 2
    naming the variable."""
    name, spec = stack
    monkeypatch.delenv("RAILYARD_KUBE_TOKEN")
    monkeypatch.delenv("PULUMI_BACKEND_URL", raising=False)
    code, out, err = _check(capsys, "--stack", name, "--spec", str(spec), "--mark-nodes", "--json")
    assert (code, err) == (2, "")
    assert json.loads(out)["error"].startswith(
        "--mark-nodes: cannot read kubernetes.token's config value 'kubernetesToken' of stack "
        "t: no Pulumi backend holds the stack; set RAILYARD_KUBE_TOKEN and RAILYARD_KUBE_CA"
    )
    doc = yaml.safe_load(spec.read_text())
    del doc["kubernetes"]["token"]
    doc["kubernetes"]["client_certificate"] = {"config": "kubernetesCert"}
    doc["kubernetes"]["client_key"] = {"config": "kubernetesKey"}
    spec.write_text(yaml.safe_dump(doc))
    code, out, err = _check(capsys, "--stack", name, "--spec", str(spec), "--mark-nodes")
    assert (code, out) == (2, "")
    assert "--mark-nodes: no API server token: set RAILYARD_KUBE_TOKEN" in err


def test_mark_nodes_with_a_ca_that_is_no_pem_is_2_without_showing_it(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    stack: tuple[str, Path],
    no_checks: None,
) -> None:
    name, spec = stack
    monkeypatch.setenv("RAILYARD_KUBE_CA", "/etc/kubernetes/pki/ca.crt")
    code, out, err = _check(capsys, "--stack", name, "--spec", str(spec), "--mark-nodes")
    assert (code, out) == (2, "")
    assert "the API server's CA (RAILYARD_KUBE_CA or kubernetes.ca_certificate) holds no PEM" in err
    assert "/etc/kubernetes" not in err


def test_without_mark_nodes_nothing_is_marked(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    stack: tuple[str, Path],
    cable_down: list[CheckResult],
) -> None:
    name, spec = stack
    _checks_return(monkeypatch, cable_down, tmp_path)
    code, out, _ = _check(capsys, "--stack", name, "--spec", str(spec), "--json")
    assert code == 1 and "kubernetes" not in json.loads(out)
    assert _Api.seen == []


def test_the_suite_gets_the_credentials_in_its_own_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The token and CA reach the check suite's process through ``run_checks(env=...)``: this
    process's environment is left as it was, and an operator's own values win."""
    from fabric.cli import kube_marks

    monkeypatch.delenv(kube_marks.TOKEN_ENV, raising=False)
    monkeypatch.delenv(kube_marks.CA_ENV, raising=False)
    where = kube_marks.Target("https://198.18.0.1:6443", "from-config", "/tmp/ca.pem")
    assert kube_marks.suite_env(where) == {
        kube_marks.TOKEN_ENV: "from-config",
        kube_marks.CA_ENV: "/tmp/ca.pem",
    }
    assert kube_marks.TOKEN_ENV not in os.environ and kube_marks.CA_ENV not in os.environ
    monkeypatch.setenv(kube_marks.TOKEN_ENV, "operator's")
    assert (
        kube_marks.suite_env(kube_marks.Target("https://198.18.0.1:6443", "x"))[
            kube_marks.TOKEN_ENV
        ]
        == "operator's"
    )
