"""railyard-health under ``orchestrator: kubernetes`` (issue 43): the hand-off's configuration
(no Slurm, the API server's section naming the files roles/node_health writes), the role's
variables, and the program's actions: no ``scontrol`` without Slurm, and an API server that
cannot be reached is a harness error, never a drain. The taint itself on a real API server:
tests/integration/test_kubernetes_lab.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from fabric.handoff.health import KUBE_CA_FILE, KUBE_TOKEN_FILE, health_configs
from fabric.handoff.vars import role_vars_from_spec
from fabric.model.cluster import ClusterModel
from fabric.spec import load_spec, spec_from_mapping
from fabric.state import REPO_ROOT
from fabric.verify import health

EXAMPLE = REPO_ROOT / "examples/kubernetes-ib.yaml"
ROLE = REPO_ROOT / "roles/node_health"


def _example(**changes: Any) -> Any:
    doc = yaml.safe_load(EXAMPLE.read_text()) | changes
    return spec_from_mapping(doc)


def test_kubernetes_config_names_the_api_server_and_the_role_s_files() -> None:
    spec = load_spec(EXAMPLE)
    configs = health_configs(ClusterModel(spec))
    assert sorted(configs) == ["gpu01", "gpu02", "gpu03", "gpu04"]
    for config in configs.values():
        assert config["slurm"] is False
        assert config["kubernetes"] == {
            "api_server": "https://10.40.0.2:6443",
            "token_file": KUBE_TOKEN_FILE,
            "ca_file": KUBE_CA_FILE,
        }
    defaults = yaml.safe_load((ROLE / "defaults/main.yml").read_text())
    assert defaults["node_health_kube_token_file"] == KUBE_TOKEN_FILE
    assert defaults["node_health_kube_ca_file"] == KUBE_CA_FILE


def test_kubernetes_hand_off_sets_no_slurm_and_a_timer_at_the_health_interval() -> None:
    spec = load_spec(EXAMPLE)
    out = role_vars_from_spec(spec)
    assert out["railyard_orchestrator"] == "kubernetes"
    assert not [k for k in out if k.startswith("slurm_") and k not in _NOT_SLURM_CONF]
    assert out["node_health_timer_interval"] == spec.health.interval
    assert "kubernetes" in out["railyard_node_health"]["gpu01"]
    # no secret in group_vars: the token reaches the role as an extra variable only
    assert "node_health_kube_token" not in out


#: Keys role_vars_from_spec sets for every orchestrator (the job environment's prolog flags).
_NOT_SLURM_CONF = {"slurm_task_prolog", "slurm_prolog_epilog_dirs"}


def test_both_keeps_slurm_health_settings_and_adds_the_api_server() -> None:
    spec = _example(orchestrator="both", slurm={"controller": "sm1"})
    out = role_vars_from_spec(spec)
    assert out["railyard_orchestrator"] == "both"
    assert out["slurm_extra_config"]["HealthCheckProgram"] == "/usr/local/sbin/railyard-health"
    assert "node_health_timer_interval" not in out
    config = out["railyard_node_health"]["gpu01"]
    assert "slurm" not in config and config["kubernetes"]["token_file"] == KUBE_TOKEN_FILE


def test_slurm_only_configs_have_no_kubernetes_section() -> None:
    configs = health_configs(ClusterModel(load_spec(REPO_ROOT / "Pulumi.lab.yaml")))
    assert configs and not any("kubernetes" in c or "slurm" in c for c in configs.values())


def _config(tmp_path: Path, **extra: Any) -> Path:
    config = {"node": "kn1", "ports": [], "thresholds": {}, **extra}
    path = tmp_path / "health.json"
    path.write_text(json.dumps(config))
    return path


def _main(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, config: Path, failures: list[str]
) -> tuple[int, list[list[str]]]:
    calls: list[list[str]] = []

    def tool(argv: list[str], timeout: float = 0, env: object = None) -> tuple[int, str]:
        calls.append(list(argv))
        return 0, "State=IDLE Reason=none"

    monkeypatch.setattr(health, "run", tool)
    monkeypatch.setattr(health.signal, "alarm", lambda seconds: 0)
    monkeypatch.setattr(health.Checker, "check", lambda self: list(failures))
    code = health.main(["--json", "--config", str(config), "--state", str(tmp_path / "s.json")])
    return code, calls


def test_without_slurm_no_scontrol_runs_and_an_unreachable_api_server_is_a_harness_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A port on 127.0.0.1 nobody listens on: the verdict (healthy, then failing) is not
    marked; healthy + unmarked is exit 3 (harness error), failing stays exit 1; never a
    scontrol call, never a drain."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    token = tmp_path / "token"
    token.write_text("secret-token-value")
    kube = {"api_server": f"https://127.0.0.1:{port}", "token_file": str(token)}
    config = _config(tmp_path, slurm=False, kubernetes=kube)
    code, calls = _main(tmp_path, monkeypatch, config, [])
    out = json.loads(capsys.readouterr().out)
    assert code == 3 and calls == []
    assert out["action"].startswith("no slurm; kubernetes: not marked: URLError")
    assert out["harness_errors"] == [out["action"].removeprefix("no slurm; ")]
    code, calls = _main(tmp_path, monkeypatch, config, ["mlx5_0/1 Down (leaf01 p1)"])
    out = json.loads(capsys.readouterr().out)
    assert code == 1 and calls == []
    assert "secret-token-value" not in json.dumps(out)


def test_if_drained_without_slurm_is_a_normal_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    config = _config(tmp_path, slurm=False)
    calls: list[list[str]] = []
    monkeypatch.setattr(health, "run", lambda argv, timeout=0, env=None: calls.append(argv))
    monkeypatch.setattr(health.signal, "alarm", lambda seconds: 0)
    monkeypatch.setattr(health.Checker, "check", lambda self: [])
    code = health.main(["--if-drained", "--config", str(config), "--state", str(tmp_path / "s")])
    assert code == 0 and calls == []
    assert "0 failure(s), 0 harness error(s), no slurm" in capsys.readouterr().out
