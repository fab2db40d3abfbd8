"""No secret value reaches any output: marked secrets go through every error path, and every
output, log and artifact is searched for the mark.

Paths: the spec (``validate`` text and ``--json``; ``run``, ``topology``, ``check`` given the
same spec), a stack file holding a secret in plain text, the Redfish client and the bare-metal
provisioner against a real HTTP server on 127.0.0.1 that fails in every way a BMC can (echoing
the credentials back), SSH (paramiko) with a marked key, and a real ``python -m fabric run``
(ansible-runner) of a local playbook whose no_log task fails holding the munge key. The roles
and playbooks are read too: every task that uses a secret variable has ``no_log: true``.
"""

from __future__ import annotations

import base64
import copy
import json
import os
import shutil
import subprocess
import sys
import threading
import traceback
import uuid
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import paramiko
import pytest
import yaml
from taskfiles import TASK_FILES, tasks_in

from fabric.cli import main
from fabric.lab.ssh import SshError, connect
from fabric.redfish import RedfishClient, RedfishError
from fabric.spec import SpecError, load_spec, spec_from_mapping
from fabric.state import ARTIFACTS_ROOT, REPO_ROOT
from fabric.targets.baremetal.dynamic_redfish import provision

SPECS = Path(__file__).parent / "specs" / "valid"
MARK = f"S3CRET-MARK-{uuid.uuid4()}"
#: Tasks using a variable whose name contains one of these handle a secret.
SECRET_VARS = ("munge_key", "bmc_password", "password")


def base(name: str) -> dict[str, Any]:
    return yaml.safe_load((SPECS / f"{name}.yaml").read_text())


def leaks(*texts: str) -> list[str]:
    """The texts that hold the mark (or its Basic-auth encoding), shortened for the report."""
    token = base64.b64encode(f"admin:{MARK}".encode()).decode()
    return [t[:300] for t in texts if MARK in t or token in t]


def files_with_mark(*roots: Path) -> list[str]:
    """Every file under ``roots`` whose bytes hold the mark."""
    found = []
    for root in roots:
        for path in [root] if root.is_file() else root.rglob("*"):
            if path.is_file() and MARK.encode() in path.read_bytes():
                found.append(str(path))
    return found


# --- the spec --------------------------------------------------------------------------------


def _with(data: dict[str, Any], edit: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    data = copy.deepcopy(data)
    edit(data)
    return data


#: Each way an operator can write a secret where it does not belong (base roce: bare metal).
SPEC_CASES: dict[str, Callable[[dict[str, Any]], None]] = {
    "bmc-password-plain": lambda d: d["bmc"].update(password=MARK),
    "bmc-password-list": lambda d: d["bmc"].update(password=[MARK]),
    "bmc-password-as-key": lambda d: d["bmc"].update(password={MARK: "x"}),
    "bmc-password-beside-config": lambda d: d["bmc"].update(
        password={"config": "bmcPassword", "value": MARK}
    ),
    "bmc-password-config-wrong-type": lambda d: d["bmc"].update(password={"config": [MARK]}),
    "munge-key-plain": lambda d: d["slurm"].update(munge_key=MARK),
    "munge-key-beside-config": lambda d: d["slurm"].update(
        munge_key={"config": "mungeKey", "key": MARK}
    ),
    "bmc-url-credentials": lambda d: d["bmc"]["endpoints"].update(
        gpu2={"url": f"https://admin:{MARK}@10.11.0.12"}
    ),
    "bmc-url-credentials-bad-scheme": lambda d: d["bmc"]["endpoints"].update(
        gpu2={"url": f"ftp://admin:{MARK}@10.11.0.12"}
    ),
}


@pytest.mark.parametrize("case", SPEC_CASES, ids=list(SPEC_CASES))
def test_spec_problem_never_shows_the_secret(case: str) -> None:
    with pytest.raises(SpecError) as caught:
        spec_from_mapping(_with(base("roce"), SPEC_CASES[case]))
    problems = caught.value.problems
    assert problems, "refused without a problem"
    assert leaks(*shown(caught.value), *(p.path for p in problems)) == []


def test_plaintext_bmc_password_says_how_to_do_it_right() -> None:
    with pytest.raises(SpecError) as caught:
        spec_from_mapping(_with(base("roce"), SPEC_CASES["bmc-password-plain"]))
    (problem,) = caught.value.problems
    assert problem.path == "bmc.password"
    assert "{config: bmcPassword}" in problem.message
    assert "pulumi config set --secret bmcPassword" in problem.message


@pytest.fixture(scope="module")
def marked_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A spec holding every marked secret at once, and a stack file whose config holds the
    BMC password in plain text (its spec otherwise valid)."""
    tmp = tmp_path_factory.mktemp("marked")
    spec = base("roce")
    for name in ("bmc-password-plain", "munge-key-plain", "bmc-url-credentials"):
        spec = _with(spec, SPEC_CASES[name])
    spec_file = tmp / "spec.yaml"
    spec_file.write_text(yaml.safe_dump(spec))
    stack = {"config": {"railyard:bmcPassword": MARK, "railyard:cluster": base("roce")}}
    stack_file = tmp / "Pulumi.marked.yaml"
    stack_file.write_text(yaml.safe_dump(stack))
    broken = tmp / "broken.yaml"  # a YAML error on the line holding the secret
    broken.write_text(
        spec_file.read_text().replace("password: " + MARK, f'password: "{MARK}\n  x: [')
    )
    assert MARK in broken.read_text()
    return {"spec": spec_file, "stack": stack_file, "broken-yaml": broken}


def fabric_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "fabric", *args],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
        cwd=REPO_ROOT,
        env={**os.environ, **(env or {})},
    )


COMMANDS: dict[str, list[str]] = {
    "validate": ["validate", "--spec", "{file}"],
    "validate-json": ["validate", "--json", "--spec", "{file}"],
    "topology": ["topology", "--spec", "{file}"],
    "check-plan": ["check", "--plan", "--spec", "{file}"],
    "check-json": ["check", "--stack", "marked", "--spec", "{file}", "--json"],
    "run": ["run", "playbooks/site.yml", "--stack", "marked", "--spec", "{file}"],
    "run-json": ["run", "site.yml", "--stack", "marked", "--spec", "{file}", "--json"],
}


@pytest.mark.parametrize("kind", ["spec", "stack", "broken-yaml"])
@pytest.mark.parametrize("command", COMMANDS, ids=list(COMMANDS))
def test_command_given_marked_spec_never_prints_it(
    marked_files: dict[str, Path],
    command: str,
    kind: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Each command as ``python -m fabric`` runs it (its ``main``), in this process."""
    monkeypatch.setenv("RAILYARD_STATE_DIR", str(tmp_path / "state"))
    code = main([a.format(file=marked_files[kind]) for a in COMMANDS[command]])
    out, err = capsys.readouterr()
    assert code in (1, 2), (code, err[-500:])
    assert out or err, "refused without a word"
    assert leaks(out, err) == []
    assert files_with_mark(tmp_path) == []


def test_validate_json_names_every_secret_field(marked_files: dict[str, Path]) -> None:
    done = fabric_cli("validate", "--json", "--spec", str(marked_files["spec"]))
    paths = {p["path"] for p in json.loads(done.stdout)["problems"]}
    assert {"bmc.password", "slurm.munge_key", "bmc.endpoints.gpu2.url"} <= paths


@pytest.mark.parametrize("kind", ["spec", "stack", "broken-yaml"])
def test_spec_error_traceback_never_shows_the_secret(
    marked_files: dict[str, Path], kind: str
) -> None:
    """What ``pulumi up`` prints when the spec is refused: the whole traceback, causes too."""
    with pytest.raises(SpecError) as caught:
        load_spec(marked_files[kind])
    assert leaks(*shown(caught.value)) == []


def test_stack_with_plaintext_secret_is_refused(marked_files: dict[str, Path]) -> None:
    with pytest.raises(SpecError) as caught:
        load_spec(marked_files["stack"])
    assert [p.path for p in caught.value.problems] == ["config railyard:bmcPassword"]
    assert leaks(str(caught.value)) == []


# --- Redfish ---------------------------------------------------------------------------------


class FailingBmc(BaseHTTPRequestHandler):
    """A BMC that fails each request as the path asks, echoing the credentials it was sent."""

    def log_message(self, *_: Any) -> None:  # keep the test output quiet
        return

    def _answer(self) -> None:
        auth = self.headers.get("Authorization", "")
        decoded = base64.b64decode(auth.split()[-1]).decode() if auth else ""
        echo = f"Authorization: {auth} user:password {decoded}"
        status, body, kind = {
            "/redfish/v1/text500/": (500, echo, "text/plain"),
            "/redfish/v1/json500/": (
                500,
                json.dumps({"error": {"code": "Base.1.0.GeneralError", "message": echo}}),
                "application/json",
            ),
            "/redfish/v1/auth/": (401, echo, "text/plain"),
            "/redfish/v1/notjson/": (200, echo, "text/html"),
        }.get(
            self.path,
            (
                200,
                json.dumps(
                    {
                        "Systems": {"@odata.id": "/redfish/v1/Systems"},
                        "Members": [{"@odata.id": f"/redfish/v1/Systems/{decoded}"}],
                    }
                ),
                "application/json",
            ),
        )
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PATCH = _answer


@pytest.fixture(scope="module")
def bmc() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), FailingBmc)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def shown(error: BaseException) -> list[str]:
    """Everything an error can print: its text, repr and whole traceback (chained ones too)."""
    return [str(error), repr(error), "".join(traceback.format_exception(error))]


@pytest.mark.parametrize("path", ["text500", "json500", "auth", "notjson"])
def test_redfish_error_never_shows_the_password(bmc: str, path: str) -> None:
    with RedfishClient(bmc, "admin", MARK, timeout=5) as client, pytest.raises(RedfishError) as e:
        client.get(f"/redfish/v1/{path}/")
    assert leaks(*shown(e.value)) == []
    assert "127.0.0.1" in str(e.value)


def test_redfish_url_credentials_echoed_back_are_scrubbed(bmc: str) -> None:
    """Credentials in the URL (which the spec refuses) are sent by requests, echoed back by
    the BMC, and still not shown."""
    url = bmc.replace("http://", f"http://admin:{MARK}@")
    with RedfishClient(url, timeout=5) as client, pytest.raises(RedfishError) as caught:
        client.get("/redfish/v1/text500/")
    assert "Authorization: Basic ***" in str(caught.value)
    assert leaks(*shown(caught.value)) == []


def test_redfish_answer_echoing_the_password_is_scrubbed(bmc: str) -> None:
    """The service lists a system named like the credentials; the error lists it scrubbed."""
    with RedfishClient(bmc, "admin", MARK, timeout=5) as client, pytest.raises(RedfishError) as e:
        client.system_path("other")
    assert "***" in str(e.value)
    assert leaks(*shown(e.value)) == []


def test_redfish_unreachable_url_with_credentials_is_not_shown() -> None:
    url = f"http://admin:{MARK}@127.0.0.1:{closed_port()}"
    with RedfishClient(url, timeout=2) as client:
        assert leaks(repr(client)) == []
        with pytest.raises(RedfishError) as caught:
            client.service_root()
    assert "BMC unreachable" in str(caught.value)
    assert leaks(*shown(caught.value)) == []


def test_provisioner_error_never_shows_the_password(bmc: str) -> None:
    props = {
        "node": "gpu01",
        "url": bmc + "/redfish/v1/json500",
        "username": "admin",
        "password": MARK,
        "verify_tls": False,
        "system_id": "missing",
        "boot_target": "Pxe",
        "power_timeout": 1,
        "address": "127.0.0.1",
        "ssh_port": closed_port(),
        "ssh_timeout": 1,
    }
    with pytest.raises(RedfishError) as caught:
        provision(props)
    assert str(caught.value).startswith("node gpu01: ")
    assert leaks(*shown(caught.value)) == []


# --- SSH -------------------------------------------------------------------------------------


def test_ssh_error_never_shows_the_private_key() -> None:
    key = f"-----BEGIN OPENSSH PRIVATE KEY-----\n{MARK}\n-----END OPENSSH PRIVATE KEY-----\n"
    with pytest.raises(SshError) as caught:
        connect(
            "127.0.0.1",
            user="root",
            private_key=key,
            host_keys=paramiko.HostKeys(),
            timeout=2,
        )
    assert str(caught.value).startswith("ssh root@127.0.0.1: ")
    assert leaks(*shown(caught.value)) == []


# --- Ansible ---------------------------------------------------------------------------------

FAILING_PLAY = """\
- name: Use the munge key and fail
  hosts: all
  gather_facts: false
  tasks:
    - name: Hand the key to a command that fails
      ansible.builtin.command:
        argv: [test, -z, "{{ slurm_munge_key }}"]
      changed_when: false
      no_log: "{{ not (reveal | default(false) | bool) }}"
"""


def test_failed_run_with_munge_key_leaves_no_trace(tmp_path: Path) -> None:
    """``python -m fabric run`` with the key from the stack (RAILYARD_MUNGE_KEY, as pulumi up
    passes it): the no_log task fails; stdout, stderr, the state dir (group_vars, secrets
    file) and ansible-runner's kept artifacts hold no trace of the key."""
    stack = f"leak-{uuid.uuid4().hex[:8]}"
    state = tmp_path / "state"
    (state / stack).mkdir(parents=True)
    (state / stack / "inventory.yml").write_text(
        "all:\n  hosts:\n    a: {}\n  vars:\n    ansible_connection: local\n"
        '    ansible_python_interpreter: "{{ ansible_playbook_python }}"\n'
        f"    out: {tmp_path / 'out'}\n"
    )
    (tmp_path / "out").mkdir()
    book = tmp_path / "book.yml"
    book.write_text(FAILING_PLAY)
    spec = _with(base("lab"), lambda d: d["slurm"].update(munge_key={"config": "mungeKey"}))
    spec_file = tmp_path / "spec.yaml"
    spec_file.write_text(yaml.safe_dump(spec))
    artifacts = ARTIFACTS_ROOT / stack
    env = {"RAILYARD_STATE_DIR": str(state), "RAILYARD_MUNGE_KEY": MARK}
    try:
        # The control: without no_log the key is in the run's output and artifacts, so the
        # search below would find it.
        shown_run = fabric_cli(
            "run",
            str(book),
            "--stack",
            stack,
            "--spec",
            str(spec_file),
            "-e",
            "reveal=true",
            env=env,
        )
        assert shown_run.returncode == 1, shown_run.stderr[-800:]
        assert files_with_mark(artifacts), "the control run's artifacts hold no key"
        shutil.rmtree(artifacts)
        result = tmp_path / "result.json"
        done = fabric_cli(
            "run",
            str(book),
            "--stack",
            stack,
            "--spec",
            str(spec_file),
            "--result-json",
            str(result),
            env=env,
        )
        assert done.returncode == 1, done.stderr[-800:]
        assert "Hand the key to a command that fails" in done.stdout + done.stderr
        assert json.loads(result.read_text())["ok"] is False
        assert leaks(done.stdout, done.stderr) == []
        kept = [p for p in artifacts.rglob("*") if p.is_file()]
        assert any(p.name == "stdout" for p in kept), kept
        assert (state / stack / "group_vars" / "all.yml").is_file()
        assert files_with_mark(tmp_path, artifacts) == []
    finally:
        shutil.rmtree(artifacts, ignore_errors=True)


def _handles_secret(task: dict[str, Any]) -> bool:
    """Whether a task's arguments carry a secret (its name and ``when`` show no value); a task
    that only makes the key's directory does not."""
    body = {k: v for k, v in task.items() if k not in ("when", "name", "no_log")}
    folder = body.get("ansible.builtin.file", {})
    if isinstance(folder, dict) and folder.get("state") == "directory":
        return False
    text = json.dumps(body, default=str)
    return any(name in text for name in SECRET_VARS)


def test_every_task_handling_a_secret_has_no_log() -> None:
    """A task whose arguments use a secret variable (the munge key, a BMC password) sets
    ``no_log: true``."""
    handling = [
        (path, task)
        for path in TASK_FILES
        for task in tasks_in(yaml.safe_load(path.read_text()))
        if _handles_secret(task)
    ]
    assert len(handling) >= 3, "no task handling a secret found: the audit reads nothing"
    missing = [
        f"{p.relative_to(REPO_ROOT)}: {t['name']}"
        for p, t in handling
        if t.get("no_log") is not True
    ]
    assert missing == []
